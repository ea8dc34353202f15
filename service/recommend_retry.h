/* recommend_retry.h — the inputs of the retry budget recommendations
 * (planner/recommend_retry.h): the pools and briefs with a retry_budget_pct
 * (db/retry_budget.h) and, when there is one, the day [at − 24 h, at) of held time and
 * work reports as the cost report reads it (db/costs.h), priced per pool and per brief.
 * Read inside the recommendations' read transaction (service/recommend.c). */
#ifndef GPUFLEET_SVC_RECOMMEND_RETRY_H
#define GPUFLEET_SVC_RECOMMEND_RETRY_H

#include <jansson.h>
#include <stdint.h>

#include "db/costs.h"
#include "db/retry_budget.h"

/* Start it zeroed; free it with svc_rec_retry_free. */
struct svc_rec_retry {
    struct db_retry_budgets budgets;
    struct db_cost_input in; /* read only when a budget is set */
};

enum db_status svc_rec_retry_read(struct db_conn *c, int64_t at_us, struct svc_rec_retry *r);
/* Prices the groups with a budget and appends the recommendations to items. Returns 0, or
 * -1 when out of memory. */
int svc_rec_retry_apply(const struct svc_rec_retry *r, json_t *items);
void svc_rec_retry_free(struct svc_rec_retry *r);

#endif
