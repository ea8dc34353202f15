/* recommend.c — see recommend.h. */
#include "db/recommend.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db_pg.h"
#include "db/decode.h"
#include "db/usage.h"
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
/* RF and WF: the failure class columns of a rollup row and of a report (usage_sql.h), each
 * with its leading comma, or "" (recommend_usage reads them only when a retry budget is
 * set: recommend_usage_failures). */
#define ROLL(table, part, cond, RF)                                                    \
    "SELECT d.host_id, d.brief_id, d.unit, " part " AS part, " USAGE_ROLLUP_SUMS ","   \
    " d.useful_end, d.min_start, d.max_end, d.p95_max AS p95, d.queue_max AS queue" RF \
    " FROM " table " d WHERE " cond
#define RAW(part, cond, WF)                                                   \
    "SELECT r.host_id, r.brief_id, r.unit, " part ", " USAGE_RAW_SUMS ","     \
    " CASE WHEN r.completed > 0 OR r.busy_seconds > 0 THEN r.window_end END," \
    " r.window_start, r.window_end, r.p95_latency_ms, r.queue_delay_ms" WF    \
    " FROM work_reports r WHERE " cond
// clang-format off
#define SEGMENT(part, x, y, ch, fh, cq, fq, RF, WF)                                              \
    ROLL("work_report_quarters", part, "d.bucket >= " cq " AND d.bucket < " fq, RF)              \
    " UNION ALL " ROLL("work_report_hours", part, USAGE_BEFORE("d.bucket", ch, fh, cq), RF)      \
    " UNION ALL " ROLL("work_report_hours", part, USAGE_AFTER("d.bucket", fh, cq, fq), RF)       \
    " UNION ALL " RAW(part, USAGE_BEFORE("r.window_start", x, y, ch), WF)                        \
    " UNION ALL " RAW(part, USAGE_AFTER("r.window_start", y, ch, fh), WF)

/* recommend_held: see db_rec_input.held ($1 at, $2 at − 1 h, $3 at − 24 h, $4 at − 48 h). */
#define HELD_SQL                                                                             \
    "WITH " DB_SERIAL_CTE ", c AS (SELECT s.host_id, s.at, s.to_state,"                    \
    "   lead(s.at) OVER (PARTITION BY s.host_id ORDER BY s.at, s.id) AS next_at"             \
    "  FROM host_state_history s WHERE s.at < least($1::timestamptz, now())),"               \
    " i AS (SELECT host_id, at AS a, least(coalesce(next_at, least($1::timestamptz, now())),"\
    "   least($1::timestamptz, now())) AS b FROM c WHERE to_state <> 'stopped'"              \
    "   AND (next_at IS NULL OR next_at > $4::timestamptz)),"                                \
    " held AS (SELECT host_id,"                                                              \
    "   sum(" HELD("$2::timestamptz", "$1::timestamptz") ") AS hour,"                        \
    "   sum(" HELD("$3::timestamptz", "$1::timestamptz") ") AS day,"                         \
    "   sum(" HELD("$4::timestamptz", "$3::timestamptz") ") AS prev"                         \
    "  FROM i GROUP BY host_id),"                                                            \
    " " USAGE_POOL_PRICES                                                                    \
    " SELECT h.id::text, h.name, p.id::text AS pool_id, p.name AS pool_name, p.hour,"        \
    "  " USAGE_HOST_PROJECT ","                                                              \
    "  p.storage, p.egress, p.overhead, coalesce(held.hour, 0) AS held_hour,"                \
    "  coalesce(held.day, 0) AS held_day, coalesce(held.prev, 0) AS held_prev"               \
    " FROM hosts h JOIN p ON p.id = h.pool_id LEFT JOIN held ON held.host_id = h.id"         \
    " ORDER BY h.id"

/* recommend_usage: see SEGMENT and db_rec_usage; with the failure classes (RF, WF, the
 * sums FS and the columns FC) for recommend_usage_failures. */
#define USAGE_SQL(RF, WF, FS, FC)                                                            \
    "WITH " DB_SERIAL_CTE ", src AS (" SEGMENT("0", T(2), T(3), T(4), T(5), T(6), T(7), RF, WF)                 \
    "  UNION ALL " SEGMENT("1", T(8), T(9), T(10), T(11), T(12), T(13), RF, WF)              \
    "  UNION ALL " SEGMENT("2", T(14), T(15), T(16), T(17), T(18), T(19), RF, WF) "),"       \
    " g AS (SELECT host_id, brief_id, unit, part, max_end > $1::timestamptz AS lb,"          \
    "  sum(reports)::int AS reports, sum(completed) AS completed, sum(failed) AS failed,"    \
    "  sum(retried) AS retried, sum(busy_seconds) AS busy, sum(covered_seconds) AS covered," \
    "  sum(storage_gb_seconds) AS sgs, sum(storage_seconds) AS ss, sum(bytes_moved) AS bytes,"\
    "  max(useful_end) AS useful_end, min(min_start) AS min_start, max(max_end) AS max_end," \
    "  max(p95) AS p95, max(queue) AS queue" FS "  FROM src GROUP BY 1, 2, 3, 4, 5)"          \
    " SELECT g.host_id::text, g.brief_id::text, br.name AS brief_name, g.unit, g.reports,"   \
    "  g.completed, g.failed, g.retried, g.busy, g.covered, g.sgs, g.ss, g.bytes, g.part, g.lb," \
    "  " EPOCH_OF("g.useful_end") " AS useful_end, " EPOCH_OF("g.min_start") " AS min_start," \
    "  " EPOCH_OF("g.max_end") " AS max_end, g.p95, g.queue" FC                              \
    " FROM g LEFT JOIN briefs br ON br.id = g.brief_id"                                      \
    " ORDER BY g.host_id, g.brief_id NULLS FIRST, g.unit, g.part"
#define USAGE_FAILS_FC                                                                       \
    ", g.fl_oom, g.fl_timeout, g.fl_data, g.fl_hardware, g.fl_preempted, g.fl_other,"        \
    " g.fl_reports, g.fl_units"
// clang-format on

// clang-format off
#define ORIGIN "timestamptz '2000-01-01 00:00Z'"
/* x rounded down and up to a bucket of width w (date_bin from 2000-01-01 UTC, as the
 * rollups of migrations/0014). */
#define FLOOR(w, x) "date_bin(interval '" w "', " x ", " ORIGIN ")"
#define CEIL(w, x) FLOOR(w, x " + interval '" w "' - interval '1 microsecond'")
#define AT "$1::timestamptz"

/* recommend_gpu_util ($1 at, $2 the default idle window in seconds): per pool, its window
 * [ws, at) cut into the raw edges [ws, m0) and [e5, at), whole 5-minute buckets
 * [m0, least(h0, e5)) and [h1, e5), and whole hours [h0, h1): every bucket ends before
 * its grain's watermark (done_upto) and at. Per host, one row per raw sample or rollup
 * bucket (n: its samples; ok: every GPU read), then summed. */
#define GPU_UTIL_BOUNDS                                                                     \
    "WITH " DB_SERIAL_CTE ", st AS (SELECT max(done_upto) FILTER (WHERE grain = '5m') AS d5,"                 \
    "   max(done_upto) FILTER (WHERE grain = '1h') AS d1 FROM gpu_samples_rollup_state),"  \
    " w AS (SELECT id, (spec #>> '{monitor,interval_seconds}')::float8 AS iv,"              \
    "   (spec->>'idle_gpu_utilization_pct')::float8 AS thr, " AT " - make_interval(secs =>"  \
    "   coalesce((spec->>'idle_stop_after_seconds')::float8, $2::float8)) AS ws FROM pools)," \
    " w5 AS (SELECT w.*, least(" CEIL("5 minutes", "w.ws") ", " AT ") AS m0,"               \
    "   " CEIL("1 hour", "w.ws") " AS h0 FROM w),"                                         \
    " b AS MATERIALIZED (SELECT w5.*, e.e5,"                                                \
    "   greatest(w5.h0, " FLOOR("1 hour", "least(" AT ", st.d1, e.e5)") ") AS h1"           \
    "  FROM w5 CROSS JOIN st CROSS JOIN LATERAL (SELECT greatest(w5.m0, "                   \
    FLOOR("5 minutes", "least(" AT ", st.d5)") ") AS e5) e),"                               \
    " hb AS MATERIALIZED (SELECT h.id AS host, b.iv, b.thr, b.ws, b.m0, b.h0, b.h1, b.e5"   \
    "  FROM hosts h JOIN b ON b.id = h.pool_id WHERE h.state <> 'stopped'),"
/* One part of the window for every host: the raw samples, or the rollup buckets of table,
 * in [lo, hi), one row per sample or bucket. LATERAL, so that each is an index range scan
 * per host ((host_id, at) or the rollup's key), never a scan of the whole series. */
#define GPU_UTIL_RAW(lo, hi)                                                                \
    " SELECT hb.host, r.* FROM hb CROSS JOIN LATERAL (SELECT 1::float8 AS n,"               \
    "  bool_and(x.util_gpu IS NOT NULL) AS ok, max(x.util_gpu)::float8 AS mx,"              \
    "  sum(x.util_gpu)::float8 AS sm, count(x.util_gpu)::float8 AS nu, x.at AS t"            \
    "  FROM gpu_samples x"                                                                 \
    "  WHERE x.host_id = hb.host AND x.at >= " lo " AND x.at < " hi " GROUP BY x.at) r"
#define GPU_UTIL_ROLLUP(table, lo, hi)                                                      \
    " SELECT hb.host, r.* FROM hb CROSS JOIN LATERAL (SELECT max(x.samples)::float8 AS n,"  \
    "  bool_and(x.util_gpu_max IS NOT NULL) AS ok, max(x.util_gpu_max)::float8 AS mx,"      \
    "  sum(x.util_gpu_avg * x.samples) AS sm,"                                              \
    "  (sum(x.samples) FILTER (WHERE x.util_gpu_avg IS NOT NULL))::float8 AS nu,"           \
    "  NULL::timestamptz AS t"                                                              \
    "  FROM " table " x WHERE x.host_id = hb.host AND x.bucket >= " lo " AND x.bucket < " hi \
    "  GROUP BY x.bucket) r"
#define GPU_UTIL_SQL                                                                        \
    GPU_UTIL_BOUNDS                                                                         \
    " s AS (" GPU_UTIL_RAW("hb.ws", "hb.m0") " UNION ALL" GPU_UTIL_RAW("hb.e5", AT)          \
    " UNION ALL" GPU_UTIL_ROLLUP("gpu_samples_5m", "hb.m0", "least(hb.h0, hb.e5)")            \
    " UNION ALL" GPU_UTIL_ROLLUP("gpu_samples_5m", "hb.h1", "hb.e5")                          \
    " UNION ALL" GPU_UTIL_ROLLUP("gpu_samples_1h", "hb.h0", "hb.h1") ")"                      \
    " SELECT hb.host::text AS host_id, hb.iv AS interval_s, hb.thr AS idle_gpu_pct,"        \
    "  coalesce(sum(s.n) FILTER (WHERE s.ok), 0) AS samples,"                               \
    "  coalesce(sum(s.n) FILTER (WHERE NOT s.ok), 0) AS unread,"                            \
    "  max(s.mx) AS util_max, sum(s.sm) / nullif(sum(s.nu), 0) AS util_mean,"               \
    "  extract(epoch FROM " AT " - max(s.t))::float8 AS last_age"                           \
    " FROM hb LEFT JOIN s ON s.host = hb.host"                                              \
    " GROUP BY hb.host, hb.iv, hb.thr ORDER BY hb.host"

/* recommend_isolated ($1 how many events per host): the hosts quarantined by the monitor,
 * one row per open isolating event (oldest first; one row of NULL events when none). */
#define ISOLATED_SQL                                                                        \
    "SELECT h.id::text AS host_id, h.quarantine_reason AS reason,"                          \
    " " DB_TS("h.quarantined_at") " AS quarantined_at,"                                     \
    " (SELECT count(*) FROM gpu_events c WHERE c.host_id = h.id AND c.closed_at IS NULL"     \
    "   AND c.policy = 'isolate') AS open_events,"                                          \
    " e.kind, e.code, e.category, e.gpu_uuid, e.pci_bus_id, e.count,"                       \
    " " DB_TS("e.first_seen") " AS first_seen, " DB_TS("e.last_seen") " AS last_seen,"       \
    " left(e.raw, 512) AS raw, left(e.message, 256) AS message"                             \
    " FROM hosts h LEFT JOIN LATERAL (SELECT * FROM gpu_events g WHERE g.host_id = h.id"     \
    "   AND g.closed_at IS NULL AND g.policy = 'isolate' ORDER BY g.id LIMIT $1::int) e ON true" \
    " WHERE h.state = 'quarantined' AND (SELECT s.event FROM host_state_history s"          \
    "   WHERE s.host_id = h.id AND s.to_state = 'quarantined' ORDER BY s.id DESC LIMIT 1)"   \
    "   = 'monitor_isolated'"                                                               \
    " ORDER BY h.id, e.id"
// clang-format on

const struct db_stmt db_recommend_stmts[] = {
    {"recommend_gpu_util", GPU_UTIL_SQL},
    {"recommend_isolated", ISOLATED_SQL},
    {"recommend_hosts",
     "WITH " DB_SERIAL_CTE ", p AS MATERIALIZED (SELECT id, gpu_model,"
     "  (spec->>'idle_stop_after_seconds')::float8 AS idle,"
     "  (spec->>'price_per_hour')::float8 AS price,"
     "  coalesce((spec->>'gpu_count')::int, 1) AS gpu_count,"
     "  (spec #>> '{recommendation_thresholds,scale_up_utilization}')::float8 AS up,"
     "  (spec #>> '{recommendation_thresholds,scale_down_utilization}')::float8 AS down,"
     "  (spec #>> '{recommendation_thresholds,investigate_failed_share}')::float8 AS share,"
     "  (spec #>> '{recommendation_thresholds,investigate_cost_increase}')::float8 AS rise"
     "  FROM pools)"
     " SELECT h.id::text, h.pool_id::text, h.project_id::text AS project_id,"
     "  (SELECT pr.name FROM projects pr WHERE pr.id = h.project_id) AS project_name, h.state,"
     "  (h.accepted_gate_run_id IS NOT NULL AND h.state = 'ready') AS accepted,"
     "  EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = h.id AND j.state IN ('queued', 'running'))"
     "  AS active_job, p.idle, p.price, p.gpu_model, p.gpu_count, p.up, p.down, p.share, p.rise"
     " FROM hosts h JOIN p ON p.id = h.pool_id"
     " WHERE h.state <> 'stopped'"
     " ORDER BY h.id"},
    {"recommend_held", HELD_SQL},
    {"recommend_usage", USAGE_SQL("", "", "", "")},
    {"recommend_usage_failures",
     USAGE_SQL("," USAGE_ROLLUP_FAILS, "," USAGE_RAW_FAILS, ", " USAGE_FAIL_SUMS, USAGE_FAILS_FC)},
    {"recommend_briefs",
     "SELECT id::text, project_id::text AS project_id, spec::text FROM briefs ORDER BY id"},
    /* $1 at − 48 h, $2 at, $3 and $4 the whole hours between: see db_rec_briefs_ran. */
    {"recommend_briefs_ran",
     "SELECT b.id::text, b.project_id::text AS project_id, b.spec::text FROM briefs b"
     " WHERE EXISTS (SELECT 1 FROM work_report_hours d WHERE d.brief_id = b.id"
     "   AND d.bucket >= $3::timestamptz AND d.bucket < $4::timestamptz)"
     "  OR EXISTS (SELECT 1 FROM work_reports r WHERE r.brief_id = b.id"
     "   AND ((r.window_start >= $1::timestamptz AND r.window_start < $3::timestamptz)"
     "    OR (r.window_start >= $4::timestamptz AND r.window_start < $2::timestamptz)))"
     " ORDER BY b.id"},
    /* A reuse that lends a host to another project's brief is the platform's to decide:
     * its events name no pool or host, so they are of no project (platform admins only). */
    {"recommend_sync",
     "WITH cur AS (SELECT (e->>'id')::uuid AS id, e->>'action' AS action,"
     "   (e #>> '{target,pool_id}')::uuid AS pool_id,"
     "   (e #>> '{target,host_ids,0}')::uuid AS host_id, e AS doc"
     "  FROM jsonb_array_elements($1::jsonb) e),"
     " gone AS (DELETE FROM open_recommendations o"
     "  WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.id = o.id)"
     "  RETURNING o.id, o.action, o.pool_id, o.host_id, o.doc),"
     " added AS (INSERT INTO open_recommendations (id, action, pool_id, host_id, doc)"
     "  SELECT id, action, pool_id, host_id, doc FROM cur ORDER BY id"
     "  ON CONFLICT (id) DO NOTHING RETURNING id, pool_id, host_id, doc),"
     " x AS (SELECT 'recommendation.withdrawn' AS type, pool_id, host_id, doc,"
     "   jsonb_build_object('recommendation_id', id, 'action', action) AS data FROM gone"
     "  UNION ALL SELECT 'recommendation.opened', pool_id, host_id, doc,"
     "   jsonb_build_object('recommendation', doc) FROM added),"
     " y AS (SELECT x.*, EXISTS (SELECT 1 FROM briefs b JOIN hosts h ON h.id = x.host_id"
     "   WHERE b.id = (x.doc #>> '{target,brief_id}')::uuid AND b.project_id <> h.project_id)"
     "   AS lends FROM x),"
     " ev AS (INSERT INTO events (type, pool_id, host_id, data)"
     "  SELECT type, CASE WHEN lends THEN NULL ELSE pool_id END,"
     "   CASE WHEN lends THEN NULL ELSE host_id END, data FROM y RETURNING 1)"
     " SELECT (SELECT count(*) FROM added)::text AS opened,"
     "  (SELECT count(*) FROM gone)::text AS withdrawn"},
    {"idle_policy_lock", "SELECT pg_try_advisory_xact_lock(" DB_IDLE_POLICY_LOCK_KEY ") AS locked"},
    {"idle_policy_pool",
     "SELECT coalesce((p.spec->>'auto_stop')::boolean, false) AS auto_stop,"
     " (pr.on_exhausted = 'stop_idle' AND coalesce(s.exhausted, false)) AS budget_stop,"
     " pr.name AS project, coalesce(s.spend, 0) AS spend, coalesce(pr.budget_monthly, 0) AS budget"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id JOIN projects pr ON pr.id = h.project_id"
     " LEFT JOIN project_spend s ON s.project_id = h.project_id"
     "  AND s.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date"
     " WHERE h.id = $1::uuid"},
};
const size_t db_recommend_nstmts = sizeof db_recommend_stmts / sizeof db_recommend_stmts[0];

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
        const int64_t v[6] = {
            x, y, util_ceil_us(x, H), util_floor_us(y, H), util_ceil_us(x, Q), util_floor_us(y, Q)};
        for (int j = 0; j < 6; j++)
            util_rfc3339(v[j], b->usage[1 + 6 * k + j], sizeof b->usage[0]);
    }
}

void db_rec_input_free(struct db_rec_input *in)
{
    free(in->held);
    free(in->held_seconds);
    free(in->usage);
    free(in->hosts);
    free(in->briefs);
    free(in->gpu);
    free(in->isolated);
    free(in->events);
    free(in->brief_ids);
    for (int i = 0; i < 6; i++)
        PQclear(in->res[i]);
    memset(in, 0, sizeof *in);
}

static void decode_held(const PGresult *r, struct db_rec_input *in)
{
    static const char *const names[DB_REC_WINDOWS] = {
        [DB_REC_HOUR] = "held_hour", [DB_REC_DAY] = "held_day", [DB_REC_PREV] = "held_prev"};
    int hc[DB_HOST_NCOLS], wc[DB_REC_WINDOWS];
    db_usage_host_cols(r, hc);
    db_cols(r, names, DB_REC_WINDOWS, wc);
    for (size_t i = 0; i < in->nheld; i++) {
        db_usage_host(r, hc, (int)i, &in->held[i]);
        for (int w = 0; w < DB_REC_WINDOWS; w++)
            in->held_seconds[i][w] = db_val_num(r, (int)i, wc[w]);
    }
}

static void decode_usage(const PGresult *r, struct db_rec_input *in)
{
    enum { C_PART, C_LB, C_USEFUL, C_FIRST, C_LAST, C_P95, C_QUEUE, C_N };
    static const char *const names[C_N] = {
        [C_PART] = "part",    [C_LB] = "lb",   [C_USEFUL] = "useful_end", [C_FIRST] = "min_start",
        [C_LAST] = "max_end", [C_P95] = "p95", [C_QUEUE] = "queue"};
    int uc[DB_USE_NCOLS], col[C_N], fc[USAGE_FAIL_COUNT + 2];
    size_t pos = 0;
    db_usage_cols(r, uc);
    db_cols(r, names, C_N, col);
    db_usage_failure_cols(r, fc);
    for (size_t k = 0; k < in->nusage; k++) {
        struct db_rec_usage *u = &in->usage[k];
        int i = (int)k;
        u->host_id = db_usage_row(r, uc, i, in->held, in->nheld, &pos, &u->row);
        db_usage_failures(r, fc, i, &u->row.failures);
        u->part = (int)db_val_long(r, i, col[C_PART]);
        u->lb = db_val_bool(r, i, col[C_LB]);
        u->has_useful_end = !db_val_isnull(r, i, col[C_USEFUL]);
        u->useful_end = db_val_num(r, i, col[C_USEFUL]);
        u->min_start = db_val_num(r, i, col[C_FIRST]);
        u->max_end = db_val_num(r, i, col[C_LAST]);
        u->has_p95 = !db_val_isnull(r, i, col[C_P95]);
        u->p95_ms = db_val_num(r, i, col[C_P95]);
        u->has_queue = !db_val_isnull(r, i, col[C_QUEUE]);
        u->queue_delay_ms = db_val_num(r, i, col[C_QUEUE]);
    }
}

/* A pool setting: NULL when the pool lacks it. */
static struct db_rec_setting setting(const PGresult *r, int row, int col)
{
    return (struct db_rec_setting){!db_val_isnull(r, row, col), db_val_num(r, row, col)};
}

static void decode_hosts(const PGresult *r, struct db_rec_input *in)
{
    enum {
        C_ID,
        C_POOL,
        C_PROJECT,
        C_PROJECT_NAME,
        C_STATE,
        C_ACCEPTED,
        C_ACTIVE,
        C_IDLE,
        C_PRICE,
        C_GPU,
        C_COUNT,
        C_UP,
        C_DOWN,
        C_SHARE,
        C_RISE,
        C_N
    };
    static const char *const names[C_N] = {[C_ID] = "id",
                                           [C_POOL] = "pool_id",
                                           [C_PROJECT] = "project_id",
                                           [C_PROJECT_NAME] = "project_name",
                                           [C_STATE] = "state",
                                           [C_ACCEPTED] = "accepted",
                                           [C_ACTIVE] = "active_job",
                                           [C_IDLE] = "idle",
                                           [C_PRICE] = "price",
                                           [C_GPU] = "gpu_model",
                                           [C_COUNT] = "gpu_count",
                                           [C_UP] = "up",
                                           [C_DOWN] = "down",
                                           [C_SHARE] = "share",
                                           [C_RISE] = "rise"};
    int col[C_N];
    db_cols(r, names, C_N, col);
    for (size_t k = 0; k < in->nhosts; k++) {
        struct db_rec_host *h = &in->hosts[k];
        int i = (int)k;
        h->id = db_val(r, i, col[C_ID]);
        h->pool_id = db_val(r, i, col[C_POOL]);
        h->project_id = db_val(r, i, col[C_PROJECT]);
        h->project_name = db_val(r, i, col[C_PROJECT_NAME]);
        h->state = db_val(r, i, col[C_STATE]);
        h->accepted = db_val_bool(r, i, col[C_ACCEPTED]);
        h->active_job = db_val_bool(r, i, col[C_ACTIVE]);
        h->price_per_hour = db_val_num(r, i, col[C_PRICE]);
        h->gpu_model = db_val(r, i, col[C_GPU]);
        h->gpu_count = db_val_long(r, i, col[C_COUNT]);
        h->idle_stop_after_s = setting(r, i, col[C_IDLE]);
        h->scale_up_utilization = setting(r, i, col[C_UP]);
        h->scale_down_utilization = setting(r, i, col[C_DOWN]);
        h->failed_share = setting(r, i, col[C_SHARE]);
        h->cost_increase = setting(r, i, col[C_RISE]);
    }
}

static void decode_briefs(const PGresult *r, struct db_rec_input *in)
{
    int id = db_col(r, "id"), spec = db_col(r, "spec"), project = db_col(r, "project_id");
    for (size_t k = 0; k < in->nbriefs; k++) {
        in->briefs[k].id = db_val(r, (int)k, id);
        in->briefs[k].project_id = db_val(r, (int)k, project);
        in->briefs[k].spec = db_val(r, (int)k, spec);
    }
}

enum db_status db_rec_decode(PGresult *held, PGresult *usage, PGresult *hosts, PGresult *briefs,
                             struct db_rec_input *in)
{
    memset(in, 0, sizeof *in);
    in->res[0] = held;
    in->res[1] = usage;
    in->res[2] = hosts;
    in->res[3] = briefs;
    in->nheld = (size_t)PQntuples(held);
    in->nusage = (size_t)PQntuples(usage);
    in->nhosts = (size_t)PQntuples(hosts);
    in->nbriefs = (size_t)PQntuples(briefs);
    in->held = calloc(in->nheld + 1, sizeof *in->held);
    in->held_seconds = calloc(in->nheld + 1, sizeof *in->held_seconds);
    in->usage = calloc(in->nusage + 1, sizeof *in->usage);
    in->hosts = calloc(in->nhosts + 1, sizeof *in->hosts);
    in->briefs = calloc(in->nbriefs + 1, sizeof *in->briefs);
    if (!in->held || !in->held_seconds || !in->usage || !in->hosts || !in->briefs) {
        db_rec_input_free(in);
        return DB_HARD_ERROR;
    }
    decode_held(held, in);
    decode_usage(usage, in);
    decode_hosts(hosts, in);
    decode_briefs(briefs, in);
    return in->nhosts == 0 ? DB_NO_RESULTS : in->nhosts == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

static void decode_gpu(const PGresult *r, struct db_rec_input *in)
{
    enum { C_HOST, C_IV, C_THR, C_SAMPLES, C_UNREAD, C_MAX, C_MEAN, C_AGE, C_N };
    static const char *const names[C_N] = {
        [C_HOST] = "host_id",    [C_IV] = "interval_s", [C_THR] = "idle_gpu_pct",
        [C_SAMPLES] = "samples", [C_UNREAD] = "unread", [C_MAX] = "util_max",
        [C_MEAN] = "util_mean",  [C_AGE] = "last_age"};
    int col[C_N];
    db_cols(r, names, C_N, col);
    for (size_t k = 0; k < in->ngpu; k++) {
        struct db_rec_gpu *g = &in->gpu[k];
        int i = (int)k;
        g->host_id = db_val(r, i, col[C_HOST]);
        g->util.interval_s = db_val_isnull(r, i, col[C_IV]) ? 0 : db_val_num(r, i, col[C_IV]);
        g->idle_gpu_pct = setting(r, i, col[C_THR]);
        g->util.samples = (long)db_val_num(r, i, col[C_SAMPLES]);
        g->util.unread = (long)db_val_num(r, i, col[C_UNREAD]);
        g->util.has_util = !db_val_isnull(r, i, col[C_MAX]);
        g->util.max_pct = db_val_num(r, i, col[C_MAX]);
        g->util.mean_pct = db_val_num(r, i, col[C_MEAN]);
        g->util.has_last = !db_val_isnull(r, i, col[C_AGE]);
        g->util.last_age_s = g->util.has_last ? db_val_num(r, i, col[C_AGE]) : 0;
    }
}

/* One db_rec_isolated per host (rows ordered by host id), its events in order. */
static void decode_isolated(const PGresult *r, struct db_rec_input *in)
{
    enum {
        C_HOST,
        C_REASON,
        C_AT,
        C_OPEN,
        C_KIND,
        C_CODE,
        C_CAT,
        C_UUID,
        C_PCI,
        C_COUNT,
        C_FIRST,
        C_LAST,
        C_RAW,
        C_MSG,
        C_N
    };
    static const char *const names[C_N] = {
        [C_HOST] = "host_id",     [C_REASON] = "reason",    [C_AT] = "quarantined_at",
        [C_OPEN] = "open_events", [C_KIND] = "kind",        [C_CODE] = "code",
        [C_CAT] = "category",     [C_UUID] = "gpu_uuid",    [C_PCI] = "pci_bus_id",
        [C_COUNT] = "count",      [C_FIRST] = "first_seen", [C_LAST] = "last_seen",
        [C_RAW] = "raw",          [C_MSG] = "message"};
    int col[C_N];
    db_cols(r, names, C_N, col);
    int rows = PQntuples(r);
    in->nisolated = in->nevents = 0;
    for (int i = 0; i < rows; i++) {
        const char *host = db_val(r, i, col[C_HOST]);
        struct db_rec_isolated *h = in->nisolated ? &in->isolated[in->nisolated - 1] : NULL;
        if (h == NULL || strcmp(h->host_id, host) != 0) {
            h = &in->isolated[in->nisolated++];
            h->host_id = host;
            h->iso.reason = db_val(r, i, col[C_REASON]);
            h->iso.quarantined_at = db_val(r, i, col[C_AT]);
            h->iso.open_events = db_val_long(r, i, col[C_OPEN]);
            h->iso.events = &in->events[in->nevents];
            h->iso.nevents = 0;
        }
        if (db_val_isnull(r, i, col[C_KIND]))
            continue;
        struct gpu_event *e = &in->events[in->nevents++];
        h->iso.nevents++;
        e->kind = db_val(r, i, col[C_KIND]);
        e->has_code = !db_val_isnull(r, i, col[C_CODE]);
        e->code = db_val_long(r, i, col[C_CODE]);
        e->category = db_val(r, i, col[C_CAT]);
        e->gpu_uuid = db_val(r, i, col[C_UUID]);
        e->pci_bus_id = db_val(r, i, col[C_PCI]);
        e->count = db_val_long(r, i, col[C_COUNT]);
        e->first_seen = db_val(r, i, col[C_FIRST]);
        e->last_seen = db_val(r, i, col[C_LAST]);
        e->raw = db_val(r, i, col[C_RAW]);
        e->message = db_val(r, i, col[C_MSG]);
    }
}

enum db_status db_rec_decode_health(PGresult *gpu, PGresult *isolated, struct db_rec_input *in)
{
    in->res[4] = gpu;
    in->res[5] = isolated;
    in->ngpu = (size_t)PQntuples(gpu);
    size_t rows = (size_t)PQntuples(isolated);
    in->gpu = calloc(in->ngpu + 1, sizeof *in->gpu);
    in->isolated = calloc(rows + 1, sizeof *in->isolated);
    in->events = calloc(rows + 1, sizeof *in->events);
    if (!in->gpu || !in->isolated || !in->events) {
        db_rec_input_free(in);
        return DB_HARD_ERROR;
    }
    decode_gpu(gpu, in);
    decode_isolated(isolated, in);
    return DB_ONE_RESULT;
}

enum db_status db_recommend_read(struct db_conn *c, int64_t at_us, double idle_default_s,
                                 int events_max, struct db_rec_input *in)
{
    return db_recommend_read_with(c, at_us, idle_default_s, events_max, 0, in);
}

enum db_status db_recommend_read_with(struct db_conn *c, int64_t at_us, double idle_default_s,
                                      int events_max, int failures, struct db_rec_input *in)
{
    struct db_rec_parts p = {{NULL}};
    db_rec_input_free(in);
    enum db_status s = db_rec_parts_read(c, at_us, idle_default_s, events_max, &p);
    if (s >= 0)
        s = db_rec_usage_read(c, at_us, failures, &p);
    if (s < 0) {
        db_rec_parts_free(&p);
        return s;
    }
    return db_rec_parts_decode(&p, in);
}

enum db_status db_rec_parts_read(struct db_conn *c, int64_t at_us, double idle_default_s,
                                 int events_max, struct db_rec_parts *p)
{
    struct rec_bounds b;
    PGresult **r = (PGresult **)p->res;
    bounds(at_us, &b);
    const char *ph[4] = {b.held[0], b.held[1], b.held[2], b.held[3]};
    char win[32], nev[16];
    snprintf(win, sizeof win, "%.0f", idle_default_s);
    snprintf(nev, sizeof nev, "%d", events_max);
    const char *pg[2] = {b.held[0], win}, *pi[1] = {nev};
    enum db_status s = db_exec(c, "recommend_held", 4, ph, &r[0]);
    if (s >= 0)
        s = db_exec(c, "recommend_hosts", 0, NULL, &r[2]);
    if (s >= 0)
        s = db_exec(c, "recommend_briefs", 0, NULL, &r[3]);
    if (s >= 0)
        s = db_exec(c, "recommend_gpu_util", 2, pg, &r[4]);
    if (s >= 0)
        s = db_exec(c, "recommend_isolated", 1, pi, &r[5]);
    return s;
}

enum db_status db_rec_usage_read(struct db_conn *c, int64_t at_us, int failures,
                                 struct db_rec_parts *p)
{
    struct rec_bounds b;
    bounds(at_us, &b);
    const char *pu[19];
    for (int i = 0; i < 19; i++)
        pu[i] = b.usage[i];
    return db_exec(c, failures ? "recommend_usage_failures" : "recommend_usage", 19, pu,
                   (PGresult **)&p->res[1]);
}

void db_rec_parts_free(struct db_rec_parts *p)
{
    for (int i = 0; i < 6; i++)
        PQclear(p->res[i]);
    memset(p, 0, sizeof *p);
}

enum db_status db_rec_parts_decode(struct db_rec_parts *p, struct db_rec_input *in)
{
    PGresult **r = (PGresult **)p->res;
    db_rec_input_free(in);
    enum db_status d = db_rec_decode(r[0], r[1], r[2], r[3], in);
    if (d < 0) {
        PQclear(r[4]);
        PQclear(r[5]);
    } else if (db_rec_decode_health(r[4], r[5], in) < 0) {
        d = DB_HARD_ERROR;
    }
    memset(p, 0, sizeof *p); /* in owns the results now, or they are freed */
    return d;
}

enum db_status db_recommend_sync(struct db_conn *c, const char *items_json, long *opened,
                                 long *withdrawn)
{
    PGresult *r = NULL;
    const char *p[1] = {items_json};
    *opened = *withdrawn = 0;
    enum db_status s = db_exec(c, "recommend_sync", 1, p, &r);
    if (s > 0) {
        *opened = db_long(r, 0, "opened");
        *withdrawn = db_long(r, 0, "withdrawn");
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
        *got = db_bool(r, 0, "locked");
    PQclear(r);
    return s;
}

enum db_status db_idle_policy_host(struct db_conn *c, const char *host_id, struct db_idle_host *out)
{
    PGresult *r = NULL;
    const char *p[1] = {host_id};
    memset(out, 0, sizeof *out);
    enum db_status s = db_exec(c, "idle_policy_pool", 1, p, &r);
    if (s > 0) {
        out->auto_stop = db_bool(r, 0, "auto_stop");
        out->budget_stop = db_bool(r, 0, "budget_stop");
        db_copy(r, 0, "project", out->project, sizeof out->project);
        out->spend = db_num(r, 0, "spend");
        out->budget = db_num(r, 0, "budget");
    }
    PQclear(r);
    return s;
}
