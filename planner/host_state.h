/* host_state.h — the host lifecycle as one table (pure logic, no I/O).
 *
 * Every change of a host's state, of its accepted gate and of its quarantine hold is an
 * event applied through this table: (from state, event) → to state, with the effects of
 * that row (clear or set the accepted gate, set or clear the quarantine hold). API
 * handlers ask plan_host_next() before they queue work; the worker names the event it
 * applies; PostgreSQL holds the same rows (host_transitions, generated from this table by
 * plan_host_sql()) and its trigger refuses any change that is not in them, so a bug
 * elsewhere cannot invent a transition.
 *
 * A row whose to state equals its from state allows the event without a state change
 * (e.g. provision_requested: the job is queued, the state moves when a worker starts).
 * Some events have several rows from one state (a failed stop returns the host to the
 * state it had; a release goes to provisioned or registered): the caller names the
 * wanted to state (the hint), and the row must exist.
 *
 * The monitor watches ready, draining, drained, quarantined and unreachable hosts: missed
 * samples make a watched host unreachable (a quarantined one stays quarantined), resumed
 * samples return it to the state it had, and an isolating health event quarantines it.
 * Unreachable is a resting state: no job acts on it, the idle policy never stops it.
 *
 * Automatic recovery (pool monitor.auto_recover, planner/recovery.h): a host the monitor
 * isolated leaves quarantine by recovery_started (the hold the monitor set is lifted,
 * audited, to drain it), is drained, runs diagnostics and a gate (gate_started from
 * drained), and is ready when the gate accepts; a step that fails sends it back with
 * recovery_failed (quarantined, hold set again).
 *
 * The quarantine hold: quarantining sets it (with the accepted gate cleared); only a
 * release (admin), or a recovery of the monitor's own isolation, clears it. While it is set the
 * host can only be quarantined, stopping or stopped, and the events marked refused_when_held answer
 * host_quarantined. */
#ifndef GPUFLEET_HOST_STATE_H
#define GPUFLEET_HOST_STATE_H

#include <stddef.h>

enum plan_host_state {
    HS_REGISTERED,
    HS_PROVISIONING,
    HS_PROVISIONED,
    HS_GATING,
    HS_READY,
    HS_INVESTIGATING,
    HS_QUARANTINED,
    HS_DRAINING,
    HS_DRAINED,
    HS_DIAGNOSING,
    HS_STOPPING,
    HS_STOPPED,
    HS_FAILED,
    HS_UNREACHABLE, /* the monitor missed monitor.unreachable_after samples in a row */
    HS__COUNT
};

enum plan_host_event {
    HE_PROVISION_REQUESTED,   /* operator: POST /v1/hosts/{id}/provision */
    HE_PROVISION_STARTED,     /* worker: a provisioning attempt starts */
    HE_PROVISION_SUCCEEDED,   /* worker */
    HE_PROVISION_FAILED,      /* worker: the job failed for good */
    HE_GATE_REQUESTED,        /* operator: POST /v1/hosts/{id}/gate */
    HE_GATE_STARTED,          /* worker */
    HE_GATE_ACCEPTED,         /* worker: verdict accept (sets the accepted gate) */
    HE_GATE_INVESTIGATE,      /* worker: verdict investigate, or the gate job failed */
    HE_GATE_ISOLATED,         /* worker: verdict isolate (quarantine) */
    HE_DIAGNOSTICS_REQUESTED, /* operator: POST /v1/hosts/{id}/diagnostics */
    HE_DIAGNOSTICS_STARTED,   /* worker */
    HE_DIAGNOSTICS_FINISHED,  /* worker: pass, warn or investigate, or the job failed */
    HE_DIAGNOSTICS_ISOLATED,  /* worker: hardware evidence (quarantine) */
    HE_DRAIN,                 /* operator: POST /v1/hosts/{id}/drain */
    HE_DRAINED_WHEN_IDLE,     /* a draining host whose job ended or that has none */
    HE_RESUME,                /* operator: POST /v1/hosts/{id}/resume (needs the gate) */
    HE_STOP_REQUESTED,        /* operator (admin with force) or the idle policy */
    HE_STOP_STARTED,          /* worker */
    HE_STOP_DONE,             /* worker: the stop command was sent and ended */
    HE_STOP_FAILED,           /* worker: back to the state before the stop (hint) */
    HE_KEY_MISMATCH,          /* worker: the host key differs from the pin (quarantine) */
    HE_RELEASE,               /* admin: POST /v1/hosts/{id}/release */
    HE_JOB_CANCELLED,         /* worker: the job was cancelled */
    HE_JOB_EXPIRED,           /* database: the lease lapsed with no attempt left */
    HE_DELETED,               /* admin: DELETE /v1/hosts/{id} */
    HE_MONITOR_UNREACHABLE,   /* monitor: unreachable_after samples missed in a row */
    HE_MONITOR_REACHABLE,     /* monitor: samples resume; back to the state before (hint) */
    HE_MONITOR_ISOLATED,      /* monitor: an isolating health event (quarantine) */
    HE_RECOVERY_STARTED,      /* recovery: the monitor's hold lifted to drain (auto_recover) */
    HE_RECOVERY_FAILED,       /* recovery: a step failed; back to quarantine (hold set) */
    HE_POOL_MOVED,            /* PATCH /v1/hosts/{id} pool_id: into another project's pool, or
                               * one that expects other GPUs (clears the accepted gate) */
    HE__COUNT
};

/* Who may cause an event. */
enum plan_host_actor { PLAN_ACTOR_OPERATOR, PLAN_ACTOR_ADMIN, PLAN_ACTOR_SYSTEM };

/* Row effects. */
#define PLAN_FX_CLEAR_GATE 1u /* accepted_gate_run_id := NULL */
#define PLAN_FX_SET_GATE   2u /* accepted_gate_run_id := the gate run */
#define PLAN_FX_SET_HOLD   4u /* quarantine hold set (reason, time) */
#define PLAN_FX_CLEAR_HOLD 8u /* quarantine hold cleared */

struct plan_host_rule {
    enum plan_host_event event;
    enum plan_host_state from, to;
    unsigned effects;
};

struct plan_host_event_def {
    const char *name; /* "provision_requested" … (the SQL event name) */
    enum plan_host_actor actor;
    const char *audit_action; /* the audit action recorded with it, or NULL */
    int refused_when_held;    /* 409 host_quarantined while the hold is set */
};

extern const struct plan_host_rule plan_host_rules[];
extern const size_t plan_host_nrules;
extern const struct plan_host_event_def plan_host_events[HE__COUNT];
extern const char *const plan_host_state_names[HS__COUNT];

/* -1 when unknown. */
int plan_host_state_parse(const char *name);
int plan_host_event_parse(const char *name);

enum plan_host_answer {
    PLAN_HOST_OK,
    PLAN_HOST_QUARANTINED, /* the hold is set and the event is refused while it is */
    PLAN_HOST_NOT_ALLOWED, /* no row for (from, event[, hint]) */
    PLAN_HOST_AMBIGUOUS,   /* several rows and no hint */
    PLAN_HOST_FORBIDDEN,   /* this actor may not cause the event */
};

/* Decides an event: the row for (from, event) — the one whose to equals hint when hint
 * is not -1 — and, on OK, its to state and effects. held: the quarantine hold is set. */
enum plan_host_answer plan_host_next(enum plan_host_state from, int held, enum plan_host_event ev,
                                     int hint, enum plan_host_actor actor, enum plan_host_state *to,
                                     unsigned *effects);

/* Whether ev may happen now to a host whose state is named state (as stored): the answer
 * of plan_host_next without a hint, its row not needed. An unknown state is NOT_ALLOWED. */
enum plan_host_answer plan_host_allows(const char *state, int held, enum plan_host_event ev,
                                       enum plan_host_actor actor);

/* One event for one host, as every actor asks for it (service/host_commands.c applies it
 * through PostgreSQL's host_transition(), with its audit row). Borrowed strings. */
struct host_change {
    const char *host_id;
    enum plan_host_event ev;
    int hint;                 /* the wanted to state (enum plan_host_state), or -1 */
    const char *reason;       /* the state history's reason */
    const char *job_id;       /* the job that causes it, or NULL */
    const char *gate_run_id;  /* gate_accepted: the accepted run; else NULL */
    int audit_status;         /* of the audit row when the event is audited; 0: 409 for a
                               * quarantine, else 200 */
    const char *audit_reason; /* the audit row's reason; NULL: reason */
};

/* Where a host goes when its stop fails or is cancelled: back to the state it had when
 * the stop was requested if that was a resting state, else failed (quarantined while
 * held). */
enum plan_host_state plan_host_stop_back(const char *previous_state, int held);

/* The event a finished gate or diagnostics run applies. */
enum plan_host_event plan_host_verdict_event(int diagnostics, const char *verdict);

/* The table as SQL rows for migrations (host_events, host_transitions): caller frees.
 * The migration that loads them must contain this text verbatim (a unit test checks). */
char *plan_host_sql(void);
/* The table as Markdown (docs/state-machine.md holds a copy): caller frees. */
char *plan_host_markdown(void);

#endif
