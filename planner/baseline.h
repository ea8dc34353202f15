/* baseline.h — which baselines a new measurement is compared with (pure logic,
 * docs/rollouts.md §1).
 *
 * A baseline is a throughput figure with its conditions (migrations/0020_baselines.sql).
 * Two figures are compared only when every condition matches: framework, model_revision,
 * gpu_model, gpu_count, workload_hash, metric, input, concurrency and cache, a null value
 * equal only to null. The stack's own fields (its id, image digest, framework version,
 * driver and CUDA versions) describe the stack under test and are not compared, and
 * neither is the pool (the same workload on the same GPUs in another pool is comparable).
 *
 * plan_baseline_match() takes the wanted conditions (those of the new measurement) and the
 * candidates (the previous stack's baselines, newest first): the matching ones, newest
 * first and at most PLAN_BASELINE_MAX_MATCHED of them, and their median as the reference;
 * or, when none matches, per condition the values the candidates had that differed from
 * the wanted one, so that the comparison can say which conditions differed. */
#ifndef GPUFLEET_PLAN_BASELINE_H
#define GPUFLEET_PLAN_BASELINE_H

#include <jansson.h>
#include <stddef.h>

#include "common/baseline.h"

#define PLAN_BASELINE_MAX_MATCHED 20
/* The previous stack's baselines looked at, newest first. */
#define PLAN_BASELINE_MAX_CANDIDATES 5000
/* At most this many differing values are listed per condition. */
#define PLAN_BASELINE_MAX_SEEN 10

/* The conditions, their names and types, and a baseline (struct baseline): common/baseline.h. */

/* 1 when two values of condition c are equal (null equals only null). */
int plan_bl_value_equal(enum baseline_cond c, const struct baseline_value *a,
                        const struct baseline_value *b);
/* The value as JSON (null, a string or an integer); a new reference. */
json_t *plan_bl_value_json(enum baseline_cond c, const struct baseline_value *v);

/* The median of n values (n ≥ 1): the middle one, or the mean of the two middle ones.
 * values is reordered. */
double plan_baseline_median(double *values, size_t n);

struct plan_bl_result {
    /* indexes into the candidates of the matching baselines used, newest first */
    size_t matched[PLAN_BASELINE_MAX_MATCHED];
    size_t nmatched;
    double reference; /* their median (nmatched > 0) */
    /* nmatched == 0: {condition: {"wanted": v, "seen": [values that differed]}} for every
     * condition in which some candidate differed (an empty object when there were no
     * candidates); a new reference, NULL otherwise */
    json_t *unmatched;
};
/* Matches the candidates (newest first) against the wanted conditions. Returns 0, or -1
 * when out of memory. */
int plan_baseline_match(const struct baseline *wanted, const struct baseline *cand, size_t ncand,
                        struct plan_bl_result *out);

/* The comparison document: {metric, value, reference, ratio, baselines: [ids], matched: n,
 * candidates} when baselines matched (ratio = value / reference; null when the reference
 * is 0), {metric, value, matched: 0, candidates, unmatched} when none did. A new
 * reference, or NULL when out of memory. */
json_t *plan_baseline_document(const struct baseline *wanted, const struct baseline *cand,
                               size_t ncand, const struct plan_bl_result *res);

#endif
