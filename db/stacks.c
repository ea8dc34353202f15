/* stacks.c — stacks access. Rows are never updated (a trigger refuses it). */
#include "db/stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define STACK_COLS(t)                                                                       \
    t "seq::text AS seq_key, " t "id::text AS id, " t "spec::text AS spec, " t                  \
      "warnings::text AS warnings, " t "image_digest, " t "created_by, " TS(t "created_at")  \
      " AS created_at"

const struct db_stmt db_stack_stmts[] = {
    {"stack_insert",
     "INSERT INTO stacks (name, framework, image_digest, supersedes, spec, warnings, created_by)"
     " VALUES ($1::jsonb->>'name', $1::jsonb->'framework'->>'name', $3,"
     " ($1::jsonb->>'supersedes')::uuid, $1::jsonb, $2::jsonb, $4) RETURNING " STACK_COLS("")},
    {"stack_get", "SELECT " STACK_COLS("") " FROM stacks WHERE id = $1::uuid"},
    {"stack_lineage",
     "WITH RECURSIVE chain(id, depth) AS ("
     "   SELECT id, 0 FROM stacks WHERE id = $1::uuid"
     "   UNION ALL"
     "   SELECT s.supersedes, chain.depth + 1 FROM chain JOIN stacks s ON s.id = chain.id"
     "   WHERE s.supersedes IS NOT NULL AND chain.depth < 10000)"
     " SELECT " STACK_COLS("s.") " FROM chain JOIN stacks s ON s.id = chain.id"
     " ORDER BY chain.depth"},
    {"stack_list",
     "SELECT " STACK_COLS("") " FROM stacks"
     " WHERE ($1::text IS NULL OR starts_with(name, $1))"
     "   AND ($2::text IS NULL OR framework = $2)"
     "   AND seq > coalesce($3::bigint, 0)"
     " ORDER BY seq LIMIT $4::int"},
};
const size_t db_stack_nstmts = sizeof db_stack_stmts / sizeof db_stack_stmts[0];

/* {id, <spec fields>, image_name, image_digest, warnings, created_at, created_by} */
static json_t *row_json(const PGresult *r, int i, int with_key)
{
    json_t *spec = json_loads(db_str(r, i, "spec"), 0, NULL);
    json_t *warnings = json_loads(db_str(r, i, "warnings"), 0, NULL);
    const char *image = json_string_value(json_object_get(spec, "image"));
    const char *at = image ? strchr(image, '@') : NULL;
    json_t *o = json_pack("{s:s}", "id", db_str(r, i, "id"));
    if (spec != NULL)
        json_object_update(o, spec);
    json_decref(spec);
    json_object_set_new(o, "image_name", at ? json_stringn(image, (size_t)(at - image))
                                            : json_string(""));
    json_object_set_new(o, "image_digest", json_string(db_str(r, i, "image_digest")));
    json_object_set_new(o, "warnings", warnings ? warnings : json_array());
    json_object_set_new(o, "created_at", json_string(db_str(r, i, "created_at")));
    json_object_set_new(o, "created_by", json_string(db_str(r, i, "created_by")));
    if (with_key)
        json_object_set_new(o, "_key", json_string(db_str(r, i, "seq_key")));
    return o;
}

static enum db_status rows(struct db_conn *c, const char *stmt, int n, const char *const *p,
                           json_t *items, int with_key)
{
    PGresult *r;
    enum db_status s = db_exec(c, stmt, n, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row_json(r, i, with_key));
    PQclear(r);
    return s;
}

enum db_status db_stack_insert(struct db_conn *c, const struct db_stack_new *s, json_t **out)
{
    char *doc = json_dumps(s->spec, JSON_COMPACT);
    char *warn = json_dumps(s->warnings, JSON_COMPACT);
    const char *p[4] = {doc, warn, s->image_digest, s->created_by};
    json_t *items = json_array();
    enum db_status st = (doc && warn) ? rows(c, "stack_insert", 4, p, items, 0) : DB_HARD_ERROR;
    *out = st == DB_ONE_RESULT ? json_incref(json_array_get(items, 0)) : NULL;
    json_decref(items);
    free(doc);
    free(warn);
    return st;
}

enum db_status db_stack_get(struct db_conn *c, const char *id, json_t **out)
{
    const char *p[1] = {id};
    json_t *items = json_array();
    enum db_status st = rows(c, "stack_get", 1, p, items, 0);
    *out = st == DB_ONE_RESULT ? json_incref(json_array_get(items, 0)) : NULL;
    json_decref(items);
    return st;
}

enum db_status db_stack_lineage(struct db_conn *c, const char *id, json_t *items)
{
    const char *p[1] = {id};
    return rows(c, "stack_lineage", 1, p, items, 0);
}

enum db_status db_stack_list(struct db_conn *c, const struct db_stack_filter *f, json_t *items)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->name_prefix, f->framework, f->after_seq, limit};
    return rows(c, "stack_list", 4, p, items, 1);
}
