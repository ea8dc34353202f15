/* hosts.h — hosts and their state history. */
#ifndef GPUFLEET_DB_HOSTS_H
#define GPUFLEET_DB_HOSTS_H

#include <jansson.h>

#include "db/db.h"

struct db_host_new {
    const char *name, *address, *port, *user, *credential_id, *pool_id;
    const char *host_key_sha256; /* or NULL */
    const char *labels_json;     /* object text */
    const char *created_by;
};
/* FK violations (unknown credential/pool) and unique violations (name) come back as
 * DB_HARD_ERROR with the SQLSTATE kept. */
enum db_status db_host_insert(struct db_conn *c, const struct db_host_new *h, char **doc,
                              char id[37]);
/* The Host document (with its project, recent state history, the last job and the last
 * gate run). scope: the projects whose hosts may be read, a uuid[] literal, or NULL for
 * every project (db/projects.h); a host outside it is DB_NO_RESULTS, as one that does not
 * exist. */
enum db_status db_host_get(struct db_conn *c, const char *id, const char *scope, char **doc);

struct db_host_filter {
    const char *state, *pool_id, *label_json, *gpu_model, *stale, *after_seq;
    long limit;
    const char *scope;      /* uuid[] literal, or NULL: every project */
    const char *project_id; /* the ?project= filter, or NULL */
};
enum db_status db_host_list(struct db_conn *c, const struct db_host_filter *f,
                            struct db_page *page);
/* Updates labels, pool and/or credential (NULL keeps the current value). */
enum db_status db_host_patch(struct db_conn *c, const char *id, const char *labels_json,
                             const char *pool_id, const char *credential_id, char **doc);
enum db_status db_host_delete(struct db_conn *c, const char *id);

/* Applies one event of the host state machine (planner/host_state.h) through the SQL
 * function host_transition(): the row for (current state, event) — the one going to
 * to_hint when given and present —, its effects on the accepted gate and the quarantine
 * hold, and the history row. to receives the new state (may be NULL). DB_NO_RESULTS: no
 * such host. DB_HARD_ERROR with *refused set when the table refuses it (NOT_ALLOWED) or
 * the quarantine hold does (QUARANTINED); the transaction is then aborted. */
enum db_host_refusal { DB_HOST_OK, DB_HOST_NOT_ALLOWED, DB_HOST_QUARANTINED };
struct db_host_event {
    const char *host_id, *event;
    const char *to_hint; /* or NULL */
    const char *reason;
    const char *job_id; /* or NULL */
    const char *actor;
    const char *gate_run_id; /* the accepted run, for gate_accepted; else NULL */
};
enum db_status db_host_event(struct db_conn *c, const struct db_host_event *e, char to[24],
                             enum db_host_refusal *refused);

/* What a worker needs to act on a host. Strings are owned by the struct (free with
 * db_host_target_free, which leaves it empty and may be called again). */
struct db_host_target {
    char *id, *name, *address, *user, *credential_id, *pool_id, *host_key_sha256, *state;
    int port;
    char *durable_path, *scratch_path, *stop_command; /* from the pool */
    char *pool_gpu_model;
    int pool_gpu_count;
    int held; /* the quarantine hold is set */
};
/* Fills *t on DB_ONE_RESULT; on any other status *t is left empty (all NULL), so
 * db_host_target_free is always safe afterwards. Requires an empty *t: what it holds is
 * overwritten, not freed (a struct on the stack need not be initialized; one filled by an
 * earlier call must be db_host_target_free'd first). Out of memory: DB_HARD_ERROR. */
enum db_status db_host_target(struct db_conn *c, const char *id, struct db_host_target *t);
void db_host_target_free(struct db_host_target *t);
/* What a host command is decided on: the target, its stacks (current, desired), the stack
 * of its accepted gate, and its active job (queued or running). Ids are "" when NULL. The
 * same contract as db_host_target (free with db_host_facts_free). */
struct db_host_facts {
    struct db_host_target t;
    char project_id[37]; /* the host's project (its pool's) */
    char current_stack_id[37], desired_stack_id[37], gate_stack_id[37];
    char job_id[37], job_state[16];
};
enum db_status db_host_facts(struct db_conn *c, const char *id, struct db_host_facts *f);
void db_host_facts_free(struct db_host_facts *f);

/* The pool and the credential a host is registered with (or moved to): which project
 * each belongs to, what the pool expects, and the credential's binding. The found flags
 * are 0 for an id that names no row. allowed_users and allowed_cidrs are comma-separated
 * (owned; NULL: any, "": none); free with db_host_refs_free. */
struct db_host_refs {
    int pool_found;
    char pool_project[37], gpu_model[65];
    int gpu_count;
    int credential_found;
    char credential_project[37];
    char *allowed_users, *allowed_cidrs;
};
enum db_status db_host_refs(struct db_conn *c, const char *pool_id, const char *credential_id,
                            struct db_host_refs *refs);
void db_host_refs_free(struct db_host_refs *refs);

/* Whether stack_id names a stack a host of project_id may be provisioned with: one of its
 * project, or a shared one. DB_ONE_RESULT or DB_NO_RESULTS. */
enum db_status db_host_stack_usable(struct db_conn *c, const char *stack_id,
                                    const char *project_id);

/* The budget a new host or a provisioning meets (planner/project_limits.h decides): the
 * project's settings and the spend its budget pass last wrote (project_spend). Amounts
 * are decimal text, "" when none. DB_NO_RESULTS: no such project. */
struct db_host_budget {
    char on_exhausted[16];
    int has_budget, has_spend, current_month, exhausted;
    char budget[32], spend[32];
};
enum db_status db_host_budget(struct db_conn *c, const char *project_id, struct db_host_budget *b);
/* A job attempt reached the host: pins the key seen on first contact (only when none is
 * pinned yet; *pinned = 1 then) and records last_seen — only while attempt still holds
 * the job. DB_ONE_RESULT when it does, DB_NO_RESULTS when the job moved on (nothing was
 * written). A failed copy of the stored pin is an error (DB_HARD_ERROR from
 * db_host_target), never "no pin". */
enum db_status db_host_contact(struct db_conn *c, const char *id, const char *sha256,
                               const char *job_id, int attempt, int *pinned);
/* Replaces the pin (NULL: record the key on the next contact). */
enum db_status db_host_repin(struct db_conn *c, const char *id, const char *sha256);
/* Records facts, last_seen, and the current stack after a successful provisioning. */
enum db_status db_host_provisioned(struct db_conn *c, const char *id, const char *facts_json,
                                   const char *stack_id);
enum db_status db_host_seen(struct db_conn *c, const char *id);

#endif
