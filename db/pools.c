/* pools.c — pools access. The pool document lives in spec (json text, kept byte for
 * byte); reads splice it with id, revision, gate_version and times. */
#include "db/pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

/* {"id":…,"revision":…,"gate_version":…,"project":{…},<spec members>,"created_at":…,
 *  "updated_at":…,"created_by":…} */
// clang-format off
#define POOL_DOC                                                                             \
    "'{\"id\":\"' || id || '\",\"revision\":' || revision || ',\"gate_version\":' ||"        \
    " gate_version || ',\"project\":' || (" DB_PROJECT_JSON("project_id") ")::text ||"       \
    " ',' || substr(spec::text, 2, length(spec::text) - 2) ||"                               \
    " ',\"created_at\":\"' || " DB_TS("created_at") " ||" " '\",\"updated_at\":\"' || "      \
    DB_TS("updated_at") " ||" " '\",\"created_by\":' || to_json(created_by)::text || " "'}'"
// clang-format on

/* The GPU model named by the JSON spec param may be used by project p: shared, or its own. */
#define USABLE_MODEL(spec, p)                                                           \
    "EXISTS (SELECT 1 FROM gpu_models g WHERE g.key = " spec "::json->>'gpu_model' AND" \
    " (g.shared OR g.project_id = " p "))"

const struct db_stmt db_pool_stmts[] = {
    {"pool_insert",
     "INSERT INTO pools (name, gpu_model, spec, created_by, project_id) SELECT $1::json->>'name',"
     " $1::json->>'gpu_model', $1::json, $2, $3::uuid WHERE " USABLE_MODEL(
         "$1", "$3::uuid") " RETURNING " POOL_DOC " AS doc, id::text"},
    {"pool_get", "SELECT " POOL_DOC " AS doc FROM pools WHERE id = $1::uuid"
                 " AND " DB_IN_SCOPE("project_id", "$2")},
    {"pool_get_lock", "SELECT " POOL_DOC " AS doc FROM pools WHERE id = $1::uuid"
                      " AND " DB_IN_SCOPE("project_id", "$2") " FOR UPDATE"},
    {"pool_update",
     "UPDATE pools SET name = $2::json->>'name', gpu_model = $2::json->>'gpu_model',"
     " gate_version = gate_version + CASE WHEN (spec->'gate')::jsonb IS DISTINCT FROM"
     " ($2::json->'gate')::jsonb THEN 1 ELSE 0 END,"
     " spec = $2::json, revision = revision + 1, updated_at = now()"
     " WHERE id = $1::uuid AND ($2::json->>'gpu_model' = gpu_model OR " USABLE_MODEL(
         "$2", "pools.project_id") ") RETURNING " POOL_DOC " AS doc"},
    {"pool_gpus",
     "SELECT p.project_id::text, p.gpu_model, coalesce((p.spec->>'gpu_count')::int, 0) AS n,"
     " (SELECT count(*) FROM hosts h WHERE h.pool_id = p.id AND h.state <> 'stopped') AS hosts"
     " FROM pools p WHERE p.id = $1::uuid"},
    {"pool_delete", "DELETE FROM pools WHERE id = $1::uuid AND " DB_IN_SCOPE(
                        "project_id", "$2") " RETURNING project_id::text"},
    {"pool_list", "SELECT " POOL_DOC " AS doc, seq::text AS key FROM pools"
                  " WHERE ($1::text IS NULL OR gpu_model = $1)"
                  "   AND ($2::text IS NULL OR starts_with(name, $2))"
                  "   AND " DB_IN_SCOPE("project_id", "$5") " AND " DB_OF_PROJECT(
                      "project_id", "$6") "   AND seq > coalesce($3::bigint, 0)"
                                          " ORDER BY seq LIMIT $4::int"},
};
const size_t db_pool_nstmts = sizeof db_pool_stmts / sizeof db_pool_stmts[0];

enum db_status db_pool_insert(struct db_conn *c, const json_t *spec, const char *project_id,
                              const char *created_by, char **doc, char id[37])
{
    *doc = NULL;
    char *text = json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(15));
    const char *p[3] = {text, created_by, project_id};
    enum db_status s = text ? db_exec_doc_id(c, "pool_insert", 3, p, doc, id) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_pool_get(struct db_conn *c, const char *id, const char *scope, int for_update,
                           char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, for_update ? "pool_get_lock" : "pool_get", 2, p, doc);
}

enum db_status db_pool_update(struct db_conn *c, const char *id, const json_t *spec, char **doc)
{
    char *text = json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(15));
    const char *p[2] = {id, text};
    enum db_status s = text ? db_exec_doc(c, "pool_update", 2, p, doc) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_pool_delete(struct db_conn *c, const char *id, const char *scope,
                              char project_id[37])
{
    const char *p[2] = {id, scope};
    return db_exec_returning_id(c, "pool_delete", 2, p, project_id);
}

enum db_status db_pool_list(struct db_conn *c, const struct db_pool_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[6] = {f->gpu_model, f->name_prefix, f->after_seq, limit, f->scope, f->project_id};
    return db_exec_page(c, "pool_list", 6, p, page);
}

enum db_status db_pool_gpus(struct db_conn *c, const char *id, struct db_pool_gpus *out)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(out, 0, sizeof *out);
    enum db_status s = db_exec_row(c, "pool_gpus", 1, p, &r);
    if (s != DB_ONE_RESULT)
        return s;
    db_copy(r, 0, "project_id", out->project_id, sizeof out->project_id);
    db_copy(r, 0, "gpu_model", out->gpu_model, sizeof out->gpu_model);
    out->gpu_count = db_long(r, 0, "n");
    out->hosts = db_long(r, 0, "hosts");
    PQclear(r);
    return s;
}
