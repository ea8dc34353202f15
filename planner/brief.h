/* brief.h — domain rules for workload briefs beyond field types (which jsonspec checks):
 * which metrics each kind may use, which sections each kind may carry, and the sizing
 * input derived from a brief. */
#ifndef GPUFLEET_BRIEF_H
#define GPUFLEET_BRIEF_H

#include <jansson.h>

#include "planner/sizing.h"

struct plan_error {
    char field[128];
    char detail[256];
};

/* Checks the cross-field rules of a brief whose fields already passed the type/range
 * spec. Returns 0, or -1 with *err naming the field. */
int plan_brief_check(const json_t *brief, struct plan_error *err);
/* Fills the sizing input from a checked brief. */
void plan_brief_to_sizing(const json_t *brief, struct plan_brief *out);
/* Metrics allowed for a kind, NULL-terminated. */
const char *const *plan_metrics_for_kind(enum plan_kind k);

#endif
