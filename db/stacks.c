/* stacks.c — stacks access. Rows are never updated but for their shared flag (a trigger
 * refuses every other change). */
#include "db/stacks.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

/* {"id":…,"project":{…},"shared":…,<spec members>,"image_name":…,"image_digest":…,
 *  "warnings":[…],"created_at":…,"created_by":…} over table alias s */
// clang-format off
#define STACK_DOC                                                                            \
    "'{\"id\":\"' || s.id || '\",\"project\":' || (" DB_PROJECT_JSON("s.project_id") ")::text" \
    " || ',\"shared\":' || s.shared::text || ',' ||"                                         \
    " substr(s.spec::text, 2, length(s.spec::text) - 2) ||"                                  \
    " ',\"image_name\":' || to_json(split_part(s.spec->>'image', '@', 1))::text ||"          \
    " ',\"image_digest\":\"' || s.image_digest || '\",\"warnings\":' || s.warnings::text ||" \
    " ',\"created_at\":\"' || " DB_TS("s.created_at") " ||"                                  \
    " '\",\"created_by\":' || to_json(s.created_by)::text || '}'"
// clang-format on

const struct db_stmt db_stack_stmts[] = {
    /* supersedes must name a stack the project may use (shared, or its own): else no row */
    {"stack_insert",
     "INSERT INTO stacks AS s (name, framework, image_digest, supersedes, spec, warnings,"
     " created_by, project_id) SELECT $1::json->>'name', $1::json->'framework'->>'name', $3,"
     " ($1::json->>'supersedes')::uuid, $1::json, $2::json, $4, $5::uuid"
     " WHERE $1::json->>'supersedes' IS NULL OR EXISTS (SELECT 1 FROM stacks o"
     "   WHERE o.id = ($1::json->>'supersedes')::uuid AND (o.shared OR o.project_id = $5::uuid))"
     " RETURNING " STACK_DOC " AS doc, s.id::text"},
    {"stack_get", "SELECT " STACK_DOC " AS doc FROM stacks s WHERE s.id = $1::uuid"
                  " AND " DB_IN_SCOPE_SHARED("s", "$2")},
    /* the ancestors the scope may read (a stack whose ancestor is no longer shared shows
     * the rest of its chain) */
    {"stack_lineage",
     "WITH RECURSIVE chain(id, depth) AS ("
     "   SELECT id, 0 FROM stacks s WHERE id = $1::uuid AND " DB_IN_SCOPE_SHARED(
         "s", "$2") "   UNION ALL"
                    "   SELECT st.supersedes, chain.depth + 1 FROM chain JOIN stacks st ON st.id = "
                    "chain.id"
                    "   WHERE st.supersedes IS NOT NULL AND chain.depth < 10000)"
                    " SELECT " STACK_DOC " AS doc, chain.depth::text AS key"
                    " FROM chain JOIN stacks s ON s.id = chain.id WHERE " DB_IN_SCOPE_SHARED(
                        "s", "$2") " ORDER BY chain.depth"},
    {"stack_list", "SELECT " STACK_DOC " AS doc, s.seq::text AS key FROM stacks s"
                   " WHERE ($1::text IS NULL OR starts_with(s.name, $1))"
                   "   AND ($2::text IS NULL OR s.framework = $2)"
                   "   AND " DB_IN_SCOPE_SHARED("s", "$5") " AND " DB_OF_PROJECT(
                       "s.project_id", "$6") "   AND ($7::bool IS NULL OR s.shared = $7::bool)"
                                             "   AND s.seq > coalesce($3::bigint, 0)"
                                             " ORDER BY s.seq LIMIT $4::int"},
    {"stack_share",
     "WITH old AS (SELECT id, shared FROM stacks WHERE id = $1::uuid FOR UPDATE),"
     " upd AS (UPDATE stacks s SET shared = $2::bool FROM old WHERE s.id = old.id RETURNING s.*)"
     " SELECT old.shared::text AS before, (SELECT " STACK_DOC " FROM upd s) AS doc FROM old"},
};
const size_t db_stack_nstmts = sizeof db_stack_stmts / sizeof db_stack_stmts[0];

enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, char **doc,
                               char id[37])
{
    *doc = NULL;
    char *spec = json_dumps(s->spec, JSON_COMPACT);
    char *warn = json_dumps(s->warnings, JSON_COMPACT);
    const char *p[5] = {spec, warn, s->image_digest, s->created_by, s->project_id};
    enum db_status st =
        (spec && warn) ? db_exec_doc_id(c, "stack_insert", 5, p, doc, id) : DB_HARD_ERROR;
    free(spec);
    free(warn);
    return st;
}

enum db_status db_stack_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "stack_get", 2, p, doc);
}

enum db_status db_stack_lineage(struct db_conn *c, const char *id, const char *scope,
                                struct db_page *page)
{
    const char *p[2] = {id, scope};
    return db_exec_page(c, "stack_lineage", 2, p, page);
}

enum db_status db_stack_share(struct db_conn *c, const char *id, int shared, int *before,
                              char **doc)
{
    const char *p[2] = {id, shared ? "true" : "false"};
    PGresult *r;
    *doc = NULL;
    enum db_status s = db_exec(c, "stack_share", 2, p, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        *before = db_bool(r, 0, "before");
        *doc = db_dup(r, 0, "doc", &oom);
        if (*doc == NULL)
            s = DB_HARD_ERROR;
    }
    PQclear(r);
    return s;
}

enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f,
                             struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->name_prefix, f->framework,  f->after_seq, limit,
                        f->scope,       f->project_id, f->shared};
    return db_exec_page(c, "stack_list", 7, p, page);
}
