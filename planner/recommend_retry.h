/* recommend_retry.h — retry budgets (issue 27, item 2). Pure: no I/O. A pool or a brief
 * sets retry_budget_pct: the share of its spend that failed and retried work may cost.
 * service/recommend_retry.c prices the pools and briefs that set one over the
 * recommendations' day [at − 24 h, at) as the cost report does (planner/costs.h: the
 * failed_retried amount and its split by failure class, plan_cost_failures), and this file
 * applies the rule and appends recommendations (schema Recommendation).
 *
 *   investigate  rule "retry_budget", per pool and per brief with a budget: the cost of
 *                failed and retried work over the day (failed_retried.amount, to the cent)
 *                is over budget_pct % of the spend (total), compared strictly (exactly at
 *                the budget is within it); never without spend or without failed or
 *                retried units. The reason names the dominant class (the class with the
 *                most classified units: as cost follows units, the most costly) and its
 *                share of the failure cost (its units ÷ all failed and retried units, so
 *                the unclassified part is never handed to a class); without classified
 *                failures it says the failures are not classified and asks for them.
 *                Target: the pool (pool_id), or the brief (brief_id, with the pool of
 *                its host with the most failed and retried units). When the dominant
 *                class is hardware and one host carries most of the group's hardware
 *                failures (more than PLAN_RETRY_HOST_MOST of its units), the target is
 *                that host (host_ids, with its pool) and the evidence points at the host's
 *                health history (GET /v1/hosts/{id}/health, /v1/hosts/{id}/recoveries).
 *                Savings: 0 (an hourly figure would be invented). */
#ifndef GPUFLEET_RECOMMEND_RETRY_H
#define GPUFLEET_RECOMMEND_RETRY_H

#include <jansson.h>
#include <stddef.h>

#include "planner/costs.h"

#define PLAN_RETRY_HOST_MOST 0.5 /* a host carries "most" hardware failures above this */

/* One pool or brief with a budget, priced over the day. */
struct plan_retry_group {
    int is_brief; /* 0: a pool (id is its id), 1: a brief */
    const char *id;
    const char *pool_id;   /* a brief's: the pool of its host with the most failed and retried
                              units (the target's pool_id, which names its project) */
    double budget_pct;     /* 0 < x ≤ 100 */
    struct plan_cost cost; /* plan_cost_finish of the group */
    struct plan_cost_failures f;
    /* the host with the most hardware failures in the group, and its pool */
    const char *hw_host_id, *hw_host_pool_id;
    double hw_host_units, hw_units; /* its hardware units, the group's */
};

/* Whether g is over its budget; *spent_pct receives failed_retried ÷ total × 100. */
int plan_retry_over(const struct plan_retry_group *g, double *spent_pct);

/* Appends the retry_budget recommendations of groups[0..n) to items. Returns 0, or -1
 * when out of memory. */
int plan_rec_retry(const struct plan_retry_group *groups, size_t n, json_t *items);

#endif
