/* rollout_create.h — whether a rollout may start, and what pause, resume and abort do
 * (pure logic, no I/O; docs/rollouts.md §2).
 *
 * service/rollout_create.c reads the pool, its hosts and the stack through db/rollouts.h
 * (typed rows, in the create's transaction, under the pool's row lock), asks these
 * functions, and writes what they decided. The driver's moves are planner/rollout.h's.
 *
 * A create is decided in three steps:
 *   scope    each host of the pool: in scope (ready, not on the target stack), or
 *            skipped with its reason (plan_ro_in_scope); for a host in scope, whether
 *            its driver is the stack's (plan_ro_driver_matches)
 *   refusal  the counts and the pool's facts against the request, in the order an
 *            operator needs to read them (plan_ro_create_refusal)
 *   layout   the limit of hosts out of service and the waves (plan_ro_layout; a host's
 *            wave is plan_rollout_wave of its position) */
#ifndef GPUFLEET_PLAN_ROLLOUT_CREATE_H
#define GPUFLEET_PLAN_ROLLOUT_CREATE_H

#include <stddef.h>

/* Why a create or a control was refused (the API maps each to one problem). */
enum plan_ro_refusal {
    PLAN_RO_OK = 0,
    PLAN_RO_POOL_UNKNOWN,    /* 404 */
    PLAN_RO_STACK_UNKNOWN,   /* 404 (the stack_id names no stack) */
    PLAN_RO_ACTIVE,          /* 409 rollout-active: detail {rollout_id} */
    PLAN_RO_NOTHING,         /* 409 nothing-to-roll-out: detail {skipped: [...]} */
    PLAN_RO_DRIVER_MISMATCH, /* 409 driver-mismatch: detail {driver_version, hosts: [{id,
                                name, driver_version|null}]} */
    PLAN_RO_NO_WORKLOAD,     /* 409 no-workload: min_baseline_ratio set, the pool's gate has
                                none */
    PLAN_RO_NO_BASELINE,     /* 409 no-baseline: detail {hosts: [...]} (force skips it) */
    PLAN_RO_CANARY_TOO_BIG,  /* 422 canary larger than the hosts in scope: detail {in_scope} */
    PLAN_RO_NOT_FOUND,       /* control: no such rollout (404) */
    PLAN_RO_BAD_STATE,       /* control: the action does not apply: detail {state} (409) */
    PLAN_RO__REFUSALS
};

/* "ok", "pool_unknown", … (for logs and tests). */
extern const char *const plan_ro_refusal_names[PLAN_RO__REFUSALS];

/* ---- create ---- */

/* What the caller asks for (the body of POST /v1/pools/{id}/rollouts). */
struct plan_ro_request {
    int canary;              /* 0..100 hosts in the canary wave */
    int max_unavailable;     /* hosts (>= 1), used when max_unavailable_pct is 0 */
    int max_unavailable_pct; /* 1..100: a percentage of the hosts in scope; 0: hosts */
    int ratio_set;           /* min_baseline_ratio is set: the throughput is compared */
    int force;               /* an admin's: a missing baseline does not refuse */
};

/* One host of the pool, as read (strings borrowed). */
struct plan_ro_candidate {
    const char *state;            /* hosts.state */
    const char *current_stack_id; /* NULL when the host has no stack */
};

/* Whether the host is in scope for a rollout to stack_id: ready and not on that stack.
 * When it is not, reason (len bytes) says why: "already on the target stack" or "the host
 * is <state>, not ready". Returns 1 in scope, 0 skipped. */
int plan_ro_in_scope(const struct plan_ro_candidate *h, const char *stack_id, char *reason,
                     size_t len);

/* Whether the driver a host reports is the stack's. Either one unknown (NULL): no, since
 * drivers are installed out of band and a rollout cannot change them. */
int plan_ro_driver_matches(const char *host_driver, const char *stack_driver);

/* Whether the create needs to know if some host in scope has a baseline (a ratio is
 * asked for and force is not set). */
int plan_ro_needs_baseline(const struct plan_ro_request *rq);

/* The facts a create is decided on, read in its transaction. */
struct plan_ro_create_facts {
    int pool_found;   /* the pool exists (and is locked) */
    int stack_found;  /* the stack exists */
    int active;       /* the pool has a rollout running, paused or rolling back */
    int in_scope;     /* hosts in scope (plan_ro_in_scope) */
    int mismatched;   /* of which the driver does not match (plan_ro_driver_matches) */
    int has_workload; /* the pool's gate has a workload */
    int any_baseline; /* some host in scope has a baseline on its current stack under the
                         pool's workload (read only when plan_ro_needs_baseline) */
};

/* The first refusal in this order, or PLAN_RO_OK: the pool, the stack, an active rollout,
 * nothing in scope, a driver mismatch (force does not skip it), no workload (a ratio is
 * set), no baseline (a ratio is set and not force), a canary larger than the scope. */
enum plan_ro_refusal plan_ro_create_refusal(const struct plan_ro_request *rq,
                                            const struct plan_ro_create_facts *f);

/* The accepted rollout's shape over in_scope hosts (> 0). */
struct plan_ro_layout {
    int max_hosts; /* max_unavailable resolved (plan_rollout_max_unavailable) */
    int waves;     /* plan_rollout_waves */
};
void plan_ro_layout(const struct plan_ro_request *rq, int in_scope, struct plan_ro_layout *out);

/* ---- pause, resume, abort ---- */

enum plan_ro_ctl { PLAN_RO_CTL_PAUSE, PLAN_RO_CTL_RESUME, PLAN_RO_CTL_ABORT, PLAN_RO_CTL__COUNT };

/* "pause", "resume", "abort". */
extern const char *const plan_ro_ctl_names[PLAN_RO_CTL__COUNT];

struct plan_ro_ctl_decision {
    const char *to; /* the rollout's new state: "paused", "running", "rolling_back" or
                       "aborted" */
    int roll_back;  /* abort of a touched rollout: its touched hosts roll back */
    int release;    /* abort of an untouched one: every host is not needed */
    int abort;      /* the rollout records who aborted it and why */
};

/* What action does to a rollout in state (its stored name); touched: a host has left
 * pending and skipped. pause: running → paused; resume: paused → running; abort: running
 * or paused → rolling_back when touched, aborted when not. Any other pair is
 * PLAN_RO_BAD_STATE; on PLAN_RO_OK *d is filled. */
enum plan_ro_refusal plan_ro_control(enum plan_ro_ctl action, const char *state, int touched,
                                     struct plan_ro_ctl_decision *d);

#endif
