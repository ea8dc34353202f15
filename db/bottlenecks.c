/* bottlenecks.c — see bottlenecks.h. */
#include "db/bottlenecks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

const char *const db_bn_grain_names[] = {"hour", "quarter", "day", "week", NULL};

enum db_bn_grain db_bn_grain_of(double window_s)
{
    return window_s <= DB_BN_HOURS_MAX_S      ? DB_BN_HOUR
           : window_s <= DB_BN_QUARTERS_MAX_S ? DB_BN_QUARTER
           : window_s <= DB_BN_DAYS_MAX_S     ? DB_BN_DAY
                                              : DB_BN_WEEK;
}

/* The target within the scope ($1 the id, $2 the projects). */
#define TARGET_SQL(table)                                                                    \
    "SELECT t.name, t.project_id::text AS project_id FROM " table " t WHERE t.id = $1::uuid" \
    " AND ($2::uuid[] IS NULL OR t.project_id = ANY ($2::uuid[]))"

// clang-format off
/* The sums of the rollup rows d of a group; LOADS counts the buckets with load time. */
#define PH(c) "sum(d.phase_" c "_seconds) AS " c
#define SUMS_WITH(LOADS)                                                                    \
    " sum(d.reports)::bigint AS reports, sum(d.phase_reports)::bigint AS phase_reports,"   \
    " sum(d.busy_seconds) AS busy, sum(d.phase_busy_seconds) AS phase_busy,"               \
    " " PH("queue") ", " PH("load") ", " PH("preprocess") ", " PH("compute") ","           \
    " " PH("communication") ", " PH("write") ", sum(d.completed) AS completed,"            \
    " sum(d.failed) AS failed, sum(d.retried) AS retried, sum(d.bytes_moved) AS bytes, "   \
    LOADS " AS load_buckets,"                                                              \
    " coalesce(sum(d.bytes_moved) FILTER (WHERE d.phase_load_seconds > 0), 0) AS load_bytes"
#define SUMS SUMS_WITH("count(DISTINCT d.bucket) FILTER (WHERE d.phase_load_seconds > 0)")

/* Parameters of every rows statement: $1 from (a bucket's start), $2 to, $3 the middle,
 * $4 pool, $5 brief, $6 host (one of them set), $7 the projects (uuid[] or NULL). */
#define HOSTS_CTE                                                                           \
    "WITH hs AS MATERIALIZED (SELECT h.id, h.pool_id FROM hosts h"                                      \
    "  WHERE ($4::uuid IS NULL OR h.pool_id = $4::uuid)"                                   \
    "  AND ($6::uuid IS NULL OR h.id = $6::uuid) AND $5::uuid IS NULL"                     \
    "  AND ($7::uuid[] IS NULL OR h.project_id = ANY ($7::uuid[])))"
#define PROBE_SELECT                                                                        \
    " SELECT hs.id::text AS host_id, hs.pool_id::text AS pool_id,"                         \
    " (d.bucket >= $3::timestamptz)::int AS half," SUMS
#define PROBE_GROUP " GROUP BY hs.id, hs.pool_id, 3 ORDER BY hs.id, 3"
/* A pool's or a host's rows: the rollup's key (bucket, host_id, …) is bucket first, so a
 * range scan would read every host's rows of the window; the buckets ($8, an array of the
 * window's bucket starts) and the hosts as two arrays make one index scan that descends
 * once per (bucket, host) pair. */
#define PROBE_PART(table, buckets)                                                          \
    " SELECT * FROM " table " x WHERE x.bucket = ANY (" buckets "::timestamptz[])"         \
    " AND x.host_id = ANY (ARRAY(SELECT id FROM hs))"
#define PROBE_SQL(table)                                                                    \
    HOSTS_CTE PROBE_SELECT " FROM (" PROBE_PART(table, "$8") ") d JOIN hs ON hs.id = d.host_id" \
    " WHERE d.bucket >= $1::timestamptz AND d.bucket < $2::timestamptz" PROBE_GROUP
/* The day grain: the days outside the whole ISO weeks ($8) from the day rollups, the
 * weeks ($9) from the week rollups. */
#define PROBE_DAY_SQL                                                                       \
    HOSTS_CTE PROBE_SELECT " FROM (" PROBE_PART("work_report_days", "$8")                  \
    " UNION ALL" PROBE_PART("work_report_weeks", "$9") ") d JOIN hs ON hs.id = d.host_id"  \
    " WHERE d.bucket >= $1::timestamptz AND d.bucket < $2::timestamptz" PROBE_GROUP
/* A brief's rows ($5): the rollups' brief index (migrations/0033) over the window. */
#define BRIEF_SELECT                                                                        \
    "SELECT d.host_id::text AS host_id, h.pool_id::text AS pool_id,"                       \
    " (d.bucket >= $3::timestamptz)::int AS half," SUMS
#define BRIEF_WHERE                                                                         \
    " JOIN hosts h ON h.id = d.host_id WHERE $4::uuid IS NULL AND $6::uuid IS NULL"        \
    " AND ($7::uuid[] IS NULL OR h.project_id = ANY ($7::uuid[]))"                         \
    " GROUP BY d.host_id, h.pool_id, 3 ORDER BY d.host_id, 3"
#define BRIEF_SQL(table)                                                                    \
    BRIEF_SELECT " FROM (SELECT * FROM " table " x WHERE x.brief_id = $5::uuid"            \
    " AND x.bucket >= $1::timestamptz AND x.bucket < $2::timestamptz"                      \
    " AND $8::interval > '0') d" BRIEF_WHERE
#define BRIEF_DAY_SQL                                                                       \
    BRIEF_SELECT " FROM (SELECT * FROM work_report_days x WHERE x.brief_id = $5::uuid"     \
    " AND ((x.bucket >= $1::timestamptz AND x.bucket < $8::timestamptz)"                   \
    "  OR (x.bucket >= $9::timestamptz AND x.bucket < $2::timestamptz))"                   \
    " UNION ALL SELECT * FROM work_report_weeks x WHERE x.brief_id = $5::uuid"             \
    " AND x.bucket >= $8::timestamptz AND x.bucket < $9::timestamptz) d" BRIEF_WHERE
// clang-format on

/* A number of a check's values, NULL unless it is a JSON number. */
#define JNUM(expr) "CASE WHEN jsonb_typeof(" expr ") = 'number' THEN (" expr ")::float8 END"
/* The newest run of kind k of host h.id with check n whose values hold the number v. */
#define NEWEST(k, n, v)                                                                            \
    "SELECT g.id::text AS id, " DB_TS(                                                             \
        "g.finished_at") " AS at, c.value->>'status' AS status,"                                   \
                         " (c.value->'values'->'" v "')::float8 AS v, c.value->'values' AS vals"   \
                         " FROM gate_runs g CROSS JOIN LATERAL jsonb_array_elements(g.checks) c"   \
                         " WHERE g.host_id = h.id AND g.kind = '" k "' AND c.value->>'name' = '" n \
                         "'"                                                                       \
                         " AND jsonb_typeof(c.value->'values'->'" v "') = 'number'"                \
                         " ORDER BY g.seq DESC LIMIT 1"

// clang-format off
const struct db_stmt db_bn_stmts[] = {
    {"bn_target_pool", TARGET_SQL("pools")},
    {"bn_target_brief", TARGET_SQL("briefs")},
    {"bn_target_host", TARGET_SQL("hosts")},
    {"bn_rows_hour", PROBE_SQL("work_report_hours")},
    {"bn_rows_quarter", PROBE_SQL("work_report_quarters")},
    {"bn_rows_day", PROBE_DAY_SQL},
    {"bn_rows_week", PROBE_SQL("work_report_weeks")},
    {"bn_brief_hour", BRIEF_SQL("work_report_hours")},
    {"bn_brief_quarter", BRIEF_SQL("work_report_quarters")},
    {"bn_brief_day", BRIEF_DAY_SQL},
    {"bn_brief_week", BRIEF_SQL("work_report_weeks")},
    /* $1 from, $2 to, $3 the middle: every host, per brief and unit, from the 6-hour
     * quarters (a day is 4 or 5 of them: 50,000 rows over 10,000 hosts). */
    {"bn_rows_fleet",
     "WITH " DB_SERIAL_CTE " SELECT d.host_id::text AS host_id, h.pool_id::text AS pool_id,"
     " d.brief_id::text AS brief_id, d.unit, (d.bucket >= $3::timestamptz)::int AS half,"
     /* one row per bucket of a (host, brief, unit): rows are buckets */
     SUMS_WITH("count(*) FILTER (WHERE d.phase_load_seconds > 0)")
     " FROM work_report_quarters d JOIN hosts h ON h.id = d.host_id"
     " WHERE d.bucket >= $1::timestamptz AND d.bucket < $2::timestamptz"
     " GROUP BY d.host_id, h.pool_id, d.brief_id, d.unit, 5"
     " ORDER BY d.host_id, d.brief_id NULLS FIRST, d.unit, 5"},
    /* $1 the hosts (uuid[]), $2 from, $3 to. */
    {"bn_signals",
     "SELECT h.id::text AS host_id, gs.samples, gs.util, gs.mem_pct, gs.power,"
     " st.id AS st_id, st.at AS st_at, st.v AS read_mbps,"
     " " JNUM("st.vals->'min_read_mbps'") " AS min_read_mbps,"
     " bw.id AS bw_id, bw.at AS bw_at, bw.v AS busbw,"
     " " JNUM("bw.vals->'expected'->'min_allreduce_busbw_gbps'") " AS min_busbw,"
     " dg.id AS dg_id, dg.at AS dg_at, dg.status AS dg_status, dg.v AS dg_read,"
     " " JNUM("dg.vals->'min_read_mbps'") " AS dg_min"
     " FROM unnest($1::uuid[]) WITH ORDINALITY AS h(id, ord)"
     " LEFT JOIN LATERAL (SELECT sum(s.samples)::bigint AS samples,"
     "  sum(s.util_gpu_avg * s.samples) / nullif(sum(s.samples)"
     "   FILTER (WHERE s.util_gpu_avg IS NOT NULL), 0) AS util,"
     "  100 * sum(s.mem_used_mib_avg * s.samples) / nullif(sum(s.mem_total_mib_max * s.samples)"
     "   FILTER (WHERE s.mem_used_mib_avg IS NOT NULL), 0) AS mem_pct,"
     "  sum(s.power_w_avg * s.samples) / nullif(sum(s.samples)"
     "   FILTER (WHERE s.power_w_avg IS NOT NULL), 0) AS power"
     "  FROM gpu_samples_1h s WHERE s.host_id = h.id"
     "  AND s.bucket >= $2::timestamptz AND s.bucket < $3::timestamptz) gs ON true"
     " LEFT JOIN LATERAL (" NEWEST("gate", "storage_throughput", "read_mbps") ") st ON true"
     " LEFT JOIN LATERAL (" NEWEST("gate", "bandwidth", "allreduce_busbw_gbps") ") bw ON true"
     " LEFT JOIN LATERAL (" NEWEST("diagnostics", "storage_throughput", "read_mbps") ") dg"
     "  ON true"
     " ORDER BY h.ord"},
};
// clang-format on
const size_t db_bn_nstmts = sizeof db_bn_stmts / sizeof db_bn_stmts[0];

void db_bn_free(struct db_bn_input *in)
{
    free(in->rows);
    free(in->signals);
    PQclear(in->res[0]);
    PQclear(in->res[1]);
    memset(in, 0, sizeof *in);
}

enum db_status db_bn_target(struct db_conn *c, enum db_bn_target kind, const char *id,
                            const char *projects, struct db_bn_input *in)
{
    static const char *const stmt[] = {"bn_target_pool", "bn_target_brief", "bn_target_host"};
    const char *p[2] = {id, projects};
    PGresult *r = NULL;
    enum db_status s = db_exec_row(c, stmt[kind], 2, p, &r);
    if (s != DB_ONE_RESULT)
        return s;
    const char *name = db_val(r, 0, db_col(r, "name"));
    const char *proj = db_val(r, 0, db_col(r, "project_id"));
    snprintf(in->name, sizeof in->name, "%s", name ? name : "");
    snprintf(in->project_id, sizeof in->project_id, "%s", proj ? proj : "");
    PQclear(r);
    return s;
}

static const char *const row_cols[] = {
    "host_id", "pool_id", "half",       "reports",      "phase_reports", "busy",  "phase_busy",
    "queue",   "load",    "preprocess", "compute",      "communication", "write", "completed",
    "failed",  "retried", "bytes",      "load_buckets", "load_bytes"};
#define NROWCOLS (sizeof row_cols / sizeof row_cols[0])

/* r's rows into in->rows (in takes r over as res[0]); with_brief: brief_id and unit too. */
static enum db_status rows_decode(PGresult *r, int with_brief, struct db_bn_input *in)
{
    PQclear(in->res[0]);
    free(in->rows);
    in->res[0] = r;
    in->nrows = 0;
    size_t n = (size_t)PQntuples(r);
    in->rows = calloc(n + 1, sizeof *in->rows);
    if (in->rows == NULL)
        return DB_HARD_ERROR;
    int col[NROWCOLS], bc = with_brief ? db_col(r, "brief_id") : -1,
                       uc = with_brief ? db_col(r, "unit") : -1;
    db_cols(r, row_cols, (int)NROWCOLS, col);
    for (size_t i = 0; i < n; i++) {
        struct db_bn_row *w = &in->rows[i];
        int k = (int)i;
        w->host_id = db_val(r, k, col[0]);
        w->pool_id = db_val(r, k, col[1]);
        w->brief_id = bc >= 0 ? db_val(r, k, bc) : NULL;
        w->unit = uc >= 0 ? db_val(r, k, uc) : NULL;
        w->half = db_val_long(r, k, col[2]) ? 1 : 0;
        w->reports = db_val_long(r, k, col[3]);
        w->phase_reports = db_val_long(r, k, col[4]);
        w->busy_s = db_val_num(r, k, col[5]);
        w->phase_busy_s = db_val_num(r, k, col[6]);
        for (int j = 0; j < DB_BN_PHASES; j++)
            w->phase_s[j] = db_val_num(r, k, col[7 + j]);
        w->completed = db_val_num(r, k, col[13]);
        w->failed = db_val_num(r, k, col[14]);
        w->retried = db_val_num(r, k, col[15]);
        w->bytes_moved = db_val_num(r, k, col[16]);
        w->load_buckets = db_val_long(r, k, col[17]);
        w->load_bytes = db_val_num(r, k, col[18]);
    }
    in->nrows = n;
    return n == 0 ? DB_NO_RESULTS : n == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

enum db_status db_bn_rows(struct db_conn *c, enum db_bn_target kind, const char *id,
                          const char *projects, enum db_bn_grain grain, const char *from,
                          const char *to, const char *mid, const struct db_bn_window *w,
                          struct db_bn_input *in)
{
    static const char *const probe[] = {"bn_rows_hour", "bn_rows_quarter", "bn_rows_day",
                                        "bn_rows_week"};
    static const char *const brief[] = {"bn_brief_hour", "bn_brief_quarter", "bn_brief_day",
                                        "bn_brief_week"};
    static const char *const width[] = {"1 hour", "6 hours", "1 day", "7 days"};
    int day = grain == DB_BN_DAY, is_brief = kind == DB_BN_BRIEF;
    const char *p[9] = {from,
                        to,
                        mid,
                        kind == DB_BN_POOL ? id : NULL,
                        is_brief ? id : NULL,
                        kind == DB_BN_HOST ? id : NULL,
                        projects,
                        NULL,
                        NULL};
    if (is_brief) {
        p[7] = day ? w->weeks[0] : width[grain];
        p[8] = w->weeks[1];
    } else {
        p[7] = w->buckets;
        p[8] = w->week_buckets;
    }
    PGresult *r = NULL;
    enum db_status s = db_exec(c, is_brief ? brief[grain] : probe[grain], day ? 9 : 8, p, &r);
    return s < 0 ? s : rows_decode(r, 0, in);
}

enum db_status db_bn_rows_fleet(struct db_conn *c, const char *from, const char *to,
                                const char *mid, struct db_bn_input *in)
{
    const char *p[3] = {from, to, mid};
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "bn_rows_fleet", 3, p, &r);
    return s < 0 ? s : rows_decode(r, 1, in);
}

static const char *const sig_cols[] = {
    "host_id",   "samples",   "util",          "mem_pct",   "power",   "st_id",
    "st_at",     "read_mbps", "min_read_mbps", "bw_id",     "bw_at",   "busbw",
    "min_busbw", "dg_id",     "dg_at",         "dg_status", "dg_read", "dg_min"};
#define NSIGCOLS (sizeof sig_cols / sizeof sig_cols[0])

/* A nullable number: *has and *v. */
static void opt(const PGresult *r, int row, int col, int *has, double *v)
{
    *has = !db_val_isnull(r, row, col);
    *v = *has ? db_val_num(r, row, col) : 0;
}

static void signal_row(const PGresult *r, int k, const int *col, struct db_bn_signal *g)
{
    g->host_id = db_val(r, k, col[0]);
    g->gpu_samples = db_val_long(r, k, col[1]);
    g->has_gpu = g->gpu_samples > 0;
    opt(r, k, col[2], &g->has_util, &g->util_pct);
    opt(r, k, col[3], &g->has_mem, &g->mem_used_pct);
    opt(r, k, col[4], &g->has_power, &g->power_w);
    g->has_storage = !db_val_isnull(r, k, col[5]);
    g->storage_run_id = db_val(r, k, col[5]);
    g->storage_at = db_val(r, k, col[6]);
    g->read_mbps = db_val_num(r, k, col[7]);
    opt(r, k, col[8], &g->has_min_read, &g->min_read_mbps);
    g->has_bw = !db_val_isnull(r, k, col[9]);
    g->bw_run_id = db_val(r, k, col[9]);
    g->bw_at = db_val(r, k, col[10]);
    g->busbw_gbps = db_val_num(r, k, col[11]);
    opt(r, k, col[12], &g->has_min_bw, &g->min_busbw_gbps);
    g->has_diag = !db_val_isnull(r, k, col[13]);
    g->diag_run_id = db_val(r, k, col[13]);
    g->diag_at = db_val(r, k, col[14]);
    g->diag_status = db_val(r, k, col[15]);
    g->diag_read_mbps = db_val_num(r, k, col[16]);
    opt(r, k, col[17], &g->has_diag_min, &g->diag_min_read_mbps);
}

enum db_status db_bn_signals(struct db_conn *c, const char *hosts, const char *from, const char *to,
                             struct db_bn_input *in)
{
    const char *p[3] = {hosts, from, to};
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "bn_signals", 3, p, &r);
    if (s < 0)
        return s;
    PQclear(in->res[1]);
    free(in->signals);
    in->res[1] = r;
    in->nsignals = 0;
    size_t n = (size_t)PQntuples(r);
    in->signals = calloc(n + 1, sizeof *in->signals);
    if (in->signals == NULL)
        return DB_HARD_ERROR;
    int col[NSIGCOLS];
    db_cols(r, sig_cols, (int)NSIGCOLS, col);
    for (size_t i = 0; i < n; i++)
        signal_row(r, (int)i, col, &in->signals[i]);
    in->nsignals = n;
    return s;
}
