/* stacks.h — pinned software stacks (immutable). */
#ifndef GPUFLEET_DB_STACKS_H
#define GPUFLEET_DB_STACKS_H

#include <jansson.h>

#include "db/db.h"

extern const struct db_stmt db_stack_stmts[];
extern const size_t db_stack_nstmts;

struct db_stack_new {
    const json_t *spec;       /* validated StackInput */
    const json_t *warnings;   /* array */
    const char *image_digest; /* sha256:... */
    const char *created_by;
};
/* DB_HARD_ERROR with a foreign-key violation when supersedes names no stack. */
enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, json_t **out);
enum db_status db_stack_get(struct db_conn *c, const char *id, json_t **out);
/* The stack and its ancestors through supersedes, newest first. */
enum db_status db_stack_lineage(struct db_conn *c, const char *id, json_t *items);

struct db_stack_filter {
    const char *name_prefix, *framework, *after_seq;
    long limit;
};
enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f, json_t *items);

#endif
