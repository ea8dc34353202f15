/* costs.c — see costs.h. The held-time SQL: each change lasts until the next one (lead),
 * the last until min(to, now()); intervals in a held state are clipped to the window and
 * summed. The same arithmetic, in C, is plan_held_seconds (planner/costs.c). */
#include "db/costs.h"

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

#define EPOCH(e) USAGE_EPOCH(e)

/* A window [f, t) in parts: whole ISO weeks [fw, tw), whole UTC days [fd, td) outside
 * them, whole 6-hour quarters [fq, tq) outside those, whole UTC hours [fh, th) outside
 * those, and the rest [f, fh) and [th, t) (when f and t fall in one hour, [f, t)).
 * Reports belong to the part holding their window_start: weeks, days, quarters and hours
 * are read from the rollups (migrations/0010), the rest from the reports themselves. The
 * bounds are parameters computed in C (db_cost_reports): $1 f, $2 t, $3 fh, $4 th,
 * $5 fd, $6 td, $7 fw, $8 tw, $9 fq, $10 tq; $11 is the scope (IN_SCOPE). */
#define B_F  "$1::timestamptz"
#define B_T  "$2::timestamptz"
#define B_FH "$3::timestamptz"
#define B_TH "$4::timestamptz"
#define B_FD "$5::timestamptz"
#define B_TD "$6::timestamptz"
#define B_FW "$7::timestamptz"
#define B_TW "$8::timestamptz"
#define B_FQ "$9::timestamptz"
#define B_TQ "$10::timestamptz"
/* The phase sums (migrations/0032) of a rollup row, and of one report as the rollup
 * trigger sums it. */
#define PHASE_COLS(x)                                                                   \
    x "phase_queue_seconds, " x "phase_load_seconds, " x "phase_preprocess_seconds, " x \
      "phase_compute_seconds, " x "phase_communication_seconds, " x "phase_write_seconds"
#define ROLLUP_PHASES PHASE_COLS("d.") ", d.phase_reports, d.phase_busy_seconds," ROLLUP_FAILS
/* The failure class sums (migrations/0035), likewise (usage_sql.h). */
#define ROLLUP_FAILS USAGE_ROLLUP_FAILS
#define RAW_FAILS    USAGE_RAW_FAILS
#define RAW_GAVE     "num_nonnulls(" PHASE_COLS("r.") ") > 0"
#define RAW_PHASES                                                                          \
    "coalesce(r.phase_queue_seconds, 0), coalesce(r.phase_load_seconds, 0),"                \
    " coalesce(r.phase_preprocess_seconds, 0), coalesce(r.phase_compute_seconds, 0),"       \
    " coalesce(r.phase_communication_seconds, 0), coalesce(r.phase_write_seconds, 0),"      \
    " CASE WHEN " RAW_GAVE " THEN 1 ELSE 0 END, CASE WHEN " RAW_GAVE " THEN r.busy_seconds" \
    " ELSE 0 END," RAW_FAILS
#define ROLLUP_PART(table, cond)                                                                 \
    "SELECT d.host_id, d.brief_id, d.unit, " USAGE_ROLLUP_SUMS ", " ROLLUP_PHASES " FROM " table \
    " d WHERE " cond
#define RAW_PART(cond)                                                                           \
    "SELECT r.host_id, r.brief_id, r.unit, " USAGE_RAW_SUMS ", " RAW_PHASES " FROM work_reports" \
    " r WHERE " cond

/* Each part is one index range: at each grain, the stretch before the first whole bucket
 * of the coarser grain and the stretch after its last (usage_sql.h). RP and WP: the
 * columns of a rollup part and of a raw part (ROLLUP_PART and RAW_PART, or the narrow
 * ones of placement). */
#define EDGES(RP, table, lo, hi, clo, chi)           \
    RP(table, USAGE_BEFORE("d.bucket", lo, hi, clo)) \
    " UNION ALL " RP(table, USAGE_AFTER("d.bucket", hi, clo, chi))
// clang-format off
#define WINDOW_SOURCES_OF(RP, WP)                                                  \
    RP("work_report_weeks", "d.bucket >= " B_FW " AND d.bucket < " B_TW)           \
    " UNION ALL " EDGES(RP, "work_report_days", B_FD, B_TD, B_FW, B_TW)             \
    " UNION ALL " EDGES(RP, "work_report_quarters", B_FQ, B_TQ, B_FD, B_TD)         \
    " UNION ALL " EDGES(RP, "work_report_hours", B_FH, B_TH, B_FQ, B_TQ)            \
    " UNION ALL " WP(USAGE_BEFORE("r.window_start", B_F, B_T, B_FH))               \
    " UNION ALL " WP(USAGE_AFTER("r.window_start", B_T, B_FH, B_TH))
// clang-format on
#define WINDOW_SOURCES WINDOW_SOURCES_OF(ROLLUP_PART, RAW_PART)

/* The hosts of the scope ($3: a uuid[] literal of projects, NULL for every host). */
#define IN_SCOPE(col, N)                                              \
    "($" N "::uuid[] IS NULL OR " col " IN (SELECT x.id FROM hosts x" \
    " WHERE x.project_id = ANY ($" N "::uuid[])))"
// clang-format off
/* cost_hosts: see db_cost_input.hosts ($1 from, $2 to, $3 the scope); HIST and HOSTS: the
 * filters on host_state_history s and hosts h. cost_hosts_of: $3 a uuid[] of hosts. */
#define COST_HOSTS_SQL(HIST, HOSTS)                                                                     \
    "WITH w AS (SELECT $1::timestamptz AS f, least($2::timestamptz, now()) AS t),"        \
    " c AS (SELECT s.host_id, s.at, s.to_state,"                                           \
    "   lead(s.at) OVER (PARTITION BY s.host_id ORDER BY s.at, s.id) AS next_at"           \
    "  FROM host_state_history s, w WHERE s.at < w.t AND " HIST "),"  \
    " held AS (SELECT c.host_id,"                                                          \
    "   sum(" EPOCH("least(coalesce(c.next_at, w.t), w.t) - greatest(c.at, w.f)") ") AS held_s" \
    "  FROM c, w WHERE w.t > w.f AND c.to_state <> 'stopped'"                              \
    "   AND (c.next_at IS NULL OR c.next_at > w.f) GROUP BY c.host_id),"                   \
    " " USAGE_POOL_PRICES                                                                  \
    " SELECT h.id::text, h.name, p.id::text AS pool_id, p.name AS pool_name,"              \
    "  " USAGE_HOST_PROJECT ", p.hour, p.storage, p.egress, p.overhead,"                   \
    "  coalesce(held.held_s, 0) AS held_seconds"                                           \
    " FROM hosts h JOIN p ON p.id = h.pool_id LEFT JOIN held ON held.host_id = h.id"       \
    " WHERE " HOSTS                                                                        \
    " ORDER BY h.id"
#define HOSTS_IN(col, N) col " IN (SELECT unnest($" N "::uuid[]))"
// clang-format on

/* cost_reports ($11 the scope): SCOPE filters src. (A filter on a uuid[] of hosts is a
 * semi-join on the array's elements, as cost_hosts_of's, not host_id = ANY ($11): in the
 * generic plan of a prepared statement that one becomes an index condition or a linear
 * search of the array per row, 4 times slower at 1,000 hosts.) */
#define COST_REPORTS_SQL(SCOPE)                                                                   \
    "WITH src AS (" WINDOW_SOURCES "),"                                                           \
    " g AS (SELECT host_id, brief_id, unit, sum(reports)::int AS reports,"                        \
    "  sum(completed) AS completed, sum(failed) AS failed, sum(retried) AS retried,"              \
    "  sum(busy_seconds) AS busy, sum(covered_seconds) AS covered,"                               \
    "  sum(storage_gb_seconds) AS sgs, sum(storage_seconds) AS ss, sum(bytes_moved) AS bytes,"    \
    "  sum(phase_queue_seconds) AS ph_queue, sum(phase_load_seconds) AS ph_load,"                 \
    "  sum(phase_preprocess_seconds) AS ph_preprocess, sum(phase_compute_seconds) AS ph_compute," \
    "  sum(phase_communication_seconds) AS ph_communication,"                                     \
    "  sum(phase_write_seconds) AS ph_write, sum(phase_reports)::int AS ph_reports,"              \
    "  sum(phase_busy_seconds) AS ph_busy, sum(failures_oom) AS fl_oom,"                          \
    "  sum(failures_timeout) AS fl_timeout, sum(failures_data) AS fl_data,"                       \
    "  sum(failures_hardware) AS fl_hardware, sum(failures_preempted) AS fl_preempted,"           \
    "  sum(failures_other) AS fl_other, sum(failures_reports)::int AS fl_reports,"                \
    "  sum(failures_units) AS fl_units"                                                           \
    "  FROM src WHERE " SCOPE " GROUP BY host_id, brief_id, unit)"                                \
    " SELECT g.host_id::text, g.brief_id::text, br.name AS brief_name, g.unit, "                  \
    "g.reports,"                                                                                  \
    "  g.completed, g.failed, g.retried, g.busy, g.covered, g.sgs, g.ss, g.bytes,"                \
    "  g.ph_queue, g.ph_load, g.ph_preprocess, g.ph_compute, g.ph_communication,"                 \
    "  g.ph_write, g.ph_reports, g.ph_busy, g.fl_oom, g.fl_timeout, g.fl_data,"                   \
    "  g.fl_hardware, g.fl_preempted, g.fl_other, g.fl_reports, g.fl_units"                       \
    " FROM g LEFT JOIN briefs br ON br.id = g.brief_id"                                           \
    " ORDER BY g.host_id, g.brief_id NULLS FIRST, g.unit"

/* The placement's cost input (cost_reports_brief): the 9 usage sums only (the phases and
 * the failure classes are not priced), of the hosts of project $11 that hold brief $12's
 * day-rollup rows from the UTC day of $1 up to $2 (the hosts place_pools lists, derived
 * here so that this statement need not wait for it: it runs beside it, db_send). */
#define NARROW_ROLLUP(table, cond) \
    "SELECT d.host_id, d.brief_id, d.unit, " USAGE_ROLLUP_SUMS " FROM " table " d WHERE " cond
#define NARROW_RAW(cond) \
    "SELECT r.host_id, r.brief_id, r.unit, " USAGE_RAW_SUMS " FROM work_reports r WHERE " cond
#define BRIEF_HOSTS                                                                             \
    "src.host_id IN (SELECT b.host_id FROM work_report_days b JOIN hosts bh ON bh.id ="         \
    " b.host_id WHERE b.brief_id = $12::uuid AND b.bucket >= date_trunc('day', " B_F ", 'UTC')" \
    " AND b.bucket < " B_T " AND bh.project_id = $11::uuid)"
#define COST_REPORTS_BRIEF_SQL                                                                    \
    "WITH src AS (" WINDOW_SOURCES_OF(                                                            \
        NARROW_ROLLUP,                                                                            \
        NARROW_RAW) "),"                                                                          \
                    " g AS (SELECT host_id, brief_id, unit, sum(reports)::int AS reports,"        \
                    "  sum(completed) AS completed, sum(failed) AS failed, sum(retried) AS "      \
                    "retried,"                                                                    \
                    "  sum(busy_seconds) AS busy, sum(covered_seconds) AS covered,"               \
                    "  sum(storage_gb_seconds) AS sgs, sum(storage_seconds) AS ss, "              \
                    "sum(bytes_moved) AS bytes"                                                   \
                    "  FROM src WHERE " BRIEF_HOSTS " GROUP BY host_id, brief_id, unit)"          \
                    " SELECT g.host_id::text, g.brief_id::text, br.name AS brief_name, g.unit, "  \
                    "g.reports,"                                                                  \
                    "  g.completed, g.failed, g.retried, g.busy, g.covered, g.sgs, g.ss, g.bytes" \
                    " FROM g LEFT JOIN briefs br ON br.id = g.brief_id"                           \
                    " ORDER BY g.host_id, g.brief_id NULLS FIRST, g.unit"

const struct db_stmt db_cost_stmts[] = {
    {"cost_hosts", COST_HOSTS_SQL(IN_SCOPE("s.host_id", "3"),
                                  "$3::uuid[] IS NULL OR h.project_id = ANY ($3::uuid[])")},
    {"cost_hosts_of", COST_HOSTS_SQL(HOSTS_IN("s.host_id", "3"), HOSTS_IN("h.id", "3"))},
    {"cost_reports", COST_REPORTS_SQL(IN_SCOPE("src.host_id", "11"))},
    {"cost_reports_brief", COST_REPORTS_BRIEF_SQL},
};
const size_t db_cost_nstmts = sizeof db_cost_stmts / sizeof db_cost_stmts[0];

void db_cost_input_free(struct db_cost_input *in)
{
    free(in->hosts);
    free(in->rows);
    PQclear(in->res[0]);
    PQclear(in->res[1]);
    memset(in, 0, sizeof *in);
}

/* The phase columns of cost_reports: ph_<phase> in enum order, ph_reports, ph_busy (-1
 * for a column the result lacks: its figure reads 0). */
static void phase_cols(const PGresult *r, int cols[USAGE_PHASE_COUNT + 2])
{
    char name[32];
    for (int p = 0; p < USAGE_PHASE_COUNT; p++) {
        snprintf(name, sizeof name, "ph_%s", usage_phase_names[p]);
        cols[p] = PQfnumber(r, name);
    }
    cols[USAGE_PHASE_COUNT] = PQfnumber(r, "ph_reports");
    cols[USAGE_PHASE_COUNT + 1] = PQfnumber(r, "ph_busy");
}

static void phase_row(const PGresult *r, const int cols[USAGE_PHASE_COUNT + 2], int i,
                      struct usage_phases *out)
{
    for (int p = 0; p < USAGE_PHASE_COUNT; p++)
        out->seconds[p] = cols[p] < 0 ? 0 : db_val_num(r, i, cols[p]);
    int n = USAGE_PHASE_COUNT;
    out->reports = cols[n] < 0 ? 0 : db_val_long(r, i, cols[n]);
    out->busy_seconds = cols[n + 1] < 0 ? 0 : db_val_num(r, i, cols[n + 1]);
}

enum db_status db_cost_decode(PGresult *hosts, PGresult *reports, struct db_cost_input *in)
{
    int hc[DB_HOST_NCOLS], uc[DB_USE_NCOLS];
    size_t nh = (size_t)PQntuples(hosts), nr = (size_t)PQntuples(reports), pos = 0;
    memset(in, 0, sizeof *in);
    in->res[0] = hosts;
    in->res[1] = reports;
    in->hosts = calloc(nh + 1, sizeof *in->hosts);
    in->rows = calloc(nr + 1, sizeof *in->rows);
    if (in->hosts == NULL || in->rows == NULL) {
        db_cost_input_free(in);
        return DB_HARD_ERROR;
    }
    db_usage_host_cols(hosts, hc);
    int held = db_col(hosts, "held_seconds");
    for (size_t i = 0; i < nh; i++) {
        db_usage_host(hosts, hc, (int)i, &in->hosts[i]);
        in->hosts[i].held_seconds = db_val_num(hosts, (int)i, held);
    }
    in->nhosts = nh;
    db_usage_cols(reports, uc);
    int pc[USAGE_PHASE_COUNT + 2];
    phase_cols(reports, pc);
    int fc[USAGE_FAIL_COUNT + 2];
    db_usage_failure_cols(reports, fc);
    for (size_t i = 0; i < nr; i++) {
        struct usage_row *row = &in->rows[in->nrows];
        db_usage_row(reports, uc, (int)i, in->hosts, nh, &pos, row);
        phase_row(reports, pc, (int)i, &row->phases);
        db_usage_failures(reports, fc, (int)i, &row->failures);
        if (row->host != DB_NO_HOST)
            in->nrows++; /* else: not in the hosts result (deleted meanwhile) */
    }
    return in->nrows == 0 ? DB_NO_RESULTS : in->nrows == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

/* The bounds of the window's parts (parameters $3 to $10 of cost_reports). */
static int report_bounds(const char *from, const char *to, char b[8][40])
{
    const int64_t hour = 3600LL * 1000000, quarter = 6 * hour, day = 24 * hour, week = 7 * day;
    const int64_t monday = 4 * day; /* 1970-01-05, the first Monday after the epoch */
    int64_t f, t;
    if (util_parse_rfc3339(from, &f) != 0 || util_parse_rfc3339(to, &t) != 0)
        return -1;
    util_rfc3339(util_ceil_us(f, hour), b[0], sizeof b[0]);
    util_rfc3339(util_floor_us(t, hour), b[1], sizeof b[1]);
    util_rfc3339(util_ceil_us(f, day), b[2], sizeof b[2]);
    util_rfc3339(util_floor_us(t, day), b[3], sizeof b[3]);
    util_rfc3339(util_ceil_us(f - monday, week) + monday, b[4], sizeof b[4]);
    util_rfc3339(util_floor_us(t - monday, week) + monday, b[5], sizeof b[5]);
    util_rfc3339(util_ceil_us(f, quarter), b[6], sizeof b[6]);
    util_rfc3339(util_floor_us(t, quarter), b[7], sizeof b[7]);
    return 0;
}

static enum db_status read_with(struct db_conn *c, const char *hosts_stmt, const char *reports_stmt,
                                const char *from, const char *to, const char *set,
                                struct db_cost_input *in)
{
    PGresult *hosts = NULL, *reports = NULL;
    char b[8][40];
    db_cost_input_free(in);
    if (report_bounds(from, to, b) != 0)
        return DB_HARD_ERROR;
    const char *ph[3] = {from, to, set};
    const char *pr[11] = {from, to, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], set};
    enum db_status s = db_exec(c, hosts_stmt, 3, ph, &hosts);
    if (s >= 0)
        s = db_exec(c, reports_stmt, 11, pr, &reports);
    if (s < 0) {
        PQclear(hosts);
        return s;
    }
    return db_cost_decode(hosts, reports, in);
}

enum db_status db_cost_read(struct db_conn *c, const char *from, const char *to,
                            const char *projects, struct db_cost_input *in)
{
    return read_with(c, "cost_hosts", "cost_reports", from, to, projects, in);
}

enum db_status db_cost_send_brief(struct db_conn *side, const char *from, const char *to,
                                  const char *project_id, const char *brief_id)
{
    char b[8][40];
    if (report_bounds(from, to, b) != 0)
        return DB_HARD_ERROR;
    const char *p[12] = {from, to,   b[0], b[1], b[2],       b[3],
                         b[4], b[5], b[6], b[7], project_id, brief_id};
    return db_send(side, "cost_reports_brief", 12, p);
}

enum db_status db_cost_read_brief(struct db_conn *c, struct db_conn *side, const char *from,
                                  const char *to, const char *project_id, const char *brief_id,
                                  const char *hosts, struct db_cost_input *in)
{
    PGresult *hr = NULL, *rr = NULL;
    db_cost_input_free(in);
    const char *ph[3] = {from, to, hosts};
    enum db_status s = hosts ? db_exec(c, "cost_hosts_of", 3, ph, &hr) : DB_HARD_ERROR;
    /* side's result is received whatever happened here, so that side is free again */
    enum db_status sr = side ? db_receive(side, "cost_reports_brief", &rr) : DB_NO_RESULTS;
    if (s >= 0 && side == NULL && (sr = db_cost_send_brief(c, from, to, project_id, brief_id)) >= 0)
        sr = db_receive(c, "cost_reports_brief", &rr);
    if (s < 0 || sr < 0) {
        PQclear(hr);
        PQclear(rr);
        return s < 0 ? s : sr;
    }
    return db_cost_decode(hr, rr, in);
}
