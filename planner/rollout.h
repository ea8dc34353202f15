/* rollout.h — stack rollouts in waves (pure logic; docs/rollouts.md §2).
 *
 * A rollout (db/rollouts.h) moves the pool's hosts in scope to a new stack, wave by wave
 * (the canary wave first), never more than max_unavailable_hosts of them out of service
 * at once. The driver (service/rollout.c) locks the rollout, reads its facts (the row and
 * every host's, from durable rows: the unavailable count cannot drift across a kill -9),
 * asks plan_rollout_next() for one decision, applies it, and asks again until the answer
 * is to wait.
 *
 * A host's forward sequence (step):
 *   pending → draining      drain (ready → draining), audited by rollout:<id>
 *           → provisioning  once idle: drained_when_idle, then a provision job (target)
 *           → gating        the host is provisioned: drain again (provisioned → draining)
 *                           and a gate job; gated while draining, an accepted gate leaves
 *                           it drained (never ready before the comparison)
 *           → comparing     the gate accepted, the host drained with that run as its gate
 *                           (only with min_baseline_ratio; else straight to resuming)
 *           → resuming      the comparison passed (plan_rollout_judge)
 *           → done          resume (drained → ready)
 * skipped: a pending host that is not ready (or already on the target) when its turn
 * comes. A wave whose hosts are all done (or skipped) soaks; a done host the monitor
 * isolated since it finished fails the rollout; after the soak the next wave starts (the
 * canary's soak may pause the rollout, once).
 *
 * Any failure (a job failed, a verdict not accept, the comparison, an isolation, a host
 * changed by someone else: an audited action on it, another's job, a state the step does
 * not expect) → rolling_back: the failing host and the hosts in flight become step failed,
 * every touched host gets rollback_step pending (the untouched: not_needed), and each goes
 * back to its from stack: draining → provisioning → gating → resuming → done (a host
 * never provisioned: draining → resuming → done). A host already out of service starts
 * at once; a ready one only while the unavailable count is under the limit. A failing
 * rollback step leaves that host where it is (rollback_step failed); the rollout ends
 * failed when any did, rolled_back otherwise. */
#ifndef GPUFLEET_PLAN_ROLLOUT_H
#define GPUFLEET_PLAN_ROLLOUT_H

#include <stddef.h>

enum plan_ro_state { PLAN_RO_RUNNING, PLAN_RO_PAUSED, PLAN_RO_ROLLING_BACK, PLAN_RO__STATES };

enum plan_ro_step {
    PLAN_STEP_PENDING,
    PLAN_STEP_DRAINING,
    PLAN_STEP_PROVISIONING,
    PLAN_STEP_GATING,
    PLAN_STEP_COMPARING,
    PLAN_STEP_RESUMING,
    PLAN_STEP_DONE,
    PLAN_STEP_FAILED,
    PLAN_STEP_SKIPPED,
    PLAN_STEP_NOT_NEEDED, /* rollback_step only */
    PLAN_STEP_NONE,       /* rollback_step NULL: going forward */
    PLAN_STEP__COUNT
};

/* "pending" …; -1 when unknown. NULL parses as PLAN_STEP_NONE. */
extern const char *const plan_ro_step_names[PLAN_STEP__COUNT];
int plan_ro_step_parse(const char *name);
int plan_ro_state_parse(const char *name);

/* One host of the rollout, as read in the locked transaction. */
struct plan_ro_host {
    int wave;
    enum plan_ro_step step, rollback_step;
    const char *host_state; /* hosts.state, NULL when the host is gone */
    int held;               /* the quarantine hold is set */
    const char *hold_reason;
    int busy;                 /* the host has a queued or running job */
    const char *foreign_job;  /* an active job someone else queued since it started */
    const char *intervention; /* an audited act on it by someone else since it started */
    const char *isolation;    /* a monitor isolation since it finished (its reason) */
    int on_target;            /* its current stack is the target stack */
    int has_from;             /* it had a stack before (from_stack_id) */
    int provisioned;          /* a forward provision job was queued for it */
    int gate_ok;              /* its accepted gate is for its current stack */
    /* the job of the current step (forward or rollback; provision or gate), NULL: none */
    const char *job_state, *job_error;
    const char *verdict, *verdict_reason; /* the gate run that job recorded */
    int gate_is_run;                      /* the host's accepted gate is that run */
};

struct plan_ro_facts {
    enum plan_ro_state state;
    int waves, current_wave;
    int soaking;   /* wave_state soaking */
    int soak_over; /* soak_until has passed */
    int canary;    /* hosts in the canary wave (0: none) */
    int pause_after_canary, canary_paused;
    int ratio_set; /* min_baseline_ratio not null */
    int max_unavailable;
    int nhosts;
    const struct plan_ro_host *hosts; /* in position order */
};

enum plan_ro_action {
    PLAN_RO_WAIT,
    PLAN_RO_START,     /* host: drain it, step draining */
    PLAN_RO_SKIP,      /* host: step skipped (why) */
    PLAN_RO_DRAINED,   /* host: drained_when_idle */
    PLAN_RO_PROVISION, /* host: queue the provision job (target, or from when rollback) */
    PLAN_RO_GATE,      /* host: drain (provisioned → draining), queue the gate job */
    PLAN_RO_ADVANCE,   /* host: step (or rollback_step) := next */
    PLAN_RO_COMPARE,   /* host: compare with the baselines, judge (plan_rollout_judge) */
    PLAN_RO_RESUME,    /* host: resume, step (or rollback_step) done */
    PLAN_RO_SOAK,      /* the wave is done: soak it */
    PLAN_RO_NEXT_WAVE, /* the soak passed: next wave (pause: the canary's pause) */
    PLAN_RO_SUCCEED,   /* every wave passed */
    PLAN_RO_FAIL,      /* host (or -1): roll back, why */
    PLAN_RO_RB_START,  /* host: rollback_step draining (drain: apply drain first) */
    PLAN_RO_HOST_FAIL, /* host: rollback_step failed (why) */
    PLAN_RO_FINISH,    /* the rollback ended: finish_state */
};

struct plan_ro_decision {
    enum plan_ro_action action;
    int host;                 /* the host's index, -1 when none */
    int rollback;             /* the host action moves its rollback sequence */
    int drain;                /* RB_START: apply drain first (the host was ready) */
    int pause;                /* NEXT_WAVE: pause after the canary */
    enum plan_ro_step next;   /* ADVANCE: the step (or rollback step) to take */
    const char *finish_state; /* FINISH: "rolled_back" or "failed" */
    char why[400];
};

void plan_rollout_next(const struct plan_ro_facts *f, struct plan_ro_decision *d);

/* The hosts out of service because of the rollout (docs/rollouts.md §3). */
int plan_rollout_unavailable(const struct plan_ro_facts *f);

/* The comparison's verdict: matched baselines (0: none, fail closed), the new value and
 * the reference (their median). Returns 1 when value / reference >= min_ratio; why says
 * so in words; *ratio gets the ratio (0 when it has none). */
int plan_rollout_judge(int matched, double value, double reference, double min_ratio, double *ratio,
                       char *why, size_t len);

/* max_unavailable resolved: pct (1..100) of in_scope rounded down, at least 1; or hosts
 * when pct is 0. */
int plan_rollout_max_unavailable(int hosts, int pct, int in_scope);
/* The wave of the host at position pos (0-based) of n: the first canary hosts are wave 0
 * (when canary > 0), then waves of max_unavailable. *waves gets their number. */
int plan_rollout_wave(int pos, int canary, int max_unavailable);
int plan_rollout_waves(int n, int canary, int max_unavailable);

const char *plan_ro_action_name(enum plan_ro_action a);

#endif
