/* audit.c — audit_events access. */
#include "db/audit.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/db_pg.h"

// clang-format off
#define AUDIT_COLS                                                                          \
    "a.seq::text AS seq_key, a.id::text AS id, " DB_TS("a.at") " AS at, a.principal, a.role,"   \
    " a.action, a.resource_type, a.resource_id, a.method, a.path, a.status, a.request_id,"  \
    " a.reason, a.project_id::text AS project_id,"                                         \
    " (SELECT name FROM projects p WHERE p.id = a.project_id) AS project_name,"            \
    " a.before::text AS before, a.after::text AS after"
/* The rows of the scope $N (a uuid[] literal; NULL: every row, the platform's own too). */
#define SCOPED(N) "($" N "::uuid[] IS NULL OR a.project_id = ANY ($" N "::uuid[]))"
// clang-format on

const struct db_stmt db_audit_stmts[] = {
    {"audit_insert",
     "INSERT INTO audit_events (principal, role, action, resource_type, resource_id, method, "
     "path, status, request_id, reason, project_id, before, after) VALUES ($1, $2, $3, $4, $5,"
     " $6, $7, $8::int, $9, $10, coalesce($11::uuid, audit_project($4, $5)), $12::jsonb,"
     " $13::jsonb)"},
    {"audit_list", "SELECT " AUDIT_COLS " FROM audit_events a"
                   " WHERE ($1::text IS NULL OR a.principal = $1)"
                   "   AND ($2::text IS NULL OR a.action = $2)"
                   "   AND ($3::text IS NULL OR a.resource_type = $3)"
                   "   AND ($4::text IS NULL OR a.resource_id = $4)"
                   "   AND ($5::timestamptz IS NULL OR a.at >= $5)"
                   "   AND ($6::timestamptz IS NULL OR a.at < $6)"
                   "   AND " SCOPED("9") " AND ($10::uuid IS NULL OR a.project_id = $10::uuid)"
                                         "   AND a.seq < coalesce($7::bigint, 9223372036854775807)"
                                         " ORDER BY a.seq DESC LIMIT $8::int"},
    {"audit_get",
     "SELECT " AUDIT_COLS " FROM audit_events a WHERE a.id = $1::uuid AND " SCOPED("2")},
};
const size_t db_audit_nstmts = sizeof db_audit_stmts / sizeof db_audit_stmts[0];

enum db_status db_audit_insert(struct db_conn *c, const struct db_audit_event *ev)
{
    char status[16];
    snprintf(status, sizeof status, "%d", ev->status);
    const char *p[13] = {ev->principal,  ev->role,   ev->action, ev->resource_type, ev->resource_id,
                         ev->method,     ev->path,   status,     ev->request_id,    ev->reason,
                         ev->project_id, ev->before, ev->after};
    return db_exec_noresult(c, "audit_insert", 13, p);
}

/* A jsonb column's text as JSON (null when SQL NULL). */
static json_t *json_col(const PGresult *r, int i, const char *col)
{
    const char *v = db_str(r, i, col);
    json_t *j = v ? json_loads(v, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

/* Row i's project: {id, name}, or null for the platform's own acts. */
static json_t *project_json(const PGresult *r, int i)
{
    const char *id = db_str(r, i, "project_id"), *name = db_str(r, i, "project_name");
    if (id == NULL)
        return json_null();
    return json_pack("{s:s, s:s}", "id", id, "name", name ? name : "");
}

/* Row i as an AuditEvent with its keyset value in "_key"; NULL when out of memory. */
static json_t *row_json(const PGresult *r, int i)
{
    const char *rid = db_str(r, i, "resource_id");
    const char *why = db_str(r, i, "reason");
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:s}", "id",
        db_str(r, i, "id"), "at", db_str(r, i, "at"), "principal", db_str(r, i, "principal"),
        "role", db_str(r, i, "role"), "action", db_str(r, i, "action"), "resource_type",
        db_str(r, i, "resource_type"), "resource_id", rid ? json_string(rid) : json_null(),
        "method", db_str(r, i, "method"), "path", db_str(r, i, "path"), "status",
        (int)db_long(r, i, "status"), "request_id", db_str(r, i, "request_id"), "reason",
        why ? json_string(why) : json_null(), "project", project_json(r, i), "before",
        json_col(r, i, "before"), "after", json_col(r, i, "after"), "_key",
        db_str(r, i, "seq_key"));
}

enum db_status db_audit_list(struct db_conn *c, const struct db_audit_filter *f, json_t *items)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[10] = {f->principal, f->action,    f->resource_type, f->resource_id,
                         f->since,     f->until,     f->before_seq,    limit,
                         f->scope,     f->project_id};
    PGresult *r;
    enum db_status s = db_exec(c, "audit_list", 10, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r) && s >= 0; i++)
        if (json_array_append_new(items, row_json(r, i)) != 0)
            s = DB_HARD_ERROR; /* out of memory: never a page with rows missing */
    PQclear(r);
    return s;
}

enum db_status db_audit_get(struct db_conn *c, const char *id, const char *scope, json_t **out)
{
    const char *p[2] = {id, scope};
    PGresult *r;
    *out = NULL;
    enum db_status s = db_exec(c, "audit_get", 2, p, &r);
    if (s == DB_ONE_RESULT) {
        *out = row_json(r, 0);
        if (*out == NULL)
            s = DB_HARD_ERROR;
        else
            json_object_del(*out, "_key");
    }
    PQclear(r);
    return s;
}
