/* usage_sql.h — SQL fragments shared by the cost (db/costs.c) and recommendation
 * (db/recommend.c) reads of work reports: the usage sums of a rollup row and of one
 * report, the two index ranges at the edges of a window's coarser buckets, and the
 * pools' prices. */
#ifndef GPUFLEET_DB_USAGE_SQL_H
#define GPUFLEET_DB_USAGE_SQL_H

#define USAGE_EPOCH(e) "extract(epoch FROM " e ")::float8"

/* The 9 usage sums of rollup row d: reports, completed, failed, retried, busy seconds,
 * covered seconds, storage GB-seconds, storage seconds, bytes moved. */
#define USAGE_ROLLUP_SUMS                                                             \
    "d.reports, d.completed, d.failed, d.retried, d.busy_seconds, d.covered_seconds," \
    " d.storage_gb_seconds, d.storage_seconds, d.bytes_moved"

/* The same 9 of report r alone (migrations/0010 sums them this way). */
#define USAGE_SECS USAGE_EPOCH("r.window_end - r.window_start")
#define USAGE_RAW_SUMS                                                                         \
    "1, r.completed::float8, r.failed::float8, r.retried::float8, r.busy_seconds, " USAGE_SECS \
    ", coalesce(r.storage_gb * " USAGE_SECS ", 0),"                                            \
    " CASE WHEN r.storage_gb IS NULL THEN 0 ELSE " USAGE_SECS " END,"                          \
    " coalesce(r.bytes_moved, 0)::float8"

/* The failure class sums (migrations/0035) of rollup row d (USAGE_ROLLUP_FAILS) and of
 * report r alone, as the rollup trigger sums it (USAGE_RAW_FAILS): Σ of each class,
 * reports that classified, and their failed + retried units. */
#define USAGE_FAIL_COLS(x)                                                                  \
    x "failures_oom, " x "failures_timeout, " x "failures_data, " x "failures_hardware, " x \
      "failures_preempted, " x "failures_other"
#define USAGE_ROLLUP_FAILS " " USAGE_FAIL_COLS("d.") ", d.failures_reports, d.failures_units"
#define USAGE_RAW_FGAVE    "num_nonnulls(" USAGE_FAIL_COLS("r.") ") > 0"
#define USAGE_RAW_FAILS                                                            \
    " coalesce(r.failures_oom, 0), coalesce(r.failures_timeout, 0),"               \
    " coalesce(r.failures_data, 0), coalesce(r.failures_hardware, 0),"             \
    " coalesce(r.failures_preempted, 0), coalesce(r.failures_other, 0),"           \
    " CASE WHEN " USAGE_RAW_FGAVE " THEN 1 ELSE 0 END, CASE WHEN " USAGE_RAW_FGAVE \
    " THEN (r.failed + r.retried)::float8 ELSE 0 END"
/* Their sums over rows of either, named as db_usage_failure_cols reads them. */
#define USAGE_FAIL_SUMS                                                          \
    "sum(failures_oom) AS fl_oom, sum(failures_timeout) AS fl_timeout,"          \
    " sum(failures_data) AS fl_data, sum(failures_hardware) AS fl_hardware,"     \
    " sum(failures_preempted) AS fl_preempted, sum(failures_other) AS fl_other," \
    " sum(failures_reports)::int AS fl_reports, sum(failures_units) AS fl_units"

/* A stretch [lo, hi) read at one grain around the whole buckets [clo, chi) of a coarser
 * grain: the part before clo and the part after chi, each one index range on col.
 * least/greatest make the second part empty when [clo, chi) is empty. */
#define USAGE_BEFORE(col, lo, hi, clo) col " >= " lo " AND " col " < least(" clo ", " hi ")"
#define USAGE_AFTER(col, hi, clo, chi) \
    col " >= greatest(" chi ", least(" clo ", " hi ")) AND " col " < " hi

/* A host's project, as the hosts results of the cost reads give it (h: hosts). */
#define USAGE_HOST_PROJECT              \
    "h.project_id::text AS project_id," \
    " (SELECT pr.name FROM projects pr WHERE pr.id = h.project_id) AS project_name"

/* A CTE p: every pool's prices, each read out of its JSON spec once per pool rather than
 * once per host row. */
#define USAGE_POOL_PRICES                                                            \
    "p AS MATERIALIZED (SELECT id, name, (spec->>'price_per_hour')::float8 AS hour," \
    " coalesce((spec->>'storage_price_per_gb_month')::float8, 0) AS storage,"        \
    " coalesce((spec->>'egress_price_per_gb')::float8, 0) AS egress,"                \
    " coalesce((spec->>'overhead_pct')::float8, 0) AS overhead FROM pools)"

#endif
