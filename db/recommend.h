/* recommend.h — what the recommendations read: the inputs of the cost arithmetic in three
 * windows (as db/costs.h), per host not stopped its pool's policy and GPUs, jobs,
 * acceptance, idleness and the brief it serves; and every brief's document. */
#ifndef GPUFLEET_DB_RECOMMEND_H
#define GPUFLEET_DB_RECOMMEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/gpu.h"
#include "common/usage.h"
#include "db/db.h"

/* What the recommendations read as of at, in the caller's transaction. The strings
 * borrow from the results, which the struct owns (res: opaque outside db/). Start it
 * zeroed; db_recommend_read frees what it held first, and on failure leaves it empty;
 * db_rec_input_free frees it and leaves it zeroed.
 *
 *   held, held_seconds  every host, ordered by id, with its pool's prices (held_seconds
 *          of usage_host 0) and its held seconds in the windows DB_REC_HOUR
 *          [at − 1 h, at), DB_REC_DAY [at − 24 h, at) and DB_REC_PREV [at − 48 h, at − 24 h).
 *   usage  work reports as of at, summed per host, brief, unit, part and lb, ordered by
 *          host id, brief id (nulls first), unit, part: see struct db_rec_usage.
 *   hosts  the hosts not stopped, ordered by id, with their pools' policy.
 *   briefs every brief, ordered by id, with its document. */
enum { DB_REC_HOUR, DB_REC_DAY, DB_REC_PREV, DB_REC_WINDOWS };

struct db_rec_usage {
    struct usage_row row; /* row.host indexes held, or is DB_NO_HOST */
    const char *host_id;
    /* By window_start: 0 the hour [at − 1 h, at), 1 the rest of the day
     * [at − 24 h, at − 1 h), 2 the day before [at − 48 h, at − 24 h). */
    int part;
    /* In the lookback (reports ending after at − 24 h), read at the grain of the rollups:
     * an hour (or, in part 2, a 6-hour quarter) whose reports end on both sides of
     * at − 24 h counts whole. */
    int lb;
    int has_useful_end;        /* a useful report (completed > 0 or busy_seconds > 0) */
    double useful_end;         /* its latest end, epoch seconds */
    double min_start, max_end; /* the earliest start, the latest end */
    int has_p95, has_queue;    /* the highest p95_latency_ms and queue_delay_ms reported */
    double p95_ms, queue_delay_ms;
};

/* A pool setting; unset when the pool lacks it (the caller takes the planner's default). */
struct db_rec_setting {
    int set;
    double value;
};

struct db_rec_host {
    const char *id, *pool_id, *project_id, *project_name, *state;
    int accepted;   /* an accepted gate run and state ready */
    int active_job; /* a queued or running job */
    double price_per_hour;
    const char *gpu_model; /* the pool's */
    long gpu_count;
    struct db_rec_setting idle_stop_after_s, scale_up_utilization, scale_down_utilization,
        failed_share, cost_increase;
};

struct db_rec_brief {
    const char *id, *project_id, *spec; /* spec: the brief's JSON text */
};

/* The GPU utilization samples of a host not stopped over its pool's idle window
 * [at − W, at) (W: idle_stop_after_seconds, or the caller's default), aggregated in one
 * statement for every host: whole 1-hour and 5-minute buckets from the rollups (up to
 * their watermarks), the edges from gpu_samples. A sample counts when every GPU of it
 * has a utilization reading (a rollup bucket: its highest sample count, when every GPU
 * of it has a reading); the others count as unread. */
struct db_rec_gpu {
    const char *host_id;
    struct gpu_util_window util;        /* util.interval_s 0: the pool has no setting */
    struct db_rec_setting idle_gpu_pct; /* the pool's idle_gpu_utilization_pct */
};

/* A host in state quarantined whose latest move there was monitor_isolated, with its
 * open isolating gpu_events (the oldest events_max of db_recommend_read; raw cut to 512
 * characters, message to 256). */
struct db_rec_isolated {
    const char *host_id;
    struct gpu_isolation iso; /* iso.events points into db_rec_input.events */
};

struct db_rec_input {
    size_t nheld, nusage, nhosts, nbriefs, ngpu, nisolated, nevents;
    struct usage_host *held;
    double (*held_seconds)[DB_REC_WINDOWS]; /* held_seconds[i][w] of held[i] */
    struct db_rec_usage *usage;
    struct db_rec_host *hosts;
    struct db_rec_brief *briefs;
    struct db_rec_gpu *gpu;           /* ordered by host id */
    struct db_rec_isolated *isolated; /* ordered by host id */
    struct gpu_event *events;
    char *brief_ids; /* after db_rec_briefs_keep_ids: the briefs' ids, copied */
    void *res[6];
};
/* The caller gives what the planner decides: idle_default_s, the idle window of a pool
 * without idle_stop_after_seconds (struct db_rec_gpu), and events_max, how many isolating
 * events to read per host (struct db_rec_isolated). */
enum db_status db_recommend_read(struct db_conn *c, int64_t at_us, double idle_default_s,
                                 int events_max, struct db_rec_input *in);
/* The same, the usage rows with their failure classes (row.failures) when failures is
 * non-zero (the retry budgets price the day from them, service/recommend_retry.h; read
 * only when a budget is set, as they cost 8 more sums per row). */
enum db_status db_recommend_read_with(struct db_conn *c, int64_t at_us, double idle_default_s,
                                      int events_max, int failures, struct db_rec_input *in);
void db_rec_input_free(struct db_rec_input *in);
/* Once the briefs' documents have been read (sized): copies every brief's id and project
 * id into one block that in owns, points briefs[] at the copies (spec NULL) and frees the
 * briefs' statement result, the documents' text (5 MiB at 10,000 briefs). 0, or -1 when
 * out of memory (in unchanged). */
int db_rec_briefs_keep_ids(struct db_rec_input *in);

/* The same reads in two parts, so that the usage rows, the longest read, can be read on
 * another connection at the same time (service/recommend.c): db_rec_parts_read reads all
 * but the usage rows on c, db_rec_usage_read the usage rows (with their failure classes
 * when failures is non-zero); each fills only its own results of p (start it zeroed).
 * db_rec_parts_decode then decodes p into in, taking the results over (p is left zeroed,
 * even on failure); db_rec_parts_free frees what p holds. Each statement reads its own
 * snapshot, as in one READ COMMITTED transaction. */
struct db_rec_parts {
    void *res[6]; /* opaque outside db/ */
};
enum db_status db_rec_parts_read(struct db_conn *c, int64_t at_us, double idle_default_s,
                                 int events_max, struct db_rec_parts *p);
enum db_status db_rec_usage_read(struct db_conn *c, int64_t at_us, int failures,
                                 struct db_rec_parts *p);
enum db_status db_rec_parts_decode(struct db_rec_parts *p, struct db_rec_input *in);
void db_rec_parts_free(struct db_rec_parts *p);

/* The briefs that a usage row of db_recommend_read names: those with a work report whose
 * window starts in [at − 48 h, at) (the whole hours from the hour rollup's brief index,
 * the partial hours at either end from the reports), ordered by id, with their documents
 * (strings borrowed from res). Start *out zeroed; db_rec_briefs_free frees it. */
struct db_rec_briefs {
    size_t n;
    struct db_rec_brief *briefs;
    void *res; /* opaque outside db/ */
};
enum db_status db_rec_briefs_ran(struct db_conn *c, int64_t at_us, struct db_rec_briefs *out);
void db_rec_briefs_free(struct db_rec_briefs *b);

/* Decodes the results of recommend_gpu_util and recommend_isolated into in (filled by
 * db_rec_decode first), taking them over (in owns them, even on failure). Out of memory:
 * DB_HARD_ERROR. For db_recommend_read and the unit tests. */
struct pg_result;
enum db_status db_rec_decode_health(struct pg_result *gpu, struct pg_result *isolated,
                                    struct db_rec_input *in);

/* Makes open_recommendations the recommendations of items_json (the items array of
 * GET /v1/recommendations, as JSON text), writing recommendation.opened for each new id
 * and recommendation.withdrawn for each that no longer holds, in the caller's
 * transaction. */
enum db_status db_recommend_sync(struct db_conn *c, const char *items_json, long *opened,
                                 long *withdrawn);

/* The idle policy (api/idle_policy.c). Its advisory lock key: "gpfidle" in ASCII. */
#define DB_IDLE_POLICY_LOCK_KEY "29115507758361701"
/* pg_try_advisory_xact_lock: *got 1 when this transaction holds it (released at its end). */
enum db_status db_idle_policy_lock(struct db_conn *c, int *got);
/* What the idle policy may do to a host: stop it when its pool has auto_stop: true, or
 * when its project's budget is exhausted this month (project_spend, as the budget pass
 * last computed it) and the project's on_exhausted is stop_idle; then the project's
 * name, spend and budget (for the reason). */
struct db_idle_host {
    int auto_stop;
    int budget_stop;
    char project[64];
    double spend, budget;
};
enum db_status db_idle_policy_host(struct db_conn *c, const char *host_id,
                                   struct db_idle_host *out);

#endif
