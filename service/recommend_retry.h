/* recommend_retry.h — the inputs of the retry budget recommendations
 * (planner/recommend_retry.h): the pools and briefs with a retry_budget_pct
 * (db/retry_budget.h) and, when there is one, the day [at − 24 h, at) of held time and
 * work reports (as the cost report reads it, db/costs.h), taken from the recommendations'
 * own read (db/recommend.h: its held time of the day and its usage rows of parts 0 and 1,
 * with their failure classes), priced per pool and per brief. Read inside the
 * recommendations' read transaction (service/recommend.c). */
#ifndef GPUFLEET_SVC_RECOMMEND_RETRY_H
#define GPUFLEET_SVC_RECOMMEND_RETRY_H

#include <jansson.h>
#include <stdint.h>

#include "db/costs.h"
#include "db/recommend.h"
#include "db/retry_budget.h"

/* Start it zeroed; free it with svc_rec_retry_free. */
struct svc_rec_retry {
    struct db_retry_budgets budgets;
    struct db_cost_input in; /* built only when a budget is set; points into the rec input */
};

/* Reads the budgets (first: the recommendations' read then asks for the failure classes
 * only when there is one, svc_rec_retry_wanted). */
enum db_status svc_rec_retry_budgets(struct db_conn *c, struct svc_rec_retry *r);
static inline int svc_rec_retry_wanted(const struct svc_rec_retry *r)
{
    return r->budgets.n > 0;
}
/* When a budget is set, takes the day's costs from in (read by db_recommend_read_with
 * with failures, which must outlive r's use). Returns 0, or -1 when out of memory. */
int svc_rec_retry_take(const struct db_rec_input *in, struct svc_rec_retry *r);
/* Prices the groups with a budget and appends the recommendations to items. Returns 0, or
 * -1 when out of memory. */
int svc_rec_retry_apply(const struct svc_rec_retry *r, json_t *items);
void svc_rec_retry_free(struct svc_rec_retry *r);

#endif
