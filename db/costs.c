/* costs.c — see costs.h. The held-time SQL: each change lasts until the next one (lead),
 * the last until min(to, now()); intervals in a held state are clipped to the window and
 * summed. The same arithmetic, in C, is plan_held_seconds (planner/costs.c). */
#include "db/costs.h"

#include <stddef.h>

#define EPOCH(e) "extract(epoch FROM " e ")::float8"

const struct db_stmt db_cost_stmts[] = {
    {"cost_hosts",
     "WITH w AS (SELECT $1::timestamptz AS f, least($2::timestamptz, now()) AS t),"
     " c AS (SELECT s.host_id, s.at, s.to_state,"
     "        lead(s.at) OVER (PARTITION BY s.host_id ORDER BY s.at, s.id) AS next_at"
     "       FROM host_state_history s, w WHERE s.at < w.t),"
     " held AS (SELECT c.host_id, sum(" EPOCH("least(coalesce(c.next_at, w.t), w.t) - greatest(c.at, w.f)") ")"
     "        AS held_s"
     "       FROM c, w WHERE w.t > w.f AND c.to_state <> 'stopped'"
     "        AND (c.next_at IS NULL OR c.next_at > w.f) GROUP BY c.host_id),"
     " rep AS (SELECT DISTINCT host_id FROM work_reports"
     "       WHERE window_start >= $1::timestamptz AND window_start < $2::timestamptz)"
     " SELECT h.id::text, h.name, p.id::text AS pool_id, p.name AS pool_name,"
     "  (p.spec->>'price_per_hour')::float8,"
     "  coalesce((p.spec->>'storage_price_per_gb_month')::float8, 0),"
     "  coalesce((p.spec->>'egress_price_per_gb')::float8, 0),"
     "  coalesce((p.spec->>'overhead_pct')::float8, 0),"
     "  coalesce(held.held_s, 0)"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id LEFT JOIN held ON held.host_id = h.id"
     " WHERE held.host_id IS NOT NULL OR h.id IN (SELECT host_id FROM rep)"
     " ORDER BY h.id"},
    {"cost_reports",
     "SELECT r.host_id::text, r.brief_id::text, b.name, r.unit, count(*)::int,"
     "  sum(r.completed)::float8, sum(r.failed)::float8, sum(r.retried)::float8,"
     "  sum(r.busy_seconds)::float8, sum(" EPOCH("r.window_end - r.window_start") "),"
     "  coalesce(sum(r.storage_gb * " EPOCH("r.window_end - r.window_start") "), 0),"
     "  coalesce(sum(" EPOCH("r.window_end - r.window_start") ")"
     "   FILTER (WHERE r.storage_gb IS NOT NULL), 0),"
     "  coalesce(sum(r.bytes_moved), 0)::float8"
     " FROM work_reports r LEFT JOIN briefs b ON b.id = r.brief_id"
     " WHERE r.window_start >= $1::timestamptz AND r.window_start < $2::timestamptz"
     " GROUP BY r.host_id, r.brief_id, b.name, r.unit"
     " ORDER BY r.host_id, r.brief_id NULLS FIRST, r.unit"},
};
const size_t db_cost_nstmts = sizeof db_cost_stmts / sizeof db_cost_stmts[0];

enum db_status db_cost_hosts(struct db_conn *c, const char *from, const char *to,
                             PGresult **res)
{
    const char *p[2] = {from, to};
    return db_exec(c, "cost_hosts", 2, p, res);
}

enum db_status db_cost_reports(struct db_conn *c, const char *from, const char *to,
                               PGresult **res)
{
    const char *p[2] = {from, to};
    return db_exec(c, "cost_reports", 2, p, res);
}
