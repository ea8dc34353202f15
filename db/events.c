/* events.c — see events.h. */
#include "db/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/decode.h"

/* The event's data document: the common members first, then its own (which may not
 * override them). The common "project" is the event's project_id as {"id", "name"} (null
 * for the platform's own events; the name "" once the project is deleted). */
#define EVENT_OWN \
    "(e.data - 'id' - 'type' - 'at' - 'pool_id' - 'host_id' - 'project_id' - 'project')"
#define EVENT_PROJECT                                                                      \
    "CASE WHEN e.project_id IS NOT NULL THEN json_build_object('id', e.project_id,"        \
    " 'name', coalesce((SELECT pr.name FROM projects pr WHERE pr.id = e.project_id), ''))" \
    " END"
// clang-format off
#define EVENT_COLS                                                                     \
    "e.id::text, e.type, coalesce(e.pool_id::text, '') AS pool_id,"                    \
    " coalesce(e.host_id::text, '') AS host_id,"                                       \
    " coalesce(e.project_id::text, '') AS project_id,"                                 \
    " left(json_build_object('id', e.id, 'type', e.type, 'at', " DB_TS("e.at") ","     \
    " 'pool_id', e.pool_id, 'host_id', e.host_id, 'project_id', e.project_id,"         \
    " 'project', " EVENT_PROJECT ")::text, -1)"                                        \
    " || CASE WHEN " EVENT_OWN " = '{}'::jsonb THEN '}'"                               \
    " ELSE ', ' || ltrim(" EVENT_OWN "::text, '{') END AS doc"
// clang-format on

const struct db_stmt db_event_stmts[] = {
    {"event_emit", "INSERT INTO events (type, pool_id, host_id, data)"
                   " VALUES ($1, $2::uuid, $3::uuid, coalesce($4::jsonb, '{}'::jsonb))"},
    {"event_max_id", "SELECT coalesce(max(id), 0)::text AS max_id FROM events"},
    {"event_after",
     "SELECT " EVENT_COLS " FROM events e WHERE e.id > $1::bigint ORDER BY e.id LIMIT $2::int"},
    {"event_backlog",
     "SELECT " EVENT_COLS " FROM events e WHERE e.id > $1::bigint AND e.id <= $2::bigint"
     " AND ($3::text[] IS NULL OR e.type = ANY ($3::text[]))"
     " AND ($4::uuid IS NULL OR e.pool_id = $4::uuid)"
     " AND ($5::uuid IS NULL OR e.host_id = $5::uuid)"
     " AND ($7::uuid[] IS NULL OR e.project_id = ANY ($7::uuid[]))"
     " ORDER BY e.id LIMIT $6::int"},
    {"event_prune",
     "DELETE FROM events WHERE id IN (SELECT id FROM events"
     " WHERE at < now() - make_interval(secs => $1::float8) ORDER BY at LIMIT $2::int)"},
    /* Pools with pending counts get their throttle row; counts of pools gone are dropped. */
    {"event_ingest_pools",
     "WITH gone AS (DELETE FROM event_ingest_pending p"
     "  WHERE NOT EXISTS (SELECT 1 FROM pools WHERE id = p.pool_id))"
     " INSERT INTO event_ingest_throttle (pool_id)"
     " SELECT DISTINCT p.pool_id FROM event_ingest_pending p JOIN pools ON pools.id = p.pool_id"
     " ORDER BY 1 ON CONFLICT (pool_id) DO NOTHING"},
    /* SKIP LOCKED: another replica flushing the same pool right now does it instead. The
     * counts are taken as this statement sees them; later ones wait for the next flush. */
    {"event_ingest_flush",
     "WITH due AS (SELECT t.pool_id FROM event_ingest_throttle t"
     "  WHERE (t.last_emitted_at IS NULL"
     "   OR t.last_emitted_at <= now() - make_interval(secs => $1::float8))"
     "   AND EXISTS (SELECT 1 FROM event_ingest_pending p WHERE p.pool_id = t.pool_id)"
     "  ORDER BY t.pool_id FOR UPDATE SKIP LOCKED),"
     " taken AS (DELETE FROM event_ingest_pending p USING due WHERE p.pool_id = due.pool_id"
     "  RETURNING p.pool_id, p.records, p.window_end_max),"
     " upd AS (UPDATE event_ingest_throttle t SET last_emitted_at = now() FROM due"
     "  WHERE t.pool_id = due.pool_id)"
     " INSERT INTO events (type, pool_id, data)"
     " SELECT 'work_reports.ingested', pool_id, jsonb_build_object('records', sum(records),"
     "  'window_end_max', " DB_TS("max(window_end_max)") ") FROM taken"
                                                         " GROUP BY pool_id ORDER BY pool_id"},
    {"event_ticket_insert",
     "INSERT INTO event_tickets (hash, sub, role, principal, expires_at)"
     " VALUES ($1, $2, $3, $4::jsonb, now() + make_interval(secs => $5::int))"
     " RETURNING " DB_TS("expires_at") " AS expires_at"},
    {"event_ticket_redeem", "UPDATE event_tickets SET used_at = now()"
                            " WHERE hash = $1 AND used_at IS NULL AND expires_at > now()"
                            " RETURNING sub, role, principal::text AS principal"},
    {"event_tickets_prune",
     "DELETE FROM event_tickets WHERE expires_at < now() - interval '1 minute'"},
};
const size_t db_event_nstmts = sizeof db_event_stmts / sizeof db_event_stmts[0];

const char *const db_event_types[] = {
#define EVENT_TYPE(name) name,
#include "db/event_types.def"
#undef EVENT_TYPE
    NULL};
const int db_event_ntypes = (int)(sizeof db_event_types / sizeof db_event_types[0]) - 1;

int db_event_type_known(const char *name)
{
    for (int i = 0; i < db_event_ntypes; i++)
        if (strcmp(db_event_types[i], name) == 0)
            return 1;
    return 0;
}

enum db_status db_events_emit(struct db_conn *c, const char *type, const char *pool_id,
                              const char *host_id, const char *data_json)
{
    const char *p[4] = {type, pool_id, host_id, data_json};
    return db_exec_noresult(c, "event_emit", 4, p);
}

enum db_status db_events_max_id(struct db_conn *c, int64_t *max)
{
    PGresult *r;
    *max = 0;
    enum db_status s = db_exec(c, "event_max_id", 0, NULL, &r);
    if (s == DB_ONE_RESULT)
        *max = strtoll(db_str(r, 0, "max_id"), NULL, 10);
    PQclear(r);
    return s;
}

void db_event_rows_free(struct db_event_rows *rows)
{
    free(rows->rows);
    PQclear(rows->res);
    memset(rows, 0, sizeof *rows);
}

enum db_status db_event_rows_decode(PGresult *r, struct db_event_rows *out)
{
    enum { C_ID, C_TYPE, C_POOL, C_HOST, C_PROJECT, C_DOC, C_N };
    static const char *const names[C_N] = {"id", "type", "pool_id", "host_id", "project_id", "doc"};
    int col[C_N];
    int n = PQntuples(r);
    memset(out, 0, sizeof *out);
    out->res = r;
    out->rows = calloc((size_t)n + 1, sizeof *out->rows);
    if (out->rows == NULL) {
        db_event_rows_free(out);
        return DB_HARD_ERROR;
    }
    db_cols(r, names, C_N, col);
    for (int i = 0; i < n; i++) {
        struct db_event_row *e = &out->rows[i];
        e->id = strtoll(PQgetvalue(r, i, col[C_ID]), NULL, 10);
        e->type = PQgetvalue(r, i, col[C_TYPE]);
        e->pool_id = PQgetvalue(r, i, col[C_POOL]);
        e->host_id = PQgetvalue(r, i, col[C_HOST]);
        e->project_id = PQgetvalue(r, i, col[C_PROJECT]);
        e->doc = PQgetvalue(r, i, col[C_DOC]);
    }
    out->n = n;
    return n == 0 ? DB_NO_RESULTS : n == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

/* Runs stmt and decodes its events into *out (freed first). */
static enum db_status exec_rows(struct db_conn *c, const char *stmt, int n, const char *const *p,
                                struct db_event_rows *out)
{
    PGresult *r;
    db_event_rows_free(out);
    enum db_status s = db_exec(c, stmt, n, p, &r);
    return s < 0 ? s : db_event_rows_decode(r, out);
}

enum db_status db_events_after(struct db_conn *c, int64_t after, int limit,
                               struct db_event_rows *out)
{
    char a[24], l[16];
    snprintf(a, sizeof a, "%lld", (long long)after);
    snprintf(l, sizeof l, "%d", limit);
    const char *p[2] = {a, l};
    return exec_rows(c, "event_after", 2, p, out);
}

enum db_status db_events_backlog(struct db_conn *c, int64_t after, int64_t upto, const char *types,
                                 const char *pool_id, const char *host_id, const char *projects,
                                 int limit, struct db_event_rows *out)
{
    char a[24], u[24], l[16];
    snprintf(a, sizeof a, "%lld", (long long)after);
    snprintf(u, sizeof u, "%lld", (long long)upto);
    snprintf(l, sizeof l, "%d", limit);
    const char *p[7] = {a, u, types, pool_id, host_id, l, projects};
    return exec_rows(c, "event_backlog", 7, p, out);
}

enum db_status db_events_prune(struct db_conn *c, long retention_s, int batch, long *deleted)
{
    char ret[24], b[16];
    snprintf(ret, sizeof ret, "%ld", retention_s);
    snprintf(b, sizeof b, "%d", batch);
    const char *p[2] = {ret, b};
    return db_exec_count(c, "event_prune", 2, p, deleted);
}

enum db_status db_events_ingest_flush(struct db_conn *c, long throttle_s, long *emitted)
{
    char t[24];
    snprintf(t, sizeof t, "%ld", throttle_s);
    const char *p[1] = {t};
    enum db_status s = db_exec_noresult(c, "event_ingest_pools", 0, NULL);
    if (s < 0)
        return s;
    return db_exec_count(c, "event_ingest_flush", 1, p, emitted);
}

enum db_status db_event_ticket_insert(struct db_conn *c, const char *hash_hex, const char *sub,
                                      const char *role, const char *principal, int ttl_s,
                                      char *expires_at, size_t len)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", ttl_s);
    const char *p[5] = {hash_hex, sub, role, principal, ttl};
    PGresult *r;
    enum db_status s = db_exec(c, "event_ticket_insert", 5, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "expires_at", expires_at, len);
    PQclear(r);
    return s;
}

enum db_status db_event_ticket_redeem(struct db_conn *c, const char *hash_hex, char *sub,
                                      size_t sublen, char *role, size_t rolelen, char **principal)
{
    const char *p[1] = {hash_hex};
    PGresult *r;
    *principal = NULL;
    enum db_status s = db_exec(c, "event_ticket_redeem", 1, p, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        db_copy(r, 0, "sub", sub, sublen);
        db_copy(r, 0, "role", role, rolelen);
        *principal = db_dup(r, 0, "principal", &oom);
        if (oom)
            s = DB_HARD_ERROR;
    }
    PQclear(r);
    return s;
}

enum db_status db_event_tickets_prune(struct db_conn *c, long *deleted)
{
    return db_exec_count(c, "event_tickets_prune", 0, NULL, deleted);
}
