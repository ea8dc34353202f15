/* pools.h — host pools. Reads are JSON documents rendered by PostgreSQL (see db_page):
 * the stored spec spliced with id, revision, gate_version and times. */
#ifndef GPUFLEET_DB_POOLS_H
#define GPUFLEET_DB_POOLS_H

#include <jansson.h>

#include "db/db.h"

/* Inserts a validated pool (defaults filled in). DB_HARD_ERROR with a unique violation
 * when the name is taken, with a foreign-key violation when gpu_model is not in the
 * catalog. *doc gets the Pool document (caller frees), id its UUID. */
enum db_status db_pool_insert(struct db_conn *c, const json_t *spec, const char *created_by,
                              char **doc, char id[37]);
/* Reads one pool document; for_update locks the row (inside a transaction). */
enum db_status db_pool_get(struct db_conn *c, const char *id, int for_update, char **doc);
/* Replaces the spec, bumps revision, and gate_version when spec.gate changed. */
enum db_status db_pool_update(struct db_conn *c, const char *id, const json_t *spec, char **doc);
/* DB_HARD_ERROR with a foreign-key violation (23503) while a host references it. */
enum db_status db_pool_delete(struct db_conn *c, const char *id);

struct db_pool_filter {
    const char *gpu_model, *name_prefix, *after_seq;
    long limit;
};
enum db_status db_pool_list(struct db_conn *c, const struct db_pool_filter *f,
                            struct db_page *page);

#endif
