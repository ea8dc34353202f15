/* recommend.c — see recommend.h. */
#include "db/recommend.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "db/usage_sql.h"

#define EPOCH_OF(x) USAGE_EPOCH(x)
/* Seconds of the held interval [a, b) of i inside [f, t). */
#define HELD(f, t) EPOCH_OF("greatest(least(i.b, " t ") - greatest(i.a, " f "), interval '0')")

/* Usage (db_recommend_usage): the 48 h before at in three segments, each tagged with its
 * part: 0 [at − 1 h, at), 1 [at − 24 h, at − 1 h), 2 [at − 48 h, at − 24 h). A segment
 * [x, y) is read as whole 6-hour quarters [cq, fq) from their rollup, whole hours
 * outside them from the hour rollup, and the partial hours [x, ch) and [fh, y) from the
 * reports: every report falls in the part of its own window_start, and no bucket
 * straddles a segment edge. Parameters: $1 at − 24 h (the lookback's start), then per
 * segment k = 0, 1, 2 from $(2 + 6k): x, y, ch, fh, cq, fq (computed in C, bounds()). */
#define T(n) "$" #n "::timestamptz"
#define ROLL(table, part, cond)                                                           \
    "SELECT d.host_id, d.brief_id, d.unit, " part " AS part, " USAGE_ROLLUP_SUMS ","        \
    " d.useful_end, d.min_start, d.max_end, d.p95_max AS p95, d.queue_max AS queue"       \
    " FROM " table " d WHERE " cond
#define RAW(part, cond)                                                                   \
    "SELECT r.host_id, r.brief_id, r.unit, " part ", " USAGE_RAW_SUMS ","                  \
    " CASE WHEN r.completed > 0 OR r.busy_seconds > 0 THEN r.window_end END,"             \
    " r.window_start, r.window_end, r.p95_latency_ms, r.queue_delay_ms"                    \
    " FROM work_reports r WHERE " cond
#define SEGMENT(part, x, y, ch, fh, cq, fq)                                               \
    ROLL("work_report_quarters", part, "d.bucket >= " cq " AND d.bucket < " fq)           \
    " UNION ALL " ROLL("work_report_hours", part, USAGE_BEFORE("d.bucket", ch, fh, cq))   \
    " UNION ALL " ROLL("work_report_hours", part, USAGE_AFTER("d.bucket", fh, cq, fq))    \
    " UNION ALL " RAW(part, USAGE_BEFORE("r.window_start", x, y, ch))                     \
    " UNION ALL " RAW(part, USAGE_AFTER("r.window_start", y, ch, fh))

const struct db_stmt db_recommend_stmts[] = {
    {"recommend_hosts",
     "WITH p AS MATERIALIZED (SELECT id, gpu_model,"
     "  (spec->>'idle_stop_after_seconds')::float8 AS idle,"
     "  (spec->>'price_per_hour')::float8 AS price,"
     "  coalesce((spec->>'gpu_count')::int, 1) AS gpu_count,"
     "  (spec #>> '{recommendation_thresholds,scale_up_utilization}')::float8 AS up,"
     "  (spec #>> '{recommendation_thresholds,scale_down_utilization}')::float8 AS down,"
     "  (spec #>> '{recommendation_thresholds,investigate_failed_share}')::float8 AS share,"
     "  (spec #>> '{recommendation_thresholds,investigate_cost_increase}')::float8 AS rise"
     "  FROM pools)"
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
     " " USAGE_POOL_PRICES
     " SELECT h.id::text, h.name, p.id::text, p.name, p.hour, p.storage, p.egress, p.overhead,"
     "  coalesce(held.hour, 0), coalesce(held.day, 0), coalesce(held.prev, 0)"
     " FROM hosts h JOIN p ON p.id = h.pool_id LEFT JOIN held ON held.host_id = h.id"
     " ORDER BY h.id"},
    {"recommend_usage",
     "WITH src AS (" SEGMENT("0", T(2), T(3), T(4), T(5), T(6), T(7))
     "  UNION ALL " SEGMENT("1", T(8), T(9), T(10), T(11), T(12), T(13))
     "  UNION ALL " SEGMENT("2", T(14), T(15), T(16), T(17), T(18), T(19)) "),"
     " g AS (SELECT host_id, brief_id, unit, part, max_end > $1::timestamptz AS lb,"
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

/* The windows' bounds: held time ($1 at, $2 at − 1 h, $3 at − 24 h, $4 at − 48 h) and
 * usage (see SEGMENT: 19 values). */
struct rec_bounds {
    char held[4][40];
    char usage[19][40];
};

static void bounds(int64_t at_us, struct rec_bounds *b)
{
    const int64_t H = 3600LL * 1000000, Q = 6 * H;
    const int64_t edge[4] = {at_us, at_us - H, at_us - 24 * H, at_us - 48 * H};
    for (int i = 0; i < 4; i++)
        util_rfc3339(edge[i], b->held[i], sizeof b->held[i]);
    util_rfc3339(edge[2], b->usage[0], sizeof b->usage[0]);
    for (int k = 0; k < 3; k++) { /* segment k: [edge[k + 1], edge[k]) */
        int64_t x = edge[k + 1], y = edge[k];
        const int64_t v[6] = {x, y, util_ceil_us(x, H), util_floor_us(y, H), util_ceil_us(x, Q),
                              util_floor_us(y, Q)};
        for (int j = 0; j < 6; j++)
            util_rfc3339(v[j], b->usage[1 + 6 * k + j], sizeof b->usage[0]);
    }
}

enum db_status db_recommend_held(struct db_conn *c, int64_t at_us, PGresult **res)
{
    struct rec_bounds b;
    bounds(at_us, &b);
    const char *p[4] = {b.held[0], b.held[1], b.held[2], b.held[3]};
    return db_exec(c, "recommend_held", 4, p, res);
}

enum db_status db_recommend_usage(struct db_conn *c, int64_t at_us, PGresult **res)
{
    struct rec_bounds b;
    bounds(at_us, &b);
    const char *p[19];
    for (int i = 0; i < 19; i++)
        p[i] = b.usage[i];
    return db_exec(c, "recommend_usage", 19, p, res);
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
