/* bottlenecks.h — what the bottleneck analysis reads (issue 26, item 4; planner/bottleneck.h
 * applies the rules): the target (a pool, a brief or a host, within the caller's projects),
 * the work report rollups summed per host and half of the window, and the corroborating
 * signals of a few hosts (GPU samples over the window, the newest gate's bandwidth and
 * storage_throughput values, the newest storage diagnostics). Every value is extracted in
 * SQL into typed rows: no caller parses JSON to decide. */
#ifndef GPUFLEET_DB_BOTTLENECKS_H
#define GPUFLEET_DB_BOTTLENECKS_H

#include <stddef.h>

#include "db/db.h"

enum db_bn_target { DB_BN_POOL, DB_BN_BRIEF, DB_BN_HOST };

/* The rollup read: hours for windows up to DB_BN_HOURS_MAX_S, 6-hour quarters up to
 * DB_BN_QUARTERS_MAX_S, days up to DB_BN_DAYS_MAX_S, ISO weeks beyond (at most about 60
 * buckets). A report counts when its bucket (of that grain: the UTC hour, quarter, day or
 * ISO week holding its window_start) starts in [from rounded down to the grain, to); the
 * second half holds the buckets starting at or after the window's middle. A pool's or a
 * host's read probes the rollup's key once per host and bucket; a brief's reads its index
 * (migrations/0033). */
enum db_bn_grain { DB_BN_HOUR, DB_BN_QUARTER, DB_BN_DAY, DB_BN_WEEK };
extern const char *const db_bn_grain_names[]; /* hour, quarter, day, week */
#define DB_BN_HOURS_MAX_S    (24 * 3600.0)
#define DB_BN_QUARTERS_MAX_S (4 * 86400.0)
#define DB_BN_DAYS_MAX_S     (92 * 86400.0)
enum db_bn_grain db_bn_grain_of(double window_s);

#define DB_BN_PHASES 6 /* queue, load, preprocess, compute, communication, write */

/* One host's reports in one half of the window. */
struct db_bn_row {
    const char *host_id, *pool_id; /* borrowed from the result */
    const char *brief_id, *unit;   /* db_bn_rows_fleet only (brief_id NULL: none), else NULL */
    int half;                      /* 0 first, 1 second */
    long reports, phase_reports;
    double busy_s, phase_busy_s;
    double phase_s[DB_BN_PHASES];
    double completed, failed, retried, bytes_moved;
    long load_buckets; /* buckets (of the grain) with load time */
    double load_bytes; /* bytes moved in those buckets */
};

/* A host's corroborating signals (has_* 0: absent). The strings borrow from the result. */
struct db_bn_signal {
    const char *host_id;
    int has_gpu;
    long gpu_samples;
    int has_util, has_mem, has_power;
    double util_pct, mem_used_pct, power_w;
    int has_storage;
    const char *storage_run_id, *storage_at;
    double read_mbps;
    int has_min_read;
    double min_read_mbps;
    int has_bw;
    const char *bw_run_id, *bw_at;
    double busbw_gbps;
    int has_min_bw;
    double min_busbw_gbps;
    int has_diag;
    const char *diag_run_id, *diag_at, *diag_status;
    double diag_read_mbps;
    int has_diag_min;
    double diag_min_read_mbps;
};

/* What one read holds; start it zeroed, free it with db_bn_free (leaves it zeroed). */
struct db_bn_input {
    char name[256];      /* the target's name */
    char project_id[37]; /* the target's project */
    size_t nrows, nsignals;
    struct db_bn_row *rows;       /* ordered by host id, then half */
    struct db_bn_signal *signals; /* in the order of the host ids asked for */
    void *res[2];
};
void db_bn_free(struct db_bn_input *in);

/* The target within the projects (a uuid[] literal; NULL: every project): DB_ONE_RESULT
 * with in->name and in->project_id set, DB_NO_RESULTS when it is absent or outside. */
enum db_status db_bn_target(struct db_conn *c, enum db_bn_target kind, const char *id,
                            const char *projects, struct db_bn_input *in);
/* The window's buckets (service/bottleneck.c computes them): uuid-free array literals of
 * timestamptz. buckets: every bucket start of the grain in [from, to), or at the day grain
 * the days outside the whole ISO weeks [weeks[0], weeks[1]) (both = to when there is
 * none), whose starts are week_buckets ("{}" otherwise). */
#define DB_BN_BUCKETS_MAX 64
struct db_bn_window {
    char weeks[2][40];
    char buckets[DB_BN_BUCKETS_MAX * 34 + 3];
    char week_buckets[DB_BN_BUCKETS_MAX * 34 + 3];
};
/* The rollups of the target's hosts (of the projects) over [from, to) (RFC 3339) at the
 * grain, summed per host and half (mid: the window's middle) into in->rows. A week's row
 * counts as one bucket for load_buckets. */
enum db_status db_bn_rows(struct db_conn *c, enum db_bn_target kind, const char *id,
                          const char *projects, enum db_bn_grain grain, const char *from,
                          const char *to, const char *mid, const struct db_bn_window *w,
                          struct db_bn_input *in);
/* The recommendations' read (service/recommend_bn.c): every host's rollups over [from, to)
 * at the quarter grain (from a quarter's start), summed per host, brief, unit and half (mid: the
 * middle), ordered by host id, brief id (nulls first), unit, half, into in->rows. */
enum db_status db_bn_rows_fleet(struct db_conn *c, const char *from, const char *to,
                                const char *mid, struct db_bn_input *in);
/* The signals of hosts (a uuid[] literal) into in->signals: GPU samples of gpu_samples_1h
 * over the hours starting in [from, to); the newest gate run (kind gate) with a
 * storage_throughput check holding a numeric read_mbps, and one with a bandwidth check
 * holding a numeric allreduce_busbw_gbps; the newest diagnostics run with a
 * storage_throughput check holding read_mbps. */
enum db_status db_bn_signals(struct db_conn *c, const char *hosts, const char *from, const char *to,
                             struct db_bn_input *in);

#endif
