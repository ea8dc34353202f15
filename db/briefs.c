/* briefs.c — briefs access. The brief document lives in spec (jsonb); id, revision and
 * times are columns. */
#include "db/briefs.h"

#include <stdio.h>
#include <stdlib.h>

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define BRIEF_COLS                                                                          \
    "seq::text AS seq_key, id::text AS id, revision, spec::text AS spec, created_by, "          \
    TS("created_at") " AS created_at, " TS("updated_at") " AS updated_at"

const struct db_stmt db_brief_stmts[] = {
    {"brief_insert",
     "INSERT INTO briefs (name, kind, spec, created_by) VALUES ($1::jsonb->>'name',"
     " $1::jsonb->>'kind', $1::jsonb, $2) RETURNING " BRIEF_COLS},
    {"brief_get", "SELECT " BRIEF_COLS " FROM briefs WHERE id = $1::uuid"},
    {"brief_get_lock", "SELECT " BRIEF_COLS " FROM briefs WHERE id = $1::uuid FOR UPDATE"},
    {"brief_update",
     "UPDATE briefs SET name = $2::jsonb->>'name', kind = $2::jsonb->>'kind', spec = $2::jsonb,"
     " revision = revision + 1, updated_at = now() WHERE id = $1::uuid RETURNING " BRIEF_COLS},
    {"brief_delete", "DELETE FROM briefs WHERE id = $1::uuid"},
    {"brief_list",
     "SELECT " BRIEF_COLS " FROM briefs"
     " WHERE ($1::text IS NULL OR kind = $1)"
     "   AND ($2::text IS NULL OR starts_with(name, $2))"
     "   AND seq > coalesce($3::bigint, 0)"
     " ORDER BY seq LIMIT $4::int"},
};
const size_t db_brief_nstmts = sizeof db_brief_stmts / sizeof db_brief_stmts[0];

/* {id, revision, <spec fields>, created_at, updated_at, created_by} */
static json_t *row_json(const PGresult *r, int i, int with_key)
{
    json_t *spec = json_loads(db_str(r, i, "spec"), 0, NULL);
    json_t *o = json_pack("{s:s, s:i}", "id", db_str(r, i, "id"), "revision",
                          atoi(db_str(r, i, "revision")));
    if (spec != NULL)
        json_object_update(o, spec);
    json_decref(spec);
    json_object_set_new(o, "created_at", json_string(db_str(r, i, "created_at")));
    json_object_set_new(o, "updated_at", json_string(db_str(r, i, "updated_at")));
    json_object_set_new(o, "created_by", json_string(db_str(r, i, "created_by")));
    if (with_key)
        json_object_set_new(o, "_key", json_string(db_str(r, i, "seq_key")));
    return o;
}

static enum db_status one(struct db_conn *c, const char *stmt, int n, const char *const *p,
                          json_t **out)
{
    PGresult *r;
    *out = NULL;
    enum db_status s = db_exec(c, stmt, n, p, &r);
    if (s == DB_ONE_RESULT)
        *out = row_json(r, 0, 0);
    PQclear(r);
    return s;
}

enum db_status db_brief_insert(struct db_conn *c, const json_t *spec, const char *created_by,
                               json_t **out)
{
    char *doc = json_dumps(spec, JSON_COMPACT);
    const char *p[2] = {doc, created_by};
    enum db_status s = doc ? one(c, "brief_insert", 2, p, out) : DB_HARD_ERROR;
    free(doc);
    return s;
}

enum db_status db_brief_get(struct db_conn *c, const char *id, int for_update, json_t **out)
{
    const char *p[1] = {id};
    return one(c, for_update ? "brief_get_lock" : "brief_get", 1, p, out);
}

enum db_status db_brief_update(struct db_conn *c, const char *id, const json_t *spec, json_t **out)
{
    char *doc = json_dumps(spec, JSON_COMPACT);
    const char *p[2] = {id, doc};
    enum db_status s = doc ? one(c, "brief_update", 2, p, out) : DB_HARD_ERROR;
    free(doc);
    return s;
}

enum db_status db_brief_delete(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "brief_delete", 1, p);
}

enum db_status db_brief_list(struct db_conn *c, const struct db_brief_filter *f, json_t *items)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->kind, f->name_prefix, f->after_seq, limit};
    PGresult *r;
    enum db_status s = db_exec(c, "brief_list", 4, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row_json(r, i, 1));
    PQclear(r);
    return s;
}
