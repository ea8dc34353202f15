/* monitor.h — GPU health storage (migrations/0014_gpu_health.sql): the monitor's samples,
 * the GPUs they list, GPU events and each host's monitor row; the documents the API
 * serves from them; rollup and retention for a periodic housekeeping call.
 *
 * Writes go through SQL functions that validate and bound their input (monitor_store,
 * gpu_samples_rollup, gpu_samples_prune); reads are JSON documents PostgreSQL renders. */
#ifndef GPUFLEET_DB_MONITOR_H
#define GPUFLEET_DB_MONITOR_H

#include "db/db.h"

/* Stores one sample of a host (monitor_store): doc_json is the sample document (see
 * docs/monitoring.md, "GPU health: storage and reads", and the COMMENT). On success *result_json
 * receives monitor_store's answer, {"events": [{"id", "kind", "code", "gpu_uuid",
 * "policy", "count", "new"}], "missing_gpus": [...], "returned_gpus": [...],
 * "samples": n, "newest": bool} (caller frees). A bad document is DB_HARD_ERROR with
 * db_monitor_bad_document(c) true (SQLSTATE 22023, the message names the member); an
 * unknown host is DB_HARD_ERROR with db_conn_fk_violation(c) true. */
enum db_status db_monitor_store(struct db_conn *c, const char *host_id, const char *doc_json,
                                char **result_json);
/* True when the last failure was monitor_store refusing its document (22023). */
int db_monitor_bad_document(const struct db_conn *c);

/* The HostHealth document of a host (latest readings per GPU, open events, monitor
 * state); DB_NO_RESULTS for an unknown host, or one outside scope (the projects that may
 * be read: a uuid[] literal, NULL for every project). Caller frees *doc. */
enum db_status db_monitor_health(struct db_conn *c, const char *host_id, const char *scope,
                                 char **doc);

/* GPUs by UUID (keyset: the UUID), every filter optional (NULL); has_open_events and
 * missing are "true" or "false". */
struct db_gpu_filter {
    const char *host_id, *pool_id, *gpu_model, *name, *has_open_events, *missing;
    const char *after_uuid;
    long limit;             /* rows to fetch (the page size + 1) */
    const char *scope;      /* the projects whose hosts' GPUs may be read, NULL: all */
    const char *project_id; /* the ?project= filter, or NULL */
};
enum db_status db_monitor_gpu_list(struct db_conn *c, const struct db_gpu_filter *f,
                                   struct db_page *page);

/* A GPU's events, newest first (keyset: the event id). */
struct db_gpu_event_filter {
    const char *gpu_uuid;
    const char *kind;      /* NULL: every kind */
    const char *open;      /* "true", "false" or NULL */
    const char *before_id; /* keyset: ids below this one */
    long limit;
    const char *scope; /* the projects whose hosts' events may be read, NULL: all */
};
enum db_status db_monitor_gpu_events(struct db_conn *c, const struct db_gpu_event_filter *f,
                                     struct db_page *page);
/* Whether a GPU is known: listed by a sample or named by an event of a host in scope (NULL:
 * every project). */
enum db_status db_monitor_gpu_known(struct db_conn *c, const char *gpu_uuid, const char *scope,
                                    int *known);

/* The grain of a samples document. */
enum db_monitor_grain { DB_GRAIN_RAW, DB_GRAIN_5M, DB_GRAIN_1H };
extern const char *const db_monitor_grain_names[3]; /* "raw", "5m", "1h" */
/* The HostSamples document of a host over [from, to) (RFC 3339 times): one series per
 * GPU, its points in time order; rollup points are the buckets that start in the range
 * (the first one may start before from). DB_NO_RESULTS for an unknown host, or one outside
 * scope (as db_monitor_health). The caller
 * bounds the range (api/health.c). Caller frees *doc. */
enum db_status db_monitor_samples(struct db_conn *c, const char *host_id, const char *from,
                                  const char *to, enum db_monitor_grain grain, const char *scope,
                                  char **doc);

/* Housekeeping (the caller schedules them, e.g. every minute; each call does bounded work
 * and says when to call again). db_monitor_rollup rolls up the complete buckets before upto
 * (RFC 3339; NULL: now - 2 minutes, so that samples still being stored are not left
 * behind): *result_json = {"5m": {"done_upto", "rows", "behind"}, "1h": {...}}.
 * db_monitor_prune applies retention (seconds, each >= 3600): drops the oldest partition
 * of raw samples once it is wholly older than raw_keep_s and rolled up, deletes at most
 * batch rows of each rollup older than its retention, and makes the partitions of now
 * and of the next period: *result_json = {"raw_partitions", "5m", "1h", "kept_from",
 * "more"}. Caller frees *result_json. */
enum db_status db_monitor_rollup(struct db_conn *c, const char *upto, char **result_json);
enum db_status db_monitor_prune(struct db_conn *c, long raw_keep_s, long m5_keep_s, long h1_keep_s,
                                int batch, char **result_json);

#endif
