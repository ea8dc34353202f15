/* recommend.c — see recommend.h. */
#include "db/recommend.h"

#include <stddef.h>

const struct db_stmt db_recommend_stmts[] = {
    {"recommend_hosts",
     "SELECT h.id::text, h.pool_id::text, h.state,"
     "  (h.accepted_gate_run_id IS NOT NULL AND h.state = 'ready'),"
     "  EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = h.id AND j.state IN ('queued', 'running')),"
     "  coalesce((p.spec->>'idle_stop_after_seconds')::float8, 1800),"
     "  (p.spec->>'price_per_hour')::float8, p.gpu_model,"
     "  coalesce((p.spec->>'gpu_count')::int, 1),"
     "  r.n,"
     "  CASE WHEN r.n > 0 THEN greatest(0, extract(epoch FROM"
     "   $1::timestamptz - coalesce(r.last_useful, r.first_start))::float8) END,"
     "  r.brief_id::text, hr.p95, hr.queue,"
     "  coalesce((p.spec #>> '{recommendation_thresholds,scale_up_utilization}')::float8, 0.85),"
     "  coalesce((p.spec #>> '{recommendation_thresholds,scale_down_utilization}')::float8, 0.30),"
     "  coalesce((p.spec #>> '{recommendation_thresholds,investigate_failed_share}')::float8, 0.05),"
     "  coalesce((p.spec #>> '{recommendation_thresholds,investigate_cost_increase}')::float8, 0.25)"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " CROSS JOIN LATERAL (SELECT count(*)::int AS n,"
     "    max(w.window_end) FILTER (WHERE w.completed > 0 OR w.busy_seconds > 0) AS last_useful,"
     "    min(w.window_start) AS first_start,"
     "    (array_agg(w.brief_id ORDER BY w.window_end DESC, w.window_start DESC)"
     "      FILTER (WHERE w.brief_id IS NOT NULL))[1] AS brief_id"
     "   FROM work_reports w WHERE w.host_id = h.id"
     "    AND w.window_end > $1::timestamptz - interval '24 hours'"
     "    AND w.window_start < $1::timestamptz) r"
     " CROSS JOIN LATERAL (SELECT max(w.p95_latency_ms) AS p95, max(w.queue_delay_ms) AS queue"
     "   FROM work_reports w WHERE w.host_id = h.id"
     "    AND w.window_start >= $1::timestamptz - interval '1 hour'"
     "    AND w.window_start < $1::timestamptz) hr"
     " WHERE h.state <> 'stopped'"
     " ORDER BY h.id"},
    {"recommend_briefs", "SELECT id::text, spec::text FROM briefs ORDER BY id"},
    {"idle_policy_lock", "SELECT pg_try_advisory_xact_lock(" DB_IDLE_POLICY_LOCK_KEY ")"},
    {"idle_policy_pool", "SELECT coalesce((p.spec->>'auto_stop')::boolean, false)"
                         " FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE h.id = $1::uuid"},
};
const size_t db_recommend_nstmts = sizeof db_recommend_stmts / sizeof db_recommend_stmts[0];

enum db_status db_recommend_hosts(struct db_conn *c, const char *at, PGresult **res)
{
    const char *p[1] = {at};
    return db_exec(c, "recommend_hosts", 1, p, res);
}

enum db_status db_recommend_briefs(struct db_conn *c, PGresult **res)
{
    return db_exec(c, "recommend_briefs", 0, NULL, res);
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
