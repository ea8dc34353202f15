/* gates.h — gate runs, and the host state they decide. */
#ifndef GPUFLEET_DB_GATES_H
#define GPUFLEET_DB_GATES_H

#include "db/db.h"

/* What a gate or diagnostics job needs to know about its host. Strings owned (free with
 * db_gate_context_free). */
struct db_gate_context {
    /* current_stack_id: the current stack, or the desired one when provisioning never
     * succeeded (a failed host can still be gated, for the evidence) */
    char *state, *current_stack_id, *stack_doc, *pool_id, *pool_spec, *gpu_name;
    long gpu_memory_mib;
    int gate_version;
    int diag_level;        /* from the job's params */
    int has_current_stack; /* 0: current_stack_id is the desired stack */
    int held;              /* the quarantine hold is set */
    char *na_fields;       /* catalog: query fields the model reports [N/A] legitimately */
    /* targeted diagnostics: the job's params.tests (a JSON array text, NULL for a dcgmi
     * level), and per check name (storage_throughput, bandwidth, workload) the host's newest
     * accepted gate that recorded it with values: {name: {gate_run_id, finished_at,
     * stack_id, values}} (JSON text; NULL when none) */
    char *diag_tests, *previous;
    /* targeted diagnostics: the pool's workload baselines (recorded by its accepted gates,
     * same workload hash and metric), the newest 20: {matched, reference (their median),
     * metric, baselines: [ids]} (JSON text; NULL when none) */
    char *pool_baselines;
};
/* Fills *g on DB_ONE_RESULT and leaves it empty otherwise; like db_host_target, it
 * requires an empty *g (overwritten, not freed). */
enum db_status db_gate_context(struct db_conn *c, const char *host_id, const char *job_id,
                               struct db_gate_context *g);
void db_gate_context_free(struct db_gate_context *g);

struct db_gate_run_new {
    const char *kind, *host_id, *job_id, *stack_id, *pool_id, *verdict, *reason, *checks_json,
        *inventory, *started_at;  /* started_at: RFC 3339 */
    int gate_version, diag_level; /* 0 = NULL */
    double connect_ms;
};
enum db_status db_gate_run_insert(struct db_conn *c, const struct db_gate_run_new *g, char id[37]);
/* scope: the projects whose hosts' runs may be read (a uuid[] literal, NULL: every
 * project); another project's run is DB_NO_RESULTS, as one that does not exist. */
enum db_status db_gate_run_get(struct db_conn *c, const char *id, const char *scope, char **doc);
struct db_gate_filter {
    const char *host_id, *verdict, *kind, *after_seq;
    long limit;
    const char *scope, *project_id; /* the read scope, the ?project= filter (NULL: none) */
};
enum db_status db_gate_run_list(struct db_conn *c, const struct db_gate_filter *f,
                                struct db_page *page);

/* The readiness evidence of a host (planner/readiness.h answers from it), read in one
 * statement. Strings are owned, NULL for SQL NULL (an id is NULL when there is no such row:
 * no current stack, no accepted gate, no gate run). A string member of a JSON document
 * (the pool's and the stack's spec, the facts, a check's status) is read only when it is
 * a string. Check values stay JSON text: evidence to show, never read to decide. */
struct db_readiness_facts {
    char *host_id, *state, *host_key_sha256, *current_stack_id;
    char *project;     /* the host's project: the document member "project" as JSON text */
    char *filesystems; /* facts.filesystems: the df -P lines */
    char *credential_id, *key_type;
    char *pool_id, *durable_path, *scratch_path, *stop_command; /* the pool's spec */
    int auto_stop;
    int has_idle_stop_after; /* 0: the spec has no idle_stop_after_seconds */
    long idle_stop_after_seconds;
    char *stack_id, *image_digest, *driver_version, *cuda_version; /* the current stack */
    char *gate_id, *gate_stack_id; /* the accepted gate run and the stack it ran on */
    char *topology_status, *topology_values, *workload_status, *workload_values; /* its checks */
    char *last_gate_id, *observability_status, *observability_message; /* the newest gate */
    long accepted_gate_runs, successful_provisionings;
    /* the newest restore drill of the host's pool (drill_id NULL: none) */
    char *drill_id, *drill_host_id, *drill_verdict, *drill_reason, *drill_finished_at;
    double drill_recovery_seconds, drill_max_recovery_seconds; /* -1: NULL */
    double drill_age_seconds;
    long drill_every_days; /* 0: none */
};
/* Fills *f on DB_ONE_RESULT (DB_NO_RESULTS: no such host, or one outside scope, the
 * projects that may be read: a uuid[] literal, NULL for every project); on any other
 * status *f is left empty. Like db_host_target, it requires an empty *f (overwritten, not
 * freed). Out of memory: DB_HARD_ERROR. */
enum db_status db_readiness_facts(struct db_conn *c, const char *host_id, const char *scope,
                                  struct db_readiness_facts *f);
/* Frees the strings and leaves *f empty; may run again. */
void db_readiness_facts_free(struct db_readiness_facts *f);

#endif
