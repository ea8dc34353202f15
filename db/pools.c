/* pools.c — pools access. The pool document lives in spec (json text, kept byte for
 * byte); reads splice it with id, revision, gate_version and times. */
#include "db/pools.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db_pg.h"

/* {"id":…,"revision":…,"gate_version":…,<spec members>,"created_at":…,"updated_at":…,
 *  "created_by":…} */
// clang-format off
#define POOL_DOC                                                                             \
    "'{\"id\":\"' || id || '\",\"revision\":' || revision || ',\"gate_version\":' ||"        \
    " gate_version || ',' || substr(spec::text, 2, length(spec::text) - 2) ||"               \
    " ',\"created_at\":\"' || " DB_TS("created_at") " ||" " '\",\"updated_at\":\"' || "      \
    DB_TS("updated_at") " ||" " '\",\"created_by\":' || to_json(created_by)::text || " "'}'"
// clang-format on

const struct db_stmt db_pool_stmts[] = {
    {"pool_insert",
     "INSERT INTO pools (name, gpu_model, spec, created_by) VALUES ($1::json->>'name',"
     " $1::json->>'gpu_model', $1::json, $2) RETURNING " POOL_DOC " AS doc, id::text"},
    {"pool_get", "SELECT " POOL_DOC " AS doc FROM pools WHERE id = $1::uuid"},
    {"pool_get_lock", "SELECT " POOL_DOC " AS doc FROM pools WHERE id = $1::uuid FOR UPDATE"},
    {"pool_update",
     "UPDATE pools SET name = $2::json->>'name', gpu_model = $2::json->>'gpu_model',"
     " gate_version = gate_version + CASE WHEN (spec->'gate')::jsonb IS DISTINCT FROM"
     " ($2::json->'gate')::jsonb THEN 1 ELSE 0 END,"
     " spec = $2::json, revision = revision + 1, updated_at = now()"
     " WHERE id = $1::uuid RETURNING " POOL_DOC " AS doc"},
    {"pool_delete", "DELETE FROM pools WHERE id = $1::uuid"},
    {"pool_list", "SELECT " POOL_DOC " AS doc, seq::text AS key FROM pools"
                  " WHERE ($1::text IS NULL OR gpu_model = $1)"
                  "   AND ($2::text IS NULL OR starts_with(name, $2))"
                  "   AND seq > coalesce($3::bigint, 0)"
                  " ORDER BY seq LIMIT $4::int"},
};
const size_t db_pool_nstmts = sizeof db_pool_stmts / sizeof db_pool_stmts[0];

enum db_status db_pool_insert(struct db_conn *c, const json_t *spec, const char *created_by,
                              char **doc, char id[37])
{
    *doc = NULL;
    char *text = json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(15));
    const char *p[2] = {text, created_by};
    enum db_status s = text ? db_exec_doc_id(c, "pool_insert", 2, p, doc, id) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_pool_get(struct db_conn *c, const char *id, int for_update, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, for_update ? "pool_get_lock" : "pool_get", 1, p, doc);
}

enum db_status db_pool_update(struct db_conn *c, const char *id, const json_t *spec, char **doc)
{
    char *text = json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(15));
    const char *p[2] = {id, text};
    enum db_status s = text ? db_exec_doc(c, "pool_update", 2, p, doc) : DB_HARD_ERROR;
    free(text);
    return s;
}

enum db_status db_pool_delete(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "pool_delete", 1, p);
}

enum db_status db_pool_list(struct db_conn *c, const struct db_pool_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->gpu_model, f->name_prefix, f->after_seq, limit};
    return db_exec_page(c, "pool_list", 4, p, page);
}
