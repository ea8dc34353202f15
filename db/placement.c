/* placement.c — see placement.h. */
#include "db/placement.h"

#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

const struct db_stmt db_place_stmts[] = {
    /* The brief's reports per pool from the day rollup: the UTC days from the one holding
     * from up to to, their first start and last end (clipped to the window), and the
     * project's hosts that hold them (a uuid[] literal per pool). The days and the hosts
     * are an index-only scan of the brief index (migrations/0036: (brief_id, bucket)
     * INCLUDE (host_id)); a rollup row always counts at least one report (the trigger
     * inserts counts and only adds to them), so every row is a day with reports. The first
     * start is in a pool's first day (a report belongs to the day of its window_start),
     * the last end in its last day or the one before (a window is at most 24 h,
     * api/work_reports.c): only those days' rows are read from the heap. */
    {"place_pools",
     "WITH d AS MATERIALIZED (SELECT h.pool_id, h.project_id, d.host_id, d.bucket"
     "  FROM work_report_days d JOIN hosts h ON h.id = d.host_id"
     "  WHERE d.brief_id = $2::uuid AND d.bucket >= date_trunc('day', $3::timestamptz, 'UTC')"
     "   AND d.bucket < $4::timestamptz),"
     " days AS (SELECT pool_id, count(*)::int AS days, min(bucket) AS lo, max(bucket) AS hi"
     "  FROM (SELECT DISTINCT pool_id, bucket FROM d) x GROUP BY pool_id),"
     " hs AS (SELECT pool_id, (array_agg(host_id ORDER BY host_id) FILTER (WHERE mine))::text"
     "  AS hosts FROM (SELECT pool_id, host_id, bool_or(project_id = $1::uuid) AS mine FROM d"
     "   GROUP BY pool_id, host_id) x GROUP BY pool_id),"
     " b AS (SELECT DISTINCT e.bucket FROM days, unnest(ARRAY[days.lo, days.hi,"
     "   days.hi - interval '24 hours']) AS e(bucket)"
     "  WHERE e.bucket >= date_trunc('day', $3::timestamptz, 'UTC')),"
     " x AS (SELECT h.pool_id, x.bucket, x.min_start, x.max_end FROM b CROSS JOIN LATERAL"
     "  (SELECT y.host_id, y.bucket, y.min_start, y.max_end FROM work_report_days y"
     "   WHERE y.brief_id = $2::uuid AND y.bucket = b.bucket) x JOIN hosts h ON h.id = x.host_id),"
     " ends AS (SELECT days.pool_id,"
     "   extract(epoch FROM greatest(min(x.min_start) FILTER (WHERE x.bucket = days.lo),"
     "    $3::timestamptz)) AS first_start,"
     "   extract(epoch FROM least(max(x.max_end) FILTER (WHERE x.bucket >= days.hi"
     "    - interval '24 hours'), $4::timestamptz)) AS last_end"
     "  FROM days JOIN x ON x.pool_id = days.pool_id GROUP BY days.pool_id)"
     " SELECT p.id::text, p.name, p.gpu_model, (p.spec->>'gpu_count')::int AS gpu_count,"
     "  (p.spec->>'price_per_hour')::float8 AS hour,"
     "  coalesce((p.spec->>'storage_price_per_gb_month')::float8, 0) AS storage,"
     "  coalesce((p.spec->>'egress_price_per_gb')::float8, 0) AS egress,"
     "  coalesce((p.spec->>'overhead_pct')::float8, 0) AS overhead,"
     "  coalesce(days.days, 0) AS days, coalesce(ends.first_start, 0) AS first_start,"
     "  coalesce(ends.last_end, 0) AS last_end, coalesce(hs.hosts, '{}') AS hosts"
     " FROM pools p LEFT JOIN days ON days.pool_id = p.id LEFT JOIN ends ON ends.pool_id = p.id"
     "  LEFT JOIN hs ON hs.pool_id = p.id WHERE p.project_id = $1::uuid"
     " ORDER BY p.seq LIMIT 1000"},
    {"place_baselines", "SELECT b.gpu_model, b.gpu_count, b.model_revision, b.concurrency, b.value"
                        " FROM baselines b WHERE b.metric = $2"
                        "  AND b.pool_id IN (SELECT id FROM pools WHERE project_id = $1::uuid)"
                        " ORDER BY b.seq DESC LIMIT 2000"},
};
const size_t db_place_nstmts = sizeof db_place_stmts / sizeof db_place_stmts[0];

void db_place_free(struct db_place_input *in)
{
    free(in->pools);
    free(in->baselines);
    free(in->hosts);
    for (int i = 0; i < 3; i++)
        PQclear(in->res[i]);
    memset(in, 0, sizeof *in);
}

/* in->hosts: the pools' host lists (column 11, each "{a,b}" or "{}") joined into one. */
static int hosts_literal(struct db_place_input *in)
{
    const PGresult *r = in->res[0];
    size_t len = 3;
    for (size_t i = 0; i < in->npools; i++) {
        const char *v = db_val(r, (int)i, 11);
        len += (v ? strlen(v) : 0) + 1;
    }
    in->hosts = malloc(len);
    if (in->hosts == NULL)
        return -1;
    size_t at = 0;
    in->hosts[at++] = '{';
    for (size_t i = 0; i < in->npools; i++) {
        const char *v = db_val(r, (int)i, 11);
        size_t n = v ? strlen(v) : 0;
        if (n <= 2 || v[0] != '{' || v[n - 1] != '}')
            continue; /* "{}": no host of this pool ran the brief */
        if (at > 1)
            in->hosts[at++] = ',';
        memcpy(in->hosts + at, v + 1, n - 2);
        at += n - 2;
    }
    in->hosts[at++] = '}';
    in->hosts[at] = '\0';
    return 0;
}

enum db_status db_place_read(struct db_conn *c, const char *project_id, const char *brief_id,
                             const char *from, const char *to, struct db_place_input *in)
{
    PGresult *r = NULL;
    db_place_free(in);
    const char *p[4] = {project_id, brief_id, from, to};
    enum db_status s = db_exec(c, "place_pools", 4, p, &r);
    if (s < 0)
        return s;
    size_t n = (size_t)PQntuples(r);
    in->res[0] = r;
    in->pools = calloc(n + 1, sizeof *in->pools);
    if (in->pools == NULL) {
        db_place_free(in);
        return DB_HARD_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        struct db_place_pool *o = &in->pools[i];
        int row = (int)i;
        o->id = db_val(r, row, 0);
        o->name = db_val(r, row, 1);
        o->gpu_model = db_val(r, row, 2);
        o->gpu_count = db_val_long(r, row, 3);
        o->prices.per_hour = db_val_num(r, row, 4);
        o->prices.storage_per_gb_month = db_val_num(r, row, 5);
        o->prices.egress_per_gb = db_val_num(r, row, 6);
        o->prices.overhead_pct = db_val_num(r, row, 7);
        o->days = db_val_long(r, row, 8);
        o->first_start = db_val_num(r, row, 9);
        o->last_end = db_val_num(r, row, 10);
    }
    in->npools = n;
    if (hosts_literal(in) != 0) {
        db_place_free(in);
        return DB_HARD_ERROR;
    }
    return n == 0 ? DB_NO_RESULTS : DB_MANY_RESULTS;
}

enum db_status db_place_baselines(struct db_conn *c, const char *project_id, const char *metric,
                                  struct db_place_input *in)
{
    PGresult *r = NULL;
    const char *p[2] = {project_id, metric};
    enum db_status s = db_exec(c, "place_baselines", 2, p, &r);
    if (s < 0)
        return s;
    size_t n = (size_t)PQntuples(r);
    PQclear(in->res[1]);
    free(in->baselines);
    in->res[1] = r;
    in->nbaselines = 0;
    in->baselines = calloc(n + 1, sizeof *in->baselines);
    if (in->baselines == NULL)
        return DB_HARD_ERROR;
    for (size_t i = 0; i < n; i++) {
        struct db_place_baseline *o = &in->baselines[i];
        o->gpu_model = db_val(r, (int)i, 0);
        o->gpu_count = db_val_long(r, (int)i, 1);
        o->model_revision = db_val(r, (int)i, 2);
        o->concurrency = db_val_long(r, (int)i, 3);
        o->value = db_val_num(r, (int)i, 4);
    }
    in->nbaselines = n;
    return n == 0 ? DB_NO_RESULTS : DB_MANY_RESULTS;
}
