/* gpu_metrics.c — see gpu_metrics.h. */
#include "db/gpu_metrics.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/monitor_lease.h"

/* The hosts h with their pools p; the watched ones are those DB_MON_WATCHED_WHERE admits,
 * as the monitor claims them (db/monitor_lease.h). */
#define WATCHED_HOSTS " FROM hosts h JOIN pools p ON p.id = h.pool_id"
#define WATCHED       DB_MON_WATCHED_WHERE

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

/* One statement's rows as an array of elem-byte structs. Its first nstr columns are
 * strings borrowed from the result, stored at the struct offsets str_off; fill reads the
 * other columns of row i (col: the column numbers of cols, db_cols). */
struct reader {
    const char *stmt;
    const char *const *cols;
    int ncols, nstr;
    const size_t *str_off;
    size_t elem;
    void (*fill)(const PGresult *r, int i, const int *col, void *row);
};
#define MAX_COLS 24

/* Runs rd's statement into m->res[slot] and reads its rows into *rows (n of them).
 * Returns the status; *rows stays NULL when there are none. */
static enum db_status read_rows(struct db_conn *c, struct db_gpu_metrics *m, int slot,
                                const struct reader *rd, void **rows, size_t *n)
{
    PGresult *r;
    *rows = NULL;
    *n = 0;
    enum db_status st = db_exec(c, rd->stmt, 0, NULL, &r);
    if (st < 0)
        return st;
    m->res[slot] = r;
    int nr = PQntuples(r);
    if (nr == 0)
        return st;
    char *a = calloc((size_t)nr, rd->elem);
    if (a == NULL)
        return DB_HARD_ERROR;
    int col[MAX_COLS];
    db_cols(r, rd->cols, rd->ncols, col);
    for (int i = 0; i < nr; i++) {
        char *row = a + (size_t)i * rd->elem;
        for (int k = 0; k < rd->nstr; k++)
            *(const char **)(void *)(row + rd->str_off[k]) = db_val(r, i, col[k]);
        rd->fill(r, i, col, row);
    }
    *rows = a;
    *n = (size_t)nr;
    return st;
}

/* gpu_metrics_gpus: the strings, the identity numbers, then the readings
 * (DB_GPU_NREADINGS, in the order of enum db_gpu_reading). */
enum { G_INDEX = 5, G_LAST_SEEN, G_MISSING, G_READING };
static const char *const gpu_cols[G_READING + DB_GPU_NREADINGS] = {"host",
                                                                   "pool",
                                                                   "uuid",
                                                                   "model",
                                                                   "pci_bus_id",
                                                                   "index",
                                                                   "last_seen",
                                                                   "missing",
                                                                   "util_gpu",
                                                                   "util_mem",
                                                                   "mem_used_mib",
                                                                   "mem_total_mib",
                                                                   "temp_c",
                                                                   "power_w",
                                                                   "ecc_uncorrected_volatile",
                                                                   "retired_pages_pending",
                                                                   "remapped_rows_pending",
                                                                   "remapped_rows_failure"};
static const size_t gpu_str[G_INDEX] = {
    offsetof(struct db_gpu_metric, host), offsetof(struct db_gpu_metric, pool),
    offsetof(struct db_gpu_metric, uuid), offsetof(struct db_gpu_metric, model),
    offsetof(struct db_gpu_metric, pci_bus_id)};

static void fill_gpu(const PGresult *r, int i, const int *col, void *row)
{
    struct db_gpu_metric *g = row;
    g->index = integer_or(r, i, col[G_INDEX], -1);
    g->last_seen = num(r, i, col[G_LAST_SEEN]);
    g->missing = db_val_bool(r, i, col[G_MISSING]);
    for (int k = 0; k < DB_GPU_NREADINGS; k++)
        g->reading[k] = num(r, i, col[G_READING + k]);
}

static const char *const event_cols[7] = {"host",     "pool", "gpu_uuid", "kind",
                                          "category", "code", "total"};
static const size_t event_str[5] = {
    offsetof(struct db_gpu_event_count, host), offsetof(struct db_gpu_event_count, pool),
    offsetof(struct db_gpu_event_count, gpu_uuid), offsetof(struct db_gpu_event_count, kind),
    offsetof(struct db_gpu_event_count, category)};

static void fill_event(const PGresult *r, int i, const int *col, void *row)
{
    struct db_gpu_event_count *e = row;
    e->code = integer_or(r, i, col[5], -1);
    double t = num(r, i, col[6]);
    e->total = isfinite(t) && t >= 0 ? (long long)t : -1; /* -1: unreadable, not shown */
}

static const char *const host_cols[3] = {"host", "pool", "last_sample_at"};
static const size_t host_str[2] = {offsetof(struct db_gpu_metrics_host, host),
                                   offsetof(struct db_gpu_metrics_host, pool)};

static void fill_host(const PGresult *r, int i, const int *col, void *row)
{
    ((struct db_gpu_metrics_host *)row)->last_sample_at = num(r, i, col[2]);
}

static const char *const state_cols[3] = {"state", "monitor_state", "hosts"};
static const size_t state_str[2] = {offsetof(struct db_gpu_metrics_state, state),
                                    offsetof(struct db_gpu_metrics_state, monitor_state)};

static void fill_state(const PGresult *r, int i, const int *col, void *row)
{
    ((struct db_gpu_metrics_state *)row)->hosts = integer_or(r, i, col[2], -1);
}

#define NCOLS(a) ((int)(sizeof(a) / sizeof(a)[0]))
#define READER(stmt, cols, str, type, fill)                          \
    {                                                                \
        stmt, cols, NCOLS(cols), NCOLS(str), str, sizeof(type), fill \
    }
static const struct reader readers[4] = {
    READER("gpu_metrics_gpus", gpu_cols, gpu_str, struct db_gpu_metric, fill_gpu),
    READER("gpu_metrics_events", event_cols, event_str, struct db_gpu_event_count, fill_event),
    READER("gpu_metrics_hosts", host_cols, host_str, struct db_gpu_metrics_host, fill_host),
    READER("gpu_metrics_states", state_cols, state_str, struct db_gpu_metrics_state, fill_state),
};
_Static_assert(NCOLS(gpu_cols) <= MAX_COLS, "MAX_COLS holds every reader's columns");

static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct db_gpu_metrics *m = arg;
    db_gpu_metrics_free(m); /* a retried run starts afresh */
    void *rows[4] = {NULL};
    size_t n[4] = {0};
    enum db_status s = DB_MANY_RESULTS;
    for (int k = 0; k < 4 && s >= 0; k++)
        s = read_rows(c, m, k, &readers[k], &rows[k], &n[k]);
    m->gpus = rows[0];
    m->ngpus = n[0];
    m->events = rows[1];
    m->nevents = n[1];
    m->hosts = rows[2];
    m->nhosts = n[2];
    m->states = rows[3];
    m->nstates = n[3];
    return s < 0 ? s : DB_MANY_RESULTS;
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
