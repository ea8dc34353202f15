/* briefs.h — workload briefs. */
#ifndef GPUFLEET_DB_BRIEFS_H
#define GPUFLEET_DB_BRIEFS_H

#include <jansson.h>

#include "db/db.h"

extern const struct db_stmt db_brief_stmts[];
extern const size_t db_brief_nstmts;

/* Inserts a validated BriefInput; *out receives the stored Brief (new reference). */
enum db_status db_brief_insert(struct db_conn *c, const json_t *spec, const char *created_by,
                               json_t **out);
/* Reads one brief; for_update locks the row (inside a transaction). */
enum db_status db_brief_get(struct db_conn *c, const char *id, int for_update, json_t **out);
/* Replaces the document and bumps the revision. */
enum db_status db_brief_update(struct db_conn *c, const char *id, const json_t *spec, json_t **out);
/* DB_HARD_ERROR with a foreign-key violation (23503) when something references it. */
enum db_status db_brief_delete(struct db_conn *c, const char *id);

struct db_brief_filter {
    const char *kind, *name_prefix, *after_seq;
    long limit;
};
/* Appends briefs in creation order; each carries a hidden "_key" (its seq). */
enum db_status db_brief_list(struct db_conn *c, const struct db_brief_filter *f, json_t *items);

#endif
