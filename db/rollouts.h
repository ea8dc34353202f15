/* rollouts.h — stack rollouts in waves (docs/rollouts.md, migrations/0021_rollouts.sql).
 * POST /v1/pools/{id}/rollouts creates one (db_rollout_create: its checks and its waves in
 * one transaction); the driver (service/rollout.c, planner/rollout.h) moves it on; the
 * API pauses, resumes and aborts it (db_rollout_control). The document and the lists are
 * read by db/rollouts_read.h. */
#ifndef GPUFLEET_DB_ROLLOUTS_H
#define GPUFLEET_DB_ROLLOUTS_H

#include <jansson.h>

#include "db/db.h"

/* Why a create or a control was refused (the API maps each to a problem). */
enum db_rollout_refusal {
    DB_RO_OK = 0,
    DB_RO_POOL_UNKNOWN,    /* 404 */
    DB_RO_STACK_UNKNOWN,   /* 404 (the stack_id names no stack) */
    DB_RO_ACTIVE,          /* 409 rollout-active: detail {rollout_id} */
    DB_RO_NOTHING,         /* 409 nothing-to-roll-out: detail {skipped: [...]} */
    DB_RO_DRIVER_MISMATCH, /* 409 driver-mismatch: detail {driver_version, hosts: [{id, name,
                              driver_version|null}]} */
    DB_RO_NO_WORKLOAD,     /* 409 no-workload: min_baseline_ratio set, the pool's gate has none */
    DB_RO_NO_BASELINE,     /* 409 no-baseline: detail {hosts: [...]} (force skips it) */
    DB_RO_CANARY_TOO_BIG,  /* 422 canary larger than the hosts in scope: detail {in_scope} */
    DB_RO_NOT_FOUND,       /* control: no such rollout (404) */
    DB_RO_BAD_STATE,       /* control: the action does not apply: detail {state} (409) */
};

struct db_rollout_new {
    const char *pool_id, *stack_id;
    int canary;                /* 0..100 */
    int max_unavailable;       /* hosts (>= 1) when max_unavailable_pct is 0 */
    int max_unavailable_pct;   /* 1..100: a percentage of the hosts in scope; 0: use hosts */
    int ratio_set;             /* 0: min_baseline_ratio null (no throughput check) */
    double min_baseline_ratio; /* when ratio_set */
    int soak_seconds;          /* 0..86400 */
    int pause_after_canary, force;
    const char *created_by; /* the caller's subject */
};

/* Creates a rollout when every check passes (docs/rollouts.md §2), in the caller's
 * transaction: id_out gets its id. A refusal returns DB_NO_RESULTS with *refusal set and
 * *detail (owned by the caller, may be NULL) the problem's extra members. */
enum db_status db_rollout_create(struct db_conn *c, const struct db_rollout_new *in,
                                 char id_out[37], enum db_rollout_refusal *refusal,
                                 json_t **detail);

/* pause, resume or abort (action), by actor with an optional reason. DB_ONE_RESULT when
 * applied; DB_NO_RESULTS with *refusal (DB_RO_NOT_FOUND, DB_RO_BAD_STATE) and *detail
 * otherwise. */
enum db_status db_rollout_control(struct db_conn *c, const char *id, const char *action,
                                  const char *actor, const char *reason,
                                  enum db_rollout_refusal *refusal, json_t **detail);

/* ---- the driver's side (service/rollout.c) ---- */

/* Active rollouts (running, paused, rolling_back) not looked at in the last second, the
 * oldest look first: up to max ids into ids[]; *n how many. */
enum db_status db_rollout_due(struct db_conn *c, int max, char (*ids)[37], int *n);

/* One active rollout and its hosts (position order), locked for this transaction (FOR
 * UPDATE SKIP LOCKED): DB_NO_RESULTS when it ended, is gone, or another driver holds it.
 * actor is the rollout's own principal (rollout:<id>): its acts are not interventions.
 * Strings are owned by the struct (db_rollout_facts_free). */
struct db_rollout_host_facts {
    char host_id[37];
    int wave, busy, held, on_target, has_from, provisioned, gate_ok, gate_is_run;
    char *host_name, *step, *rollback_step, *from_stack_id, *to_stack_id;
    char *provision_job_id, *gate_job_id, *rollback_provision_job_id, *rollback_gate_job_id;
    char *host_state, *hold_reason, *foreign_job, *intervention, *isolation;
    char *job_id, *job_state, *job_error, *run_id, *verdict, *verdict_reason;
    char *gate_run_id; /* the judged gate run (stored when the gate passed) */
};
struct db_rollout_facts {
    char id[37], pool_id[37], stack_id[37], state[16];
    int canary, max_unavailable, soak_seconds, pause_after_canary, canary_paused;
    int waves, current_wave, soaking, soak_over, ratio_set;
    double min_ratio;
    int nhosts;
    struct db_rollout_host_facts *hosts;
};
enum db_status db_rollout_facts(struct db_conn *c, const char *id, const char *actor,
                                struct db_rollout_facts *f);
void db_rollout_facts_free(struct db_rollout_facts *f);

/* A host's forward step: step, with (each NULL: unchanged) error, the provision job, the
 * gate job, the gate run, the comparison (JSON text). started: set started_at now. */
struct db_rollout_host_set {
    const char *step, *error, *provision_job_id, *gate_job_id, *gate_run_id, *comparison;
    int started;
};
enum db_status db_rollout_host_step(struct db_conn *c, const char *id, const char *host_id,
                                    const struct db_rollout_host_set *set);
/* A host's rollback step, with (NULL: unchanged) error and the rollback's jobs. */
enum db_status db_rollout_host_rollback(struct db_conn *c, const char *id, const char *host_id,
                                        const char *step, const char *error,
                                        const char *provision_job_id, const char *gate_job_id);
/* The current wave soaks for soak_seconds from now. */
enum db_status db_rollout_soak(struct db_conn *c, const char *id);
/* The next wave starts; pause: the rollout pauses (after the canary, once). */
enum db_status db_rollout_next_wave(struct db_conn *c, const char *id, int pause);
/* Ends a rollout going forward: succeeded. */
enum db_status db_rollout_succeed(struct db_conn *c, const char *id);
/* A failure: rolling_back with error and evidence (JSON text); host_id (or NULL) failed,
 * the hosts in flight are interrupted (step failed), every touched host's rollback_step
 * pending, the untouched not_needed. */
enum db_status db_rollout_fail(struct db_conn *c, const char *id, const char *host_id,
                               const char *error, const char *evidence);
/* Ends a rollback: state rolled_back or failed; failed_hosts the hosts whose rollback
 * failed and that are not ready; why is added to the error. */
enum db_status db_rollout_finish(struct db_conn *c, const char *id, const char *state,
                                 const char *why);
/* A driver looked at it (the due order; updated_at is the last change). */
enum db_status db_rollout_checked(struct db_conn *c, const char *id);

#endif
