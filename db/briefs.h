/* briefs.h — workload briefs. Reads come back as JSON documents rendered by PostgreSQL
 * (see db_page): the stored spec text spliced with id, revision and times. */
#ifndef GPUFLEET_DB_BRIEFS_H
#define GPUFLEET_DB_BRIEFS_H

#include <jansson.h>

#include "db/db.h"

/* Inserts a validated BriefInput into project_id. *doc receives the Brief document
 * (caller frees) and id its UUID. */
enum db_status db_brief_insert(struct db_conn *c, const json_t *spec, const char *project_id,
                               const char *created_by, char **doc, char id[37]);
/* Reads one brief document when its project lies in scope (a uuid[] literal; NULL: every
 * project); for_update locks the row (inside a transaction). */
enum db_status db_brief_get(struct db_conn *c, const char *id, const char *scope, int for_update,
                            char **doc);
/* Replaces the document and bumps the revision. */
enum db_status db_brief_update(struct db_conn *c, const char *id, const json_t *spec, char **doc);
/* Deletes it when its project lies in scope; project_id gets the project it had.
 * DB_NO_RESULTS: none in scope. DB_HARD_ERROR with a foreign-key violation (23503) when
 * something references it. */
enum db_status db_brief_delete(struct db_conn *c, const char *id, const char *scope,
                               char project_id[37]);

struct db_brief_filter {
    const char *kind, *name_prefix, *after_seq;
    long limit;
    const char *scope, *project_id; /* the caller's read scope; the ?project= filter (or NULL) */
};
/* A page of briefs in creation order; keys are seq values. */
enum db_status db_brief_list(struct db_conn *c, const struct db_brief_filter *f,
                             struct db_page *page);

#endif
