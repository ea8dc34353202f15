/* rollouts.h — stack rollouts in waves (docs/rollouts.md, migrations/0021_rollouts.sql).
 * POST /v1/pools/{id}/rollouts creates one and the API pauses, resumes and aborts it
 * (service/rollout_create.h: it reads through the typed calls below, planner/
 * rollout_create.h decides, it writes through the calls below); the driver
 * (service/rollout.c, planner/rollout.h) moves it on. This file stores and reads; it
 * decides nothing. The document and the lists are read by db/rollouts_read.h. */
#ifndef GPUFLEET_DB_ROLLOUTS_H
#define GPUFLEET_DB_ROLLOUTS_H

#include <jansson.h>

#include "db/db.h"

/* A rollout as asked for (the API fills it; the service checks it; db_rollout_insert
 * stores it). Strings borrowed. */
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
    /* the projects whose pools the caller may roll out on (a uuid[] literal, NULL: every
     * project); another project's pool is answered as one that does not exist */
    const char *scope;
};

/* ---- create: the reads (in the create's transaction) and the insert ---- */

/* Locks the pool's row (concurrent creates of one pool queue here; the partial unique
 * index rollouts_one_active backs the rule). DB_ONE_RESULT with *has_workload (its gate
 * has a workload object), DB_NO_RESULTS when there is no such pool within scope (a uuid[]
 * literal, NULL: every project). */
enum db_status db_rollout_pool_lock(struct db_conn *c, const char *pool_id, const char *scope,
                                    int *has_workload);
/* The project of a pool (project: 37 bytes); DB_NO_RESULTS when there is no such pool. */
enum db_status db_rollout_pool_project(struct db_conn *c, const char *pool_id, char project[37]);

/* The stack, one of the pool's project or a shared one: its id as stored (id_out) and its
 * driver_version (*driver: caller frees; NULL when it has none). DB_NO_RESULTS when there
 * is no such stack (or one of another project). */
enum db_status db_rollout_stack(struct db_conn *c, const char *stack_id, const char *pool_id,
                                char id_out[37], char **driver);

/* The pool's active rollout (running, paused or rolling back): DB_ONE_RESULT with its id,
 * DB_NO_RESULTS when none. */
enum db_status db_rollout_active(struct db_conn *c, const char *pool_id, char id_out[37]);

/* A host of the pool. Strings owned (db_rollout_pool_hosts_free); NULL for SQL NULL. */
struct db_rollout_pool_host {
    char id[37];
    char *name, *state;
    char *driver_version;   /* as the host reports it (facts), NULL when unknown */
    char *current_stack_id; /* NULL when none */
};
/* The pool's hosts by name, then id: *hosts (caller frees with db_rollout_pool_hosts_free),
 * *n of them. */
enum db_status db_rollout_pool_hosts(struct db_conn *c, const char *pool_id,
                                     struct db_rollout_pool_host **hosts, int *n);
void db_rollout_pool_hosts_free(struct db_rollout_pool_host *hosts, int n);

/* *found: whether one of the hosts (n UUIDs) has a baseline (source gate) in the pool on
 * its current stack under the pool's gate workload. */
enum db_status db_rollout_any_baseline(struct db_conn *c, const char *pool_id,
                                       const char *const *host_ids, int n, int *found);

/* What the insert stores besides the request: the resolved limit, the waves, the hosts in
 * scope (position order; each one's from stack is its current one) and the skipped. */
struct db_rollout_member {
    const char *host_id, *name;
    int position, wave;
};
struct db_rollout_skip {
    const char *host_id, *name, *state, *reason;
};
struct db_rollout_layout {
    int max_hosts, waves;
    const struct db_rollout_member *hosts;
    int nhosts;
    const struct db_rollout_skip *skipped;
    int nskipped;
};
/* Stores the rollout, its hosts and its skipped; id_out gets its id. */
enum db_status db_rollout_insert(struct db_conn *c, const struct db_rollout_new *in,
                                 const struct db_rollout_layout *l, char id_out[37]);

/* ---- control: the lock and the writes ---- */

/* Locks the rollout: its state and whether a host has left pending and skipped
 * (*touched). DB_NO_RESULTS when there is no such rollout of a pool within scope (a uuid[]
 * literal, NULL: every project). */
enum db_status db_rollout_control_lock(struct db_conn *c, const char *id, const char *scope,
                                       char state[16], int *touched);
/* Whether a rollout of this id exists, whatever its project: DB_ONE_RESULT or
 * DB_NO_RESULTS (a refusal by scope is told apart from an unknown id, for the audit). */
enum db_status db_rollout_exists(struct db_conn *c, const char *id);
/* Sets the state (an active one clears finished_at, another sets it now), with error
 * (NULL: unchanged); the driver looks at the rollout on its next pass. */
enum db_status db_rollout_set_state(struct db_conn *c, const char *id, const char *state,
                                    const char *error);

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
    int wave, busy, held, on_target, has_from, provisioned, gate_is_run;
    char *host_name, *step, *rollback_step, *from_stack_id, *to_stack_id;
    char *provision_job_id, *gate_job_id, *rollback_provision_job_id, *rollback_gate_job_id;
    char *host_state, *hold_reason, *foreign_job, *intervention, *isolation;
    char *job_id, *job_state, *job_error, *run_id, *verdict, *verdict_reason;
    char *gate_run_id;      /* the judged gate run (stored when the gate passed) */
    char *current_stack_id; /* the host's stack now (NULL: none) */
    char *gate_stack_id;    /* the stack its accepted gate ran on (NULL: no accepted gate) */
};
struct db_rollout_facts {
    char id[37], pool_id[37], project_id[37], stack_id[37], state[16];
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
/* db_rollout_fail's hosts alone (the rollout's row unchanged): host_id (or NULL) failed,
 * the hosts in flight interrupted, the touched pending, the untouched not_needed. */
enum db_status db_rollout_fail_hosts(struct db_conn *c, const char *id, const char *host_id,
                                     const char *error);
/* Ends a rollback: state rolled_back or failed; failed_hosts the hosts whose rollback
 * failed and that are not ready; why is added to the error. */
enum db_status db_rollout_finish(struct db_conn *c, const char *id, const char *state,
                                 const char *why);
/* A driver looked at it (the due order; updated_at is the last change). */
enum db_status db_rollout_checked(struct db_conn *c, const char *id);

#endif
