/* recommend.h — what the recommendations read beyond the cost queries (db/costs.h):
 * per held host its pool's policy and GPUs, jobs, acceptance, idleness and the brief it
 * serves; and every brief's document. */
#ifndef GPUFLEET_DB_RECOMMEND_H
#define GPUFLEET_DB_RECOMMEND_H

#include <stdint.h>

#include "db/db.h"

extern const struct db_stmt db_recommend_stmts[];
extern const size_t db_recommend_nstmts;

/* Hosts not stopped, ordered by id: columns id, pool_id, state, accepted (t/f: an
 * accepted gate run and state ready), active_job (t/f: a queued or running job), and its
 * pool's idle_stop_after_seconds, price_per_hour, gpu_model, gpu_count,
 * scale_up_utilization, scale_down_utilization, investigate_failed_share,
 * investigate_cost_increase (a setting is NULL when the pool lacks it: the caller takes
 * the planner's default). */
enum db_status db_recommend_hosts(struct db_conn *c, PGresult **res);
/* Every host, ordered by id: columns 0-7 as db_cost_hosts (id, name, pool_id, pool_name,
 * prices), then its held seconds in the hour [at − 1 h, at), the day [at − 24 h, at) and
 * the day before [at − 48 h, at − 24 h). */
enum db_status db_recommend_held(struct db_conn *c, int64_t at_us, PGresult **res);
/* Work reports as of at, summed per host, brief, unit, part and lb, ordered by host id,
 * brief id (nulls first), unit, part. Parts by window_start: 0 the hour [at − 1 h, at),
 * 1 the rest of the day [at − 24 h, at − 1 h), 2 the day before [at − 48 h, at − 24 h).
 * lb: in the lookback (reports ending after at − 24 h), read at the grain of the rollups:
 * an hour (or, in part 2, a 6-hour quarter) whose reports end on both sides of
 * at − 24 h counts whole. Columns 0-12 as db_cost_reports, then 13 part, 14 lb (t/f), 15
 * the latest end of a useful report (completed > 0 or busy_seconds > 0), 16 the earliest
 * start, 17 the latest end (epoch seconds; 15 NULL without useful reports), 18 the
 * highest p95_latency_ms, 19 the highest queue_delay_ms (NULL when none reported). */
enum db_status db_recommend_usage(struct db_conn *c, int64_t at_us, PGresult **res);
/* Briefs ordered by id: columns id, spec (JSON text). */
enum db_status db_recommend_briefs(struct db_conn *c, PGresult **res);

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
/* *auto_stop 1 when the host's pool has auto_stop: true. */
enum db_status db_idle_policy_auto_stop(struct db_conn *c, const char *host_id, int *auto_stop);

#endif
