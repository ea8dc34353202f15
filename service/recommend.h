/* recommend.h — stop, scale, reuse and investigate recommendations as of a time (rules in
 * planner/recommend.h, inputs read by db/recommend.c). */
#ifndef GPUFLEET_SERVICE_RECOMMEND_H
#define GPUFLEET_SERVICE_RECOMMEND_H

#include <jansson.h>
#include <stdint.h>

#include "db/db.h"

/* The recommendations as of at_us (µs since the epoch), read on c inside the caller's
 * transaction (the idle policy): appends every recommendation to all and the hosts
 * without usage data to no_usage, unfiltered; no_usage NULL: that list is not built.
 * release_memory nonzero: malloc's free pages are handed back to the kernel midway
 * (util_malloc_release), which bounds the pass's RSS peak at a CPU cost (the idle policy). */
enum db_status svc_recommend_in_tx(struct db_conn *c, int64_t at_us, int release_memory,
                                   json_t *all, json_t *no_usage);

/* The same in a transaction of its own, without the release (a request). Returns the
 * computation (free it with svc_recommendations_free; what all and no_usage hold stays
 * valid after), or NULL with *status < 0. */
struct svc_recommendations;
struct svc_recommendations *svc_recommend(int64_t at_us, json_t *all, json_t *no_usage,
                                          enum db_status *status);
/* The evaluation time, RFC 3339. */
const char *svc_recommendations_at(const struct svc_recommendations *k);
/* The pool of a host the computation saw, or NULL. */
const char *svc_recommendations_host_pool(const struct svc_recommendations *k, const char *id);
/* The project of a target the computation saw: of host_id when given, else of pool_id
 * (one of its hosts'), else of brief_id; NULL when unknown. */
const char *svc_recommendations_project(const struct svc_recommendations *k, const char *host_id,
                                        const char *pool_id, const char *brief_id);
void svc_recommendations_free(struct svc_recommendations *k);

#endif
