/* work_reports.h — work reports: batched, idempotent ingestion and the list. */
#ifndef GPUFLEET_DB_WORK_REPORTS_H
#define GPUFLEET_DB_WORK_REPORTS_H

#include "db/db.h"

/* A batch as PostgreSQL array literals ("{a,b,NULL}"), one per column, in record order:
 * host_id, brief_id, window_start, window_end, unit, completed, failed, retried,
 * busy_seconds, p95_latency_ms, queue_delay_ms, bytes_moved, storage_gb, then the
 * DB_WR_PHASES phases in seconds (NULL when not given): queue, load, preprocess, compute,
 * communication, write; then the DB_WR_FAILURES failure classes in units (NULL when not
 * given): oom, timeout, data, hardware, preempted, other. */
#define DB_WR_COLUMNS     25
#define DB_WR_PHASES      6
#define DB_WR_FIRST_PHASE 13
#define DB_WR_FAILURES    6
struct db_wr_batch {
    const char *col[DB_WR_COLUMNS];
};

/* Indexes (0-based) of the records whose host (or brief, when given) does not exist, in
 * order: *first (-1 when none), *first_is_host, *count. */
enum db_status db_wr_check_refs(struct db_conn *c, const struct db_wr_batch *b, int *first,
                                int *first_is_host, int *count);
/* The caller's scope against the batch's hosts: projects, the projects whose hosts it may
 * report for (a uuid[] literal, NULL: every project), and a reporter's own scope (JSON
 * {"pools": [names or ids], "hosts": [names or ids]}, NULL: none), which narrows them
 * further. *first is the index of the first record whose host is outside (-1 when none;
 * hosts that do not exist are not counted: the insert refuses them), host_id (37 bytes)
 * its host_id, *count how many records are outside. */
enum db_status db_wr_out_of_scope(struct db_conn *c, const struct db_wr_batch *b, const char *scope,
                                  const char *projects, int *first, char *host_id, int *count);
/* The first record (*first, -1 when none) whose phases add up to more than its window ×
 * its host's GPU count (facts.gpu_count, else the pool's gpu_count, else 1), with those
 * figures, and how many records do. Records without phases, and unknown hosts, are not
 * looked at. */
struct db_wr_phase_excess {
    int first, count;
    double phase_seconds, window_seconds, gpus;
};
enum db_status db_wr_phase_excess(struct db_conn *c, const struct db_wr_batch *b,
                                  struct db_wr_phase_excess *out);
/* Inserts the batch in one statement; records whose key is already stored are skipped.
 * *inserted receives how many were stored. */
enum db_status db_wr_insert(struct db_conn *c, const struct db_wr_batch *b, const char *reported_by,
                            long *inserted);
/* After the insert: the records whose key is stored with different figures (*first, -1
 * when none, and *count). */
enum db_status db_wr_conflicts(struct db_conn *c, const struct db_wr_batch *b, int *first,
                               int *count);

/* The rollups' backlog (migrations/0045): adds up to max reports inserted but not yet in
 * the hour, quarter, day and week rollups to them, one settle at a time (a second waits for
 * the first). *settled: how many pending reports it found; *remaining: how many it left
 * pending (0: none that it could see). Run it in a transaction of its own, again until
 * *remaining is 0 (service/rollups.h), never at the start of a long one: other readers
 * wait for it to commit. */
enum db_status db_wr_rollups_settle(struct db_conn *c, long max, long *settled, long *remaining);
/* The backlog: pending reports and the oldest pending batch's age in seconds (0, 0: none). */
enum db_status db_wr_rollups_backlog(struct db_conn *c, long *reports, double *age_s);

struct db_wr_filter {
    const char *host_id, *unit, *since, *until, *after_seq;
    long limit;
    const char *scope, *project_id; /* the read scope, the ?project= filter (NULL: none) */
};
/* A page of reports in arrival order; since/until bound window_start ([since, until)). */
enum db_status db_wr_list(struct db_conn *c, const struct db_wr_filter *f, struct db_page *page);

#endif
