/* hosts.h — hosts and their state history. */
#ifndef GPUFLEET_DB_HOSTS_H
#define GPUFLEET_DB_HOSTS_H

#include <jansson.h>

#include "db/db.h"

extern const struct db_stmt db_host_stmts[];
extern const size_t db_host_nstmts;

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
/* The Host document (with recent state history, the last job and the last gate run). */
enum db_status db_host_get(struct db_conn *c, const char *id, char **doc);

struct db_host_filter {
    const char *state, *pool_id, *label_json, *gpu_model, *stale, *after_seq;
    long limit;
};
enum db_status db_host_list(struct db_conn *c, const struct db_host_filter *f,
                            struct db_page *page);
/* Updates labels and/or pool (NULL keeps the current value). */
enum db_status db_host_patch(struct db_conn *c, const char *id, const char *labels_json,
                             const char *pool_id, char **doc);
enum db_status db_host_delete(struct db_conn *c, const char *id);

/* Sets the state and records the change (reason, job, actor). No-op when unchanged. */
enum db_status db_host_set_state(struct db_conn *c, const char *id, const char *state,
                                 const char *reason, const char *job_id, const char *actor);

/* What a worker needs to act on a host. Strings are owned by the row (free with
 * db_host_target_free). */
struct db_host_target {
    char *id, *name, *address, *user, *credential_id, *pool_id, *host_key_sha256, *state;
    int port;
    char *durable_path, *scratch_path, *stop_command; /* from the pool */
    char *pool_gpu_model;
    int pool_gpu_count;
};
enum db_status db_host_target(struct db_conn *c, const char *id, struct db_host_target *t);
void db_host_target_free(struct db_host_target *t);
/* Pins the host key seen on first contact (only when none is pinned yet). */
enum db_status db_host_pin_key(struct db_conn *c, const char *id, const char *sha256);
/* Records facts, last_seen, and the current stack after a successful provisioning. */
enum db_status db_host_provisioned(struct db_conn *c, const char *id, const char *facts_json,
                                   const char *stack_id);
enum db_status db_host_seen(struct db_conn *c, const char *id);

#endif
