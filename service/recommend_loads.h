/* recommend_loads.h — the inputs of the repeated-loads recommendations
 * (planner/recommend_loads.h), from what the recommendations already read: the bottleneck
 * rollup rows (service/recommend_bn.h), the hosts with their pools' prices, and each host's
 * cost over the day. No read of its own. */
#ifndef GPUFLEET_SVC_RECOMMEND_LOADS_H
#define GPUFLEET_SVC_RECOMMEND_LOADS_H

#include <jansson.h>
#include <stddef.h>

#include "common/usage.h"
#include "planner/costs.h"
#include "service/recommend_bn.h"

/* held: every host (sorted by id) with its pool's prices; ids/costs: the hosts' costs over
 * the day (n of them, sorted by id). Appends to items; returns 0, or -1 when out of
 * memory. */
int svc_rec_loads_apply(const struct svc_rec_bn *b, const struct usage_host *held, size_t nheld,
                        const char *const *ids, const struct plan_cost *costs, size_t n,
                        json_t *items);

#endif
