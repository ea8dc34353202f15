/* stacks.h — pinned software stacks (immutable but for their shared flag). Reads are JSON
 * documents rendered by PostgreSQL (see db_page). A stack belongs to a project; a shared
 * one is readable and usable by every project, so every read takes a scope (a uuid[]
 * literal of project ids, NULL for every project) and sees the shared stacks besides the
 * scope's own. */
#ifndef GPUFLEET_DB_STACKS_H
#define GPUFLEET_DB_STACKS_H

#include <jansson.h>

#include "db/db.h"

struct db_stack_new {
    const json_t *spec;       /* validated StackInput */
    const json_t *warnings;   /* array */
    const char *image_digest; /* sha256:... */
    const char *created_by;
    const char *project_id;
};
/* DB_NO_RESULTS (nothing written) when supersedes names no stack the project may use
 * (shared, or its own). *doc gets the Stack document (caller frees), id its UUID. */
enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, char **doc,
                               char id[37]);
/* The Stack document when it is shared or its project lies in scope. A host or a rollout
 * may use a stack when this read finds it with the scope "{<its project's id>}". */
enum db_status db_stack_get(struct db_conn *c, const char *id, const char *scope, char **doc);
/* The stack and its ancestors through supersedes, newest first (keys are depths); only
 * those the scope may read. DB_NO_RESULTS when the stack itself is not. */
enum db_status db_stack_lineage(struct db_conn *c, const char *id, const char *scope,
                                struct db_page *page);
/* Sets the shared flag (the one column a stack may change); *before gets the old value
 * and *doc the new Stack document (caller frees). Unscoped: a platform admin's act.
 * DB_NO_RESULTS: no such stack. */
enum db_status db_stack_share(struct db_conn *c, const char *id, int shared, int *before,
                              char **doc);

struct db_stack_filter {
    const char *name_prefix, *framework, *after_seq;
    long limit;
    const char *scope, *project_id; /* the caller's read scope; the ?project= filter (or NULL) */
    const char *shared;             /* "true", "false", or NULL for both */
};
enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f,
                             struct db_page *page);

#endif
