/* recommend.c — see recommend.h. */
#include "db/recommend.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"

#define EPOCH_OF(x) "extract(epoch FROM " x ")::float8"
/* Seconds of the held interval [a, b) of i inside [f, t). */
#define HELD(f, t) EPOCH_OF("greatest(least(i.b, " t ") - greatest(i.a, " f "), interval '0')")

/* Usage parameters (db_recommend_usage): $1 at, $2 at − 1 h, $3 at − 24 h, $4 at − 48 h,
 * $5 the first whole hour from $4, $6 the hour of $1, $7 the hour of $3, $8 the hour of
 * $2. Whole hours in [$5, $6) are read from the hour rollup, except the two that hold a
 * window edge ($7, $8): those and the partial hours at both ends are read from the
 * reports, so that every report falls in the windows of its own window_start. */
#define HOUR_ROWS                                                                         \
    "SELECT d.host_id, d.brief_id, d.unit, d.bucket AS ws, d.reports, d.completed,"       \
    " d.failed, d.retried, d.busy_seconds, d.covered_seconds, d.storage_gb_seconds,"     \
    " d.storage_seconds, d.bytes_moved, d.useful_end, d.min_start, d.max_end,"           \
    " d.p95_max AS p95, d.queue_max AS queue FROM work_report_hours d"                    \
    " WHERE d.bucket >= $5::timestamptz AND d.bucket < $6::timestamptz AND d.bucket <> $7::timestamptz AND d.bucket <> $8::timestamptz"
#define RAW_SECS EPOCH_OF("r.window_end - r.window_start")
#define RAW_ROWS(cond)                                                                    \
    "SELECT r.host_id, r.brief_id, r.unit, r.window_start, 1, r.completed::float8,"       \
    " r.failed::float8, r.retried::float8, r.busy_seconds, " RAW_SECS ","                 \
    " coalesce(r.storage_gb * " RAW_SECS ", 0),"                                          \
    " CASE WHEN r.storage_gb IS NULL THEN 0 ELSE " RAW_SECS " END,"                       \
    " coalesce(r.bytes_moved, 0)::float8,"                                                \
    " CASE WHEN r.completed > 0 OR r.busy_seconds > 0 THEN r.window_end END,"             \
    " r.window_start, r.window_end, r.p95_latency_ms, r.queue_delay_ms"                    \
    " FROM work_reports r WHERE " cond

const struct db_stmt db_recommend_stmts[] = {
    {"recommend_hosts",
     "WITH p AS MATERIALIZED (SELECT id, gpu_model,"
     "  coalesce((spec->>'idle_stop_after_seconds')::float8, 1800) AS idle,"
     "  (spec->>'price_per_hour')::float8 AS price,"
     "  coalesce((spec->>'gpu_count')::int, 1) AS gpu_count,"
     "  coalesce((spec #>> '{recommendation_thresholds,scale_up_utilization}')::float8, 0.85) AS up,"
     "  coalesce((spec #>> '{recommendation_thresholds,scale_down_utilization}')::float8, 0.30)"
     "   AS down,"
     "  coalesce((spec #>> '{recommendation_thresholds,investigate_failed_share}')::float8, 0.05)"
     "   AS share,"
     "  coalesce((spec #>> '{recommendation_thresholds,investigate_cost_increase}')::float8, 0.25)"
     "   AS rise FROM pools)"
     " SELECT h.id::text, h.pool_id::text, h.state,"
     "  (h.accepted_gate_run_id IS NOT NULL AND h.state = 'ready'),"
     "  EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = h.id AND j.state IN ('queued', 'running')),"
     "  p.idle, p.price, p.gpu_model, p.gpu_count, p.up, p.down, p.share, p.rise"
     " FROM hosts h JOIN p ON p.id = h.pool_id"
     " WHERE h.state <> 'stopped'"
     " ORDER BY h.id"},
    {"recommend_held",
     "WITH c AS (SELECT s.host_id, s.at, s.to_state,"
     "   lead(s.at) OVER (PARTITION BY s.host_id ORDER BY s.at, s.id) AS next_at"
     "  FROM host_state_history s WHERE s.at < least($1::timestamptz, now())),"
     " i AS (SELECT host_id, at AS a, least(coalesce(next_at, least($1::timestamptz, now())),"
     "   least($1::timestamptz, now())) AS b FROM c WHERE to_state <> 'stopped'"
     "   AND (next_at IS NULL OR next_at > $4::timestamptz)),"
     " held AS (SELECT host_id,"
     "   sum(" HELD("$2::timestamptz", "$1::timestamptz") ") AS hour,"
     "   sum(" HELD("$3::timestamptz", "$1::timestamptz") ") AS day,"
     "   sum(" HELD("$4::timestamptz", "$3::timestamptz") ") AS prev"
     "  FROM i GROUP BY host_id),"
     " p AS MATERIALIZED (SELECT id, name, (spec->>'price_per_hour')::float8 AS hour,"
     "  coalesce((spec->>'storage_price_per_gb_month')::float8, 0) AS storage,"
     "  coalesce((spec->>'egress_price_per_gb')::float8, 0) AS egress,"
     "  coalesce((spec->>'overhead_pct')::float8, 0) AS overhead FROM pools)"
     " SELECT h.id::text, h.name, p.id::text, p.name, p.hour, p.storage, p.egress, p.overhead,"
     "  coalesce(held.hour, 0), coalesce(held.day, 0), coalesce(held.prev, 0)"
     " FROM hosts h JOIN p ON p.id = h.pool_id LEFT JOIN held ON held.host_id = h.id"
     " ORDER BY h.id"},
    {"recommend_usage",
     "WITH src AS (" HOUR_ROWS " UNION ALL " RAW_ROWS("r.window_start >= $4::timestamptz AND r.window_start < $5::timestamptz")
     "  UNION ALL " RAW_ROWS("r.window_start >= $7::timestamptz AND r.window_start < $7::timestamptz + interval '1 hour'")
     "  UNION ALL " RAW_ROWS("r.window_start >= $8::timestamptz AND r.window_start < $8::timestamptz + interval '1 hour'")
     "  UNION ALL " RAW_ROWS("r.window_start >= $6::timestamptz AND r.window_start < $1::timestamptz") "),"
     " g AS (SELECT host_id, brief_id, unit,"
     "  CASE WHEN ws >= $2::timestamptz THEN 0 WHEN ws >= $3::timestamptz THEN 1 ELSE 2 END AS part, max_end > $3::timestamptz AS lb,"
     "  sum(reports)::int AS reports, sum(completed) AS completed, sum(failed) AS failed,"
     "  sum(retried) AS retried, sum(busy_seconds) AS busy, sum(covered_seconds) AS covered,"
     "  sum(storage_gb_seconds) AS sgs, sum(storage_seconds) AS ss, sum(bytes_moved) AS bytes,"
     "  max(useful_end) AS useful_end, min(min_start) AS min_start, max(max_end) AS max_end,"
     "  max(p95) AS p95, max(queue) AS queue"
     "  FROM src GROUP BY 1, 2, 3, 4, 5)"
     " SELECT g.host_id::text, g.brief_id::text, br.name, g.unit, g.reports, g.completed,"
     "  g.failed, g.retried, g.busy, g.covered, g.sgs, g.ss, g.bytes, g.part, g.lb,"
     "  " EPOCH_OF("g.useful_end") ", " EPOCH_OF("g.min_start") ", " EPOCH_OF("g.max_end") ","
     "  g.p95, g.queue"
     " FROM g LEFT JOIN briefs br ON br.id = g.brief_id"
     " ORDER BY g.host_id, g.brief_id NULLS FIRST, g.unit, g.part"},
    {"recommend_briefs", "SELECT id::text, spec::text FROM briefs ORDER BY id"},
    {"recommend_sync",
     "WITH cur AS (SELECT (e->>'id')::uuid AS id, e->>'action' AS action,"
     "   (e #>> '{target,pool_id}')::uuid AS pool_id,"
     "   (e #>> '{target,host_ids,0}')::uuid AS host_id, e AS doc"
     "  FROM jsonb_array_elements($1::jsonb) e),"
     " gone AS (DELETE FROM open_recommendations o"
     "  WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.id = o.id)"
     "  RETURNING o.id, o.action, o.pool_id, o.host_id),"
     " added AS (INSERT INTO open_recommendations (id, action, pool_id, host_id, doc)"
     "  SELECT id, action, pool_id, host_id, doc FROM cur ORDER BY id"
     "  ON CONFLICT (id) DO NOTHING RETURNING id, pool_id, host_id, doc),"
     " ev AS (INSERT INTO events (type, pool_id, host_id, data)"
     "  SELECT 'recommendation.withdrawn', pool_id, host_id,"
     "   jsonb_build_object('recommendation_id', id, 'action', action) FROM gone"
     "  UNION ALL SELECT 'recommendation.opened', pool_id, host_id,"
     "   jsonb_build_object('recommendation', doc) FROM added RETURNING 1)"
     " SELECT (SELECT count(*) FROM added)::text, (SELECT count(*) FROM gone)::text"},
    {"idle_policy_lock", "SELECT pg_try_advisory_xact_lock(" DB_IDLE_POLICY_LOCK_KEY ")"},
    {"idle_policy_pool", "SELECT coalesce((p.spec->>'auto_stop')::boolean, false)"
                         " FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE h.id = $1::uuid"},
};
const size_t db_recommend_nstmts = sizeof db_recommend_stmts / sizeof db_recommend_stmts[0];

enum db_status db_recommend_hosts(struct db_conn *c, PGresult **res)
{
    return db_exec(c, "recommend_hosts", 0, NULL, res);
}

/* The four windows' bounds, as db_recommend_usage's parameters $1..$8 (see above). */
static void bounds(int64_t at_us, char b[8][40])
{
    const int64_t H = 3600LL * 1000000;
    int64_t v[8];
    v[0] = at_us;
    v[1] = at_us - H;
    v[2] = at_us - 24 * H;
    v[3] = at_us - 48 * H;
    v[4] = util_ceil_us(v[3], H);
    v[5] = util_floor_us(v[0], H);
    v[6] = util_floor_us(v[2], H);
    v[7] = util_floor_us(v[1], H);
    for (int i = 0; i < 8; i++)
        util_rfc3339(v[i], b[i], sizeof b[i]);
    if (v[5] == at_us) { /* at on the hour: no hour holds a window edge */
        snprintf(b[6], sizeof b[6], "-infinity");
        snprintf(b[7], sizeof b[7], "-infinity");
    }
}

enum db_status db_recommend_held(struct db_conn *c, int64_t at_us, PGresult **res)
{
    char b[8][40];
    bounds(at_us, b);
    const char *p[4] = {b[0], b[1], b[2], b[3]};
    return db_exec(c, "recommend_held", 4, p, res);
}

enum db_status db_recommend_usage(struct db_conn *c, int64_t at_us, PGresult **res)
{
    char b[8][40];
    bounds(at_us, b);
    const char *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = b[i];
    return db_exec(c, "recommend_usage", 8, p, res);
}

enum db_status db_recommend_briefs(struct db_conn *c, PGresult **res)
{
    return db_exec(c, "recommend_briefs", 0, NULL, res);
}

enum db_status db_recommend_sync(struct db_conn *c, const char *items_json, long *opened,
                                 long *withdrawn)
{
    PGresult *r = NULL;
    const char *p[1] = {items_json};
    *opened = *withdrawn = 0;
    enum db_status s = db_exec(c, "recommend_sync", 1, p, &r);
    if (s > 0) {
        *opened = atol(PQgetvalue(r, 0, 0));
        *withdrawn = atol(PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return s;
}

enum db_status db_idle_policy_lock(struct db_conn *c, int *got)
{
    PGresult *r = NULL;
    *got = 0;
    enum db_status s = db_exec(c, "idle_policy_lock", 0, NULL, &r);
    if (s > 0)
        *got = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return s;
}

enum db_status db_idle_policy_auto_stop(struct db_conn *c, const char *host_id, int *auto_stop)
{
    PGresult *r = NULL;
    const char *p[1] = {host_id};
    *auto_stop = 0;
    enum db_status s = db_exec(c, "idle_policy_pool", 1, p, &r);
    if (s > 0)
        *auto_stop = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return s;
}
