/* bottleneck_json.h — a finding (planner/bottleneck.h) as JSON: the document of GET
 * /v1/bottlenecks (schema BottleneckReport's finding in openapi.yaml) and the evidence of
 * the investigate recommendation that carries it. Shares 4 decimals, seconds 3. */
#ifndef GPUFLEET_BOTTLENECK_JSON_H
#define GPUFLEET_BOTTLENECK_JSON_H

#include <jansson.h>

#include "planner/bottleneck.h"

/* Each returns a new reference (NULL when out of memory). */
json_t *plan_bn_phases_json(const struct plan_bn_sums *s);
json_t *plan_bn_signals_json(const struct plan_bn_signals *g);
json_t *plan_bn_finding_json(const struct plan_bn_finding *f);

#endif
