/* briefs.c — briefs access. The brief document lives in spec (json text, kept byte for
 * byte); a read splices it with id, revision and times, so the API sends PostgreSQL's
 * text without parsing it again. */
#include "db/briefs.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

/* {"id":…,"revision":…,"project":{…},<spec members>,"created_at":…,"updated_at":…,
 *  "created_by":…} */
// clang-format off
#define BRIEF_DOC                                                                     \
    "'{\"id\":\"' || id || '\",\"revision\":' || revision || ',\"project\":' ||"       \
    " (" DB_PROJECT_JSON("project_id") ")::text || ',' ||"                            \
    " substr(spec::text, 2, length(spec::text) - 2) ||" " ',\"created_at\":\"' || "   \
    DB_TS("created_at") " ||" " '\",\"updated_at\":\"' || " DB_TS("updated_at") " ||" \
    " '\",\"created_by\":' || to_json(created_by)::text || " "'}'"
// clang-format on

const struct db_stmt db_brief_stmts[] = {
    {"brief_insert",
     "INSERT INTO briefs (name, kind, spec, created_by, project_id) VALUES ($1::json->>'name',"
     " $1::json->>'kind', $1::json, $2, $3::uuid) RETURNING " BRIEF_DOC " AS doc, id::text"},
    {"brief_get", "SELECT " BRIEF_DOC " AS doc FROM briefs WHERE id = $1::uuid"
                  " AND " DB_IN_SCOPE("project_id", "$2")},
    {"brief_get_lock", "SELECT " BRIEF_DOC " AS doc FROM briefs WHERE id = $1::uuid"
                       " AND " DB_IN_SCOPE("project_id", "$2") " FOR UPDATE"},
    {"brief_update",
     "UPDATE briefs SET name = $2::json->>'name', kind = $2::json->>'kind', spec = $2::json,"
     " revision = revision + 1, updated_at = now() WHERE id = $1::uuid RETURNING " BRIEF_DOC
     " AS doc"},
    {"brief_delete", "DELETE FROM briefs WHERE id = $1::uuid AND " DB_IN_SCOPE(
                         "project_id", "$2") " RETURNING project_id::text"},
    {"brief_list", "SELECT " BRIEF_DOC " AS doc, seq::text AS key FROM briefs"
                   " WHERE ($1::text IS NULL OR kind = $1)"
                   "   AND ($2::text IS NULL OR starts_with(name, $2))"
                   "   AND " DB_IN_SCOPE("project_id", "$5") " AND " DB_OF_PROJECT(
                       "project_id", "$6") "   AND seq > coalesce($3::bigint, 0)"
                                           " ORDER BY seq LIMIT $4::int"},
};
const size_t db_brief_nstmts = sizeof db_brief_stmts / sizeof db_brief_stmts[0];

enum db_status db_brief_insert(struct db_conn *c, const json_t *spec, const char *project_id,
                               const char *created_by, char **doc, char id[37])
{
    *doc = NULL;
    char *text = json_dumps(spec, JSON_COMPACT);
    const char *p[3] = {text, created_by, project_id};
    enum db_status s = text ? db_exec_doc_id(c, "brief_insert", 3, p, doc, id) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_brief_get(struct db_conn *c, const char *id, const char *scope, int for_update,
                            char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, for_update ? "brief_get_lock" : "brief_get", 2, p, doc);
}

enum db_status db_brief_update(struct db_conn *c, const char *id, const json_t *spec, char **doc)
{
    char *text = json_dumps(spec, JSON_COMPACT);
    const char *p[2] = {id, text};
    enum db_status s = text ? db_exec_doc(c, "brief_update", 2, p, doc) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_brief_delete(struct db_conn *c, const char *id, const char *scope,
                               char project_id[37])
{
    const char *p[2] = {id, scope};
    return db_exec_returning_id(c, "brief_delete", 2, p, project_id);
}

enum db_status db_brief_list(struct db_conn *c, const struct db_brief_filter *f,
                             struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[6] = {f->kind, f->name_prefix, f->after_seq, limit, f->scope, f->project_id};
    return db_exec_page(c, "brief_list", 6, p, page);
}
