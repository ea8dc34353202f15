/* stacks.c — stacks access. Rows are never updated (a trigger refuses it). */
#include "db/stacks.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db_pg.h"

/* {"id":…,<spec members>,"image_name":…,"image_digest":…,"warnings":[…],"created_at":…,
 *  "created_by":…} over table alias s */
// clang-format off
#define STACK_DOC                                                                            \
    "'{\"id\":\"' || s.id || '\",' || substr(s.spec::text, 2, length(s.spec::text) - 2) ||"  \
    " ',\"image_name\":' || to_json(split_part(s.spec->>'image', '@', 1))::text ||"          \
    " ',\"image_digest\":\"' || s.image_digest || '\",\"warnings\":' || s.warnings::text ||" \
    " ',\"created_at\":\"' || " DB_TS("s.created_at") " ||"                                  \
    " '\",\"created_by\":' || to_json(s.created_by)::text || '}'"
// clang-format on

const struct db_stmt db_stack_stmts[] = {
    {"stack_insert",
     "INSERT INTO stacks AS s (name, framework, image_digest, supersedes, spec, warnings,"
     " created_by) VALUES ($1::json->>'name', $1::json->'framework'->>'name', $3,"
     " ($1::json->>'supersedes')::uuid, $1::json, $2::json, $4) RETURNING " STACK_DOC
     " AS doc, s.id::text"},
    {"stack_get", "SELECT " STACK_DOC " AS doc FROM stacks s WHERE s.id = $1::uuid"},
    {"stack_lineage",
     "WITH RECURSIVE chain(id, depth) AS ("
     "   SELECT id, 0 FROM stacks WHERE id = $1::uuid"
     "   UNION ALL"
     "   SELECT st.supersedes, chain.depth + 1 FROM chain JOIN stacks st ON st.id = chain.id"
     "   WHERE st.supersedes IS NOT NULL AND chain.depth < 10000)"
     " SELECT " STACK_DOC " AS doc, chain.depth::text AS key"
     " FROM chain JOIN stacks s ON s.id = chain.id ORDER BY chain.depth"},
    {"stack_list", "SELECT " STACK_DOC " AS doc, s.seq::text AS key FROM stacks s"
                   " WHERE ($1::text IS NULL OR starts_with(s.name, $1))"
                   "   AND ($2::text IS NULL OR s.framework = $2)"
                   "   AND s.seq > coalesce($3::bigint, 0)"
                   " ORDER BY s.seq LIMIT $4::int"},
};
const size_t db_stack_nstmts = sizeof db_stack_stmts / sizeof db_stack_stmts[0];

enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, char **doc,
                               char id[37])
{
    *doc = NULL;
    char *spec = json_dumps(s->spec, JSON_COMPACT);
    char *warn = json_dumps(s->warnings, JSON_COMPACT);
    const char *p[4] = {spec, warn, s->image_digest, s->created_by};
    enum db_status st =
        (spec && warn) ? db_exec_doc_id(c, "stack_insert", 4, p, doc, id) : DB_HARD_ERROR;
    free(spec);
    free(warn);
    return st;
}

enum db_status db_stack_get(struct db_conn *c, const char *id, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "stack_get", 1, p, doc);
}

enum db_status db_stack_lineage(struct db_conn *c, const char *id, struct db_page *page)
{
    const char *p[1] = {id};
    return db_exec_page(c, "stack_lineage", 1, p, page);
}

enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f,
                             struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->name_prefix, f->framework, f->after_seq, limit};
    return db_exec_page(c, "stack_list", 4, p, page);
}
