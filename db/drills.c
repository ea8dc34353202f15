/* drills.c — restore drills. */
#include "db/drills.h"

#include <stdio.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

// clang-format off
#define DRILL_DOC(d)                                                                         \
    "json_build_object('id', " d ".id, 'host_id', " d ".host_id,"                            \
    " 'project', " DB_HOST_PROJECT_JSON(d ".host_id") ","                                     \
    " 'pool_id', " d ".pool_id, 'job_id', " d ".job_id, 'stack_id', " d ".stack_id,"         \
    " 'verdict', " d ".verdict, 'reason', " d ".reason,"                                     \
    " 'restore_seconds', " d ".restore_seconds, 'start_seconds', " d ".start_seconds,"       \
    " 'first_work_seconds', " d ".first_work_seconds,"                                       \
    " 'recovery_seconds', " d ".recovery_seconds,"                                           \
    " 'max_recovery_seconds', " d ".max_recovery_seconds,"                                   \
    " 'bytes_restored', " d ".bytes_restored,"                                               \
    " 'restore_mb_per_second', CASE WHEN " d ".restore_seconds > 0 THEN"                     \
    "   round((" d ".bytes_restored / 1e6 / " d ".restore_seconds)::numeric, 3) END,"       \
    " 'steps', " d ".steps, 'started_at', " DB_TS(d ".started_at") ","                       \
    " 'finished_at', " DB_TS(d ".finished_at") ")::text"
// clang-format on

const struct db_stmt db_drill_stmts[] = {
    {"drill_insert",
     "INSERT INTO drills (host_id, pool_id, job_id, stack_id, verdict, reason, restore_seconds,"
     " start_seconds, first_work_seconds, recovery_seconds, max_recovery_seconds,"
     " bytes_restored, steps, started_at)"
     " VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6, $7::float8, $8::float8,"
     " $9::float8, $10::float8, $11::float8, $12::bigint, $13::jsonb, $14::timestamptz)"
     " RETURNING id::text"},
    {"drill_get", "SELECT " DRILL_DOC("d") " AS doc FROM drills d WHERE d.id = $1::uuid"
                                           " AND " DB_HOST_IN_SCOPE("d.host_id", "$2", "NULL")},
    {"drill_list",
     "SELECT " DRILL_DOC("d") " AS doc, d.seq::text AS key FROM drills d"
                              " WHERE ($1::uuid IS NULL OR d.host_id = $1)"
                              "   AND ($2::text IS NULL OR d.verdict = $2)"
                              "   AND ($7::uuid IS NULL OR d.pool_id = $7)"
                              "   AND d.seq < coalesce($3::bigint, 9223372036854775807)"
                              "   AND " DB_HOST_IN_SCOPE(
                                  "d.host_id", "$5", "$6") " ORDER BY d.seq DESC LIMIT $4::int"},
    {"drill_pool_ready",
     "SELECT (jsonb_typeof(p.spec::jsonb->'durable_state'->'artifacts') = 'array')::int::text"
     "   AS durable,"
     " (jsonb_typeof(p.spec::jsonb->'gate'->'workload'->'command') = 'array')::int::text"
     "   AS workload"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " WHERE h.id = $1::uuid AND " DB_IN_SCOPE("h.project_id", "$2")},
    /* one replica acts per pass (an arbitrary fixed key: "drill" in ASCII) */
    {"drill_lock", "SELECT pg_try_advisory_xact_lock(6578464540616300) AS locked"},
    /* one drained host per due pool; pools with a drill job active are skipped (one host
     * at a time) */
    {"drill_due",
     "SELECT DISTINCT ON (p.id) h.id::text AS host_id"
     " FROM pools p JOIN hosts h ON h.pool_id = p.id AND h.state = 'drained'"
     "  AND h.quarantined_at IS NULL"
     " WHERE jsonb_typeof(p.spec::jsonb->'drill'->'every_days') = 'number'"
     "   AND jsonb_typeof(p.spec::jsonb->'durable_state'->'artifacts') = 'array'"
     "   AND jsonb_typeof(p.spec::jsonb->'gate'->'workload'->'command') = 'array'"
     "   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = h.id"
     "                   AND j.state IN ('queued', 'running'))"
     "   AND NOT EXISTS (SELECT 1 FROM jobs j JOIN hosts o ON o.id = j.host_id"
     "                   WHERE o.pool_id = p.id AND j.kind = 'drill'"
     "                   AND j.state IN ('queued', 'running'))"
     "   AND coalesce((SELECT max(d.finished_at) FROM drills d WHERE d.pool_id = p.id),"
     "                '-infinity') < now() - make_interval(days =>"
     "                (p.spec::jsonb->'drill'->>'every_days')::numeric::int)"
     " ORDER BY p.id, (SELECT max(d.finished_at) FROM drills d WHERE d.host_id = h.id)"
     "   ASC NULLS FIRST, h.seq"
     " LIMIT $1::int"},
};
const size_t db_drill_nstmts = sizeof db_drill_stmts / sizeof db_drill_stmts[0];

static const char *secs(double v, char *buf, size_t n)
{
    if (!(v >= 0))
        return NULL;
    snprintf(buf, n, "%.3f", v);
    return buf;
}

enum db_status db_drill_insert(struct db_conn *c, const struct db_drill_new *d, char id[37])
{
    char rs[32], ss[32], fs[32], ts[32], ms[32], by[32];
    snprintf(by, sizeof by, "%lld", d->bytes_restored > 0 ? d->bytes_restored : 0);
    const char *p[14] = {d->host_id,
                         d->pool_id,
                         d->job_id,
                         d->stack_id,
                         d->verdict,
                         d->reason,
                         secs(d->restore_s, rs, sizeof rs),
                         secs(d->start_s, ss, sizeof ss),
                         secs(d->first_work_s, fs, sizeof fs),
                         secs(d->recovery_s, ts, sizeof ts),
                         secs(d->max_recovery_s, ms, sizeof ms),
                         by,
                         d->steps_json,
                         d->started_at};
    PGresult *r;
    enum db_status s = db_exec(c, "drill_insert", 14, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "id", id, 37);
    PQclear(r);
    return s;
}

enum db_status db_drill_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "drill_get", 2, p, doc);
}

enum db_status db_drill_list(struct db_conn *c, const struct db_drill_filter *f,
                             struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->host_id, f->verdict,    f->after_seq, limit,
                        f->scope,   f->project_id, f->pool_id};
    return db_exec_page(c, "drill_list", 7, p, page);
}

enum db_status db_drill_pool_ready(struct db_conn *c, const char *host_id, const char *scope,
                                   int *durable, int *workload)
{
    const char *p[2] = {host_id, scope};
    PGresult *r;
    enum db_status s = db_exec(c, "drill_pool_ready", 2, p, &r);
    *durable = *workload = 0;
    if (s == DB_ONE_RESULT) {
        *durable = !strcmp(PQgetvalue(r, 0, 0), "1");
        *workload = !strcmp(PQgetvalue(r, 0, 1), "1");
    }
    PQclear(r);
    return s;
}

enum db_status db_drill_due(struct db_conn *c, int max, char (*ids)[37], int *n)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", max);
    const char *p[1] = {lim};
    PGresult *r;
    enum db_status s = db_exec(c, "drill_due", 1, p, &r);
    *n = 0;
    if (s >= 0) {
        for (int i = 0; i < PQntuples(r) && i < max; i++)
            snprintf(ids[(*n)++], 37, "%s", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    return s;
}

enum db_status db_drill_lock(struct db_conn *c, int *locked)
{
    PGresult *r;
    enum db_status s = db_exec(c, "drill_lock", 0, NULL, &r);
    *locked = s == DB_ONE_RESULT && !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    return s;
}
