/* baseline.h — the comparison of a gate run's throughput baseline with the baselines of
 * another stack under the same conditions (docs/rollouts.md §1): GET
 * /v1/gate-runs/{id}/comparison and the rollout engine's comparing step. One path, in the
 * caller's transaction:
 *
 *   load     db/baselines.h: the run's baseline, then the stack's (the newest
 *            PLAN_BASELINE_MAX_CANDIDATES)
 *   decide   planner/baseline.h: which match, their median, the comparison document */
#ifndef GPUFLEET_SVC_BASELINE_H
#define GPUFLEET_SVC_BASELINE_H

#include <jansson.h>

#include "db/db.h"

struct svc_baseline_cmp {
    int matched;      /* number of matching baselines used (0: none) */
    double reference; /* their median value (when matched > 0) */
    double value;     /* the new run's value */
    char metric[64];
    json_t *doc; /* the comparison document (owned): metric, value, reference,
                    ratio, baselines [ids], or unmatched {condition: {wanted, seen}} */
};
/* Compares the baseline recorded by gate run `gate_run_id` with the baselines recorded
 * on stack `prev_stack_id` under the same conditions, both of pools within scope (the
 * projects whose baselines may be read: a uuid[] literal, NULL for every project).
 * DB_NO_RESULTS when the gate run recorded no baseline (no workload / not accepted) or
 * its pool is outside scope. *out is overwritten. */
enum db_status svc_baseline_compare(struct db_conn *c, const char *gate_run_id,
                                    const char *prev_stack_id, const char *scope,
                                    struct svc_baseline_cmp *out);
void svc_baseline_cmp_free(struct svc_baseline_cmp *cmp);

#endif
