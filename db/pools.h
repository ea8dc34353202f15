/* pools.h — host pools. Reads are JSON documents rendered by PostgreSQL (see db_page):
 * the stored spec spliced with id, revision, gate_version and times. */
#ifndef GPUFLEET_DB_POOLS_H
#define GPUFLEET_DB_POOLS_H

#include <jansson.h>

#include "db/db.h"

/* Inserts a validated pool (defaults filled in) into project_id. DB_NO_RESULTS (nothing
 * written) when gpu_model is not a model the project may use (a shared model or one of
 * its own; an unknown key likewise); DB_HARD_ERROR with a unique violation when the name
 * is taken in the project. *doc gets the Pool document (caller frees), id its UUID. */
enum db_status db_pool_insert(struct db_conn *c, const json_t *spec, const char *project_id,
                              const char *created_by, char **doc, char id[37]);
/* Reads one pool document when its project lies in scope (a uuid[] literal; NULL: every
 * project); for_update locks the row (inside a transaction). */
enum db_status db_pool_get(struct db_conn *c, const char *id, const char *scope, int for_update,
                           char **doc);
/* Replaces the spec, bumps revision, and gate_version when spec.gate changed.
 * DB_NO_RESULTS (nothing written) when the spec changes gpu_model to one the pool's project
 * may not use (or to none); keeping the model the pool has is always allowed. */
enum db_status db_pool_update(struct db_conn *c, const char *id, const json_t *spec, char **doc);
/* Deletes it when its project lies in scope; project_id gets the project it had.
 * DB_NO_RESULTS: none in scope. DB_HARD_ERROR with a foreign-key violation (23503) while a
 * host references it. */
enum db_status db_pool_delete(struct db_conn *c, const char *id, const char *scope,
                              char project_id[37]);

/* What a pool's hosts hold (for a quota check of a change of its model or GPU count): its
 * project, model, gpu_count, and how many of its hosts are not stopped. */
struct db_pool_gpus {
    char project_id[37], gpu_model[65];
    long gpu_count, hosts;
};
enum db_status db_pool_gpus(struct db_conn *c, const char *id, struct db_pool_gpus *out);

struct db_pool_filter {
    const char *gpu_model, *name_prefix, *after_seq;
    long limit;
    const char *scope, *project_id; /* the caller's read scope; the ?project= filter (or NULL) */
};
enum db_status db_pool_list(struct db_conn *c, const struct db_pool_filter *f,
                            struct db_page *page);

#endif
