/* rollout_cost.h — the cost view of a rollout's document (docs/rollouts.md §Document):
 * the pool's cost per completed unit before and after the rollout, from work reports
 * priced as GET /v1/costs prices them. One path, in the caller's transaction:
 *
 *   load     db/rollouts_read.h: the windows compared; db/costs.h: each window's hosts
 *            and summed reports (common/usage.h)
 *   decide   planner/costs.h: grouped by pool and priced; the unit shown is the one the
 *            pool completed most of (plan_cost_main_unit) */
#ifndef GPUFLEET_SVC_ROLLOUT_COST_H
#define GPUFLEET_SVC_ROLLOUT_COST_H

#include <jansson.h>

#include "db/db.h"

/* {"before": {...}, "after": {...}} (*cost, caller decrefs): each {from, to, unit, units,
 * cost, cost_per_unit, currency}; unit, units, cost and cost_per_unit are null without
 * reports. DB_NO_RESULTS when no rollout has this id. */
enum db_status svc_rollout_cost(struct db_conn *c, const char *id, json_t **cost);

#endif
