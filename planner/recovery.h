/* recovery.h — automatic recovery of a host the health monitor isolated (pure logic).
 *
 * With the pool's monitor.auto_recover, a monitor_isolated host gets a recovery record
 * (db/recovery.h) that goes drain → diagnostics → gate → ready, one step at a time, each
 * job a durable job of the existing kinds, stopping at the first failure. The driver
 * (service/recovery.c) reads the facts of a running recovery and asks plan_recovery_next()
 * what to do; it applies that and asks again until the answer is to wait or the recovery
 * has ended.
 *
 * What ends a recovery:
 *   cancelled  an operator (or the idle policy) acted on the host after it began: drain,
 *              resume, release, stop, provision, gate or diagnostics (audited), a job of
 *              the host that is not the recovery's, or the step's job cancelled. The host
 *              stays where that action leaves it.
 *   failed     a step did not pass: the diagnostics or gate verdict is not accept, the
 *              step's job failed, the host was quarantined again (the monitor, a key
 *              mismatch, a diagnostics or gate isolate) or left the states the step
 *              expects. A host that is draining, drained, investigating or unreachable
 *              (the monitor lost it meanwhile) goes back to quarantine (recovery_failed: hold set,
 * accepted gate cleared); one already quarantined stays so. A failed recovery is never retried:
 * only a new isolation (after a release and a gate) starts another. succeeded  the gate accepted
 * and the host is ready with that run as its accepted gate.
 *
 * A host key mismatch is never recovered: recovery_started lifts only the hold the monitor
 * set (hold_is_ours: the hold's time is the isolation's); a hold set again since then
 * fails the recovery. */
#ifndef GPUFLEET_PLAN_RECOVERY_H
#define GPUFLEET_PLAN_RECOVERY_H

#include <stddef.h>

enum plan_rec_step { PLAN_REC_DRAIN, PLAN_REC_DIAGNOSTICS, PLAN_REC_GATE, PLAN_REC__STEPS };

/* "drain", "diagnostics", "gate"; -1 for an unknown name. */
extern const char *const plan_rec_step_names[PLAN_REC__STEPS];
int plan_rec_step_parse(const char *name);

/* What the driver knows of one running recovery, read in its transaction. */
struct plan_rec_facts {
    enum plan_rec_step step;
    int started;                /* recovery_started was applied (the drain began) */
    const char *host_state;     /* as stored */
    int held;                   /* the quarantine hold is set */
    int hold_is_ours;           /* ... and is the one the monitor set at the isolation */
    const char *hold_reason;    /* hosts.quarantine_reason, or NULL */
    const char *intervention;   /* "host.stop by alice", or NULL */
    const char *foreign_job;    /* "stop job <id> queued by alice", or NULL */
    int busy;                   /* the host has a queued or running job */
    const char *job_state;      /* the step's job: NULL before it is queued */
    const char *job_error;      /* its error class and message, or NULL */
    const char *verdict;        /* the run the step's job recorded: accept, isolate,
                                   investigate, or NULL */
    const char *verdict_reason; /* that run's reason (which checks decided), or NULL */
    int gate_is_run;            /* the host's accepted gate is the gate step's run */
};

enum plan_rec_action {
    PLAN_REC_WAIT,    /* nothing to do now */
    PLAN_REC_START,   /* apply recovery_started (quarantined → draining, hold lifted) */
    PLAN_REC_DRAINED, /* apply drained_when_idle (draining → drained) */
    PLAN_REC_QUEUE,   /* queue the step's job (diagnostics or gate) */
    PLAN_REC_ADVANCE, /* the step passed: go to the next one */
    PLAN_REC_SUCCEED, /* the host is ready again */
    PLAN_REC_FAIL,    /* stop here: why; requarantine says whether to apply recovery_failed */
    PLAN_REC_CANCEL,  /* someone else acted: why */
};

struct plan_rec_decision {
    enum plan_rec_action action;
    int requarantine;
    char why[400];
};

void plan_recovery_next(const struct plan_rec_facts *f, struct plan_rec_decision *d);

/* The job kind a step queues ("diagnostics", "gate"), NULL for the drain. */
const char *plan_rec_step_job(enum plan_rec_step step);
/* The action's name, for logs. */
const char *plan_rec_action_name(enum plan_rec_action a);

#endif
