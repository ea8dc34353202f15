/* gpu_metrics.c — see gpu_metrics.h. */
#include "db/gpu_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/monitor_lease.h"

/* The watched hosts h with their pools p, as the monitor claims them
 * (db/monitor_lease.c). */
#define WATCHED_HOSTS " FROM hosts h JOIN pools p ON p.id = h.pool_id"
#define WATCHED \
    " h.state IN " DB_MON_WATCHED " AND coalesce((p.spec->'monitor'->>'enabled')::boolean, true)"

/* A reading of gpus row g while current (x.cur), else NULL. */
#define CUR(col) " CASE WHEN x.cur THEN g." col " END AS " col

// clang-format off
const struct db_stmt db_gpu_metrics_stmts[] = {
    /* One row per GPU of a watched host, from the latest values monitor_store keeps in
     * gpus (an index scan of gpus_host per host, or one pass over gpus). Current: listed
     * by the host's newest sample (an empty list, an inventory not read, lists none), and
     * that sample at most two monitor intervals old. */
    {"gpu_metrics_gpus",
     "SELECT h.name AS host, p.name AS pool, g.uuid, g.name AS model, g.pci_bus_id, g.index,"
     " extract(epoch FROM g.last_seen) AS last_seen, g.missing_since IS NOT NULL AS missing,"
     CUR("util_gpu") "," CUR("util_mem") "," CUR("mem_used_mib") "," CUR("mem_total_mib") ","
     CUR("temp_c") "," CUR("power_w") "," CUR("ecc_uncorrected_volatile") ","
     " CASE WHEN x.cur THEN g.retired_pages_pending::int END AS retired_pages_pending,"
     " CASE WHEN x.cur THEN g.remapped_rows_pending::int END AS remapped_rows_pending,"
     " CASE WHEN x.cur THEN g.remapped_rows_failure::int END AS remapped_rows_failure"
     WATCHED_HOSTS " JOIN gpus g ON g.host_id = h.id"
     " LEFT JOIN host_monitor m ON m.host_id = h.id"
     " CROSS JOIN LATERAL (SELECT coalesce(g.missing_since IS NULL"
     "   AND g.last_seen >= m.last_sample_at AND m.last_sample_at > now() - make_interval("
     "   secs => 2 * coalesce((p.spec->'monitor'->>'interval_seconds')::int, 60)), false)"
     "   AS cur) x"
     " WHERE" WATCHED " ORDER BY h.name, g.index NULLS LAST, g.uuid"},
    {"gpu_metrics_events",
     "SELECT h.name AS host, p.name AS pool, c.gpu_uuid, c.kind, c.code, c.category, c.total"
     " FROM gpu_event_counts c JOIN hosts h ON h.id = c.host_id JOIN pools p ON p.id = h.pool_id"
     " WHERE" WATCHED
     " ORDER BY h.name, c.gpu_uuid NULLS FIRST, c.kind, c.code NULLS FIRST,"
     " c.category NULLS FIRST"},
    {"gpu_metrics_hosts",
     "SELECT h.name AS host, p.name AS pool, extract(epoch FROM m.last_sample_at) AS last_sample_at"
     WATCHED_HOSTS " LEFT JOIN host_monitor m ON m.host_id = h.id"
     " WHERE" WATCHED " ORDER BY h.name"},
    {"gpu_metrics_states",
     "SELECT h.state, coalesce(m.state, 'unknown') AS monitor_state, count(*) AS hosts"
     WATCHED_HOSTS " LEFT JOIN host_monitor m ON m.host_id = h.id"
     " WHERE" WATCHED " GROUP BY 1, 2 ORDER BY 1, 2"},
};
// clang-format on
const size_t db_gpu_metrics_nstmts = sizeof db_gpu_metrics_stmts / sizeof db_gpu_metrics_stmts[0];

/* A number column: NAN for SQL NULL, and for text that is not wholly a number. */
static double num(const PGresult *r, int row, int col)
{
    const char *v = db_val(r, row, col);
    if (v == NULL || *v == '\0')
        return NAN;
    char *end;
    double d = strtod(v, &end);
    return *end == '\0' ? d : NAN;
}

static long integer_or(const PGresult *r, int row, int col, long none)
{
    double d = num(r, row, col);
    return isfinite(d) ? (long)d : none;
}

/* Runs stmt into m->res[slot] and allocates *rows for its rows (elem bytes each).
 * Returns the row count, or -1 (status in *st). */
static long run(struct db_conn *c, struct db_gpu_metrics *m, int slot, const char *stmt,
                size_t elem, void **rows, enum db_status *st)
{
    PGresult *r;
    *st = db_exec(c, stmt, 0, NULL, &r);
    if (*st < 0)
        return -1;
    m->res[slot] = r;
    int n = PQntuples(r);
    *rows = n > 0 ? calloc((size_t)n, elem) : NULL;
    if (n > 0 && *rows == NULL) {
        *st = DB_HARD_ERROR;
        return -1;
    }
    return n;
}

static const char *const reading_cols[DB_GPU_NREADINGS] = {"util_gpu",
                                                           "util_mem",
                                                           "mem_used_mib",
                                                           "mem_total_mib",
                                                           "temp_c",
                                                           "power_w",
                                                           "ecc_uncorrected_volatile",
                                                           "retired_pages_pending",
                                                           "remapped_rows_pending",
                                                           "remapped_rows_failure"};

static enum db_status read_gpus(struct db_conn *c, struct db_gpu_metrics *m)
{
    enum db_status st;
    void *rows;
    long n = run(c, m, 0, "gpu_metrics_gpus", sizeof *m->gpus, &rows, &st);
    if (n < 0)
        return st;
    m->gpus = rows;
    m->ngpus = (size_t)n;
    const PGresult *r = m->res[0];
    enum { HOST, POOL, UUID, MODEL, PCI, INDEX, LAST_SEEN, MISSING, NCOLS };
    static const char *const names[NCOLS] = {"host",       "pool",  "uuid",      "model",
                                             "pci_bus_id", "index", "last_seen", "missing"};
    int col[NCOLS], rcol[DB_GPU_NREADINGS];
    if (n == 0)
        return st;
    db_cols(r, names, NCOLS, col);
    db_cols(r, reading_cols, DB_GPU_NREADINGS, rcol);
    for (int i = 0; i < (int)n; i++) {
        struct db_gpu_metric *g = &m->gpus[i];
        g->host = db_val(r, i, col[HOST]);
        g->pool = db_val(r, i, col[POOL]);
        g->uuid = db_val(r, i, col[UUID]);
        g->model = db_val(r, i, col[MODEL]);
        g->pci_bus_id = db_val(r, i, col[PCI]);
        g->index = integer_or(r, i, col[INDEX], -1);
        g->last_seen = num(r, i, col[LAST_SEEN]);
        g->missing = db_val_bool(r, i, col[MISSING]);
        for (int k = 0; k < DB_GPU_NREADINGS; k++)
            g->reading[k] = num(r, i, rcol[k]);
    }
    return st;
}

static enum db_status read_events(struct db_conn *c, struct db_gpu_metrics *m)
{
    enum db_status st;
    void *rows;
    long n = run(c, m, 1, "gpu_metrics_events", sizeof *m->events, &rows, &st);
    if (n < 0)
        return st;
    m->events = rows;
    m->nevents = (size_t)n;
    const PGresult *r = m->res[1];
    enum { HOST, POOL, GPU, KIND, CODE, CATEGORY, TOTAL, NCOLS };
    static const char *const names[NCOLS] = {"host", "pool",     "gpu_uuid", "kind",
                                             "code", "category", "total"};
    int col[NCOLS];
    if (n == 0)
        return st;
    db_cols(r, names, NCOLS, col);
    for (int i = 0; i < (int)n; i++) {
        struct db_gpu_event_count *e = &m->events[i];
        e->host = db_val(r, i, col[HOST]);
        e->pool = db_val(r, i, col[POOL]);
        e->gpu_uuid = db_val(r, i, col[GPU]);
        e->kind = db_val(r, i, col[KIND]);
        e->category = db_val(r, i, col[CATEGORY]);
        e->code = integer_or(r, i, col[CODE], -1);
        double t = num(r, i, col[TOTAL]);
        e->total = isfinite(t) && t >= 0 ? (long long)t : -1; /* -1: unreadable, not shown */
    }
    return st;
}

static enum db_status read_hosts(struct db_conn *c, struct db_gpu_metrics *m)
{
    enum db_status st;
    void *rows;
    long n = run(c, m, 2, "gpu_metrics_hosts", sizeof *m->hosts, &rows, &st);
    if (n < 0)
        return st;
    m->hosts = rows;
    m->nhosts = (size_t)n;
    const PGresult *r = m->res[2];
    if (n == 0)
        return st;
    int host = db_col(r, "host"), pool = db_col(r, "pool"), at = db_col(r, "last_sample_at");
    for (int i = 0; i < (int)n; i++) {
        m->hosts[i].host = db_val(r, i, host);
        m->hosts[i].pool = db_val(r, i, pool);
        m->hosts[i].last_sample_at = num(r, i, at);
    }
    return st;
}

static enum db_status read_states(struct db_conn *c, struct db_gpu_metrics *m)
{
    enum db_status st;
    void *rows;
    long n = run(c, m, 3, "gpu_metrics_states", sizeof *m->states, &rows, &st);
    if (n < 0)
        return st;
    m->states = rows;
    m->nstates = (size_t)n;
    const PGresult *r = m->res[3];
    if (n == 0)
        return st;
    int state = db_col(r, "state"), mstate = db_col(r, "monitor_state"), hosts = db_col(r, "hosts");
    for (int i = 0; i < (int)n; i++) {
        m->states[i].state = db_val(r, i, state);
        m->states[i].monitor_state = db_val(r, i, mstate);
        m->states[i].hosts = integer_or(r, i, hosts, -1);
    }
    return st;
}

static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct db_gpu_metrics *m = arg;
    enum db_status s;
    if ((s = read_gpus(c, m)) < 0 || (s = read_events(c, m)) < 0 || (s = read_hosts(c, m)) < 0 ||
        (s = read_states(c, m)) < 0)
        return s;
    return DB_MANY_RESULTS;
}

enum db_status db_gpu_metrics_read(struct db_gpu_metrics *m)
{
    memset(m, 0, sizeof *m);
    enum db_status s = db_run(read_fn, m);
    if (s < 0)
        db_gpu_metrics_free(m);
    return s;
}

void db_gpu_metrics_free(struct db_gpu_metrics *m)
{
    free(m->gpus);
    free(m->events);
    free(m->hosts);
    free(m->states);
    for (size_t i = 0; i < sizeof m->res / sizeof m->res[0]; i++)
        PQclear(m->res[i]);
    memset(m, 0, sizeof *m);
}
