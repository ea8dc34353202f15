/* recommend.h — what the recommendations read beyond the cost queries (db/costs.h):
 * per held host its pool's policy and GPUs, jobs, acceptance, idleness and the brief it
 * serves; and every brief's document. */
#ifndef GPUFLEET_DB_RECOMMEND_H
#define GPUFLEET_DB_RECOMMEND_H

#include "db/db.h"

extern const struct db_stmt db_recommend_stmts[];
extern const size_t db_recommend_nstmts;

/* Hosts not stopped, ordered by id, as of `at` (an RFC 3339 time): columns id, pool_id,
 * state, accepted (t/f: an accepted gate run and state ready), active_job (t/f: a queued
 * or running job), idle_stop_after_seconds, price_per_hour, gpu_model, gpu_count,
 * reports (in the lookback: ending after at − 24 h, starting before at), idle_seconds
 * (at − the end of the last useful report, or − the start of the earliest one; NULL
 * without reports), brief_id (of the latest report naming one; NULL if none),
 * p95_latency_ms and queue_delay_ms (highest of the reports starting in [at − 1 h, at);
 * NULL without). */
enum db_status db_recommend_hosts(struct db_conn *c, const char *at, PGresult **res);
/* Briefs ordered by id: columns id, spec (JSON text). */
enum db_status db_recommend_briefs(struct db_conn *c, PGresult **res);

/* The idle policy (api/idle_policy.c). Its advisory lock key: "gpfidle" in ASCII. */
#define DB_IDLE_POLICY_LOCK_KEY "29115507758361701"
/* pg_try_advisory_xact_lock: *got 1 when this transaction holds it (released at its end). */
enum db_status db_idle_policy_lock(struct db_conn *c, int *got);
/* *auto_stop 1 when the host's pool has auto_stop: true. */
enum db_status db_idle_policy_auto_stop(struct db_conn *c, const char *host_id, int *auto_stop);

#endif
