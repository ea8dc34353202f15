/* stacks.h — pinned software stacks (immutable). Reads are JSON documents rendered by
 * PostgreSQL (see db_page). */
#ifndef GPUFLEET_DB_STACKS_H
#define GPUFLEET_DB_STACKS_H

#include <jansson.h>

#include "db/db.h"

struct db_stack_new {
    const json_t *spec;       /* validated StackInput */
    const json_t *warnings;   /* array */
    const char *image_digest; /* sha256:... */
    const char *created_by;
};
/* DB_HARD_ERROR with a foreign-key violation when supersedes names no stack. *doc gets
 * the Stack document (caller frees), id its UUID. */
enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, char **doc,
                               char id[37]);
enum db_status db_stack_get(struct db_conn *c, const char *id, char **doc);
/* The stack and its ancestors through supersedes, newest first (keys are depths). */
enum db_status db_stack_lineage(struct db_conn *c, const char *id, struct db_page *page);

struct db_stack_filter {
    const char *name_prefix, *framework, *after_seq;
    long limit;
};
enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f,
                             struct db_page *page);

#endif
