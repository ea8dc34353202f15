/* recommend_bn.h — the recommendations that carry a bottleneck finding (issue 26, item 6;
 * planner/bottleneck.h). Pure: no I/O. service/recommend_bn.c reads the last 24 h of work
 * report rollups per host, brief and unit, and the signals of the hosts each pool's finding
 * names; this file applies two rules and appends recommendations (schema Recommendation).
 *
 *   investigate  rule "bottleneck", per pool: its finding over [at − 24 h, at) names a
 *                bottleneck with a next test — verdict storage, write, bandwidth,
 *                input_pipeline or compute_underutilized (never for unknown, mixed, queue,
 *                gpu_bound, compute_unconfirmed or no data). Target: the host the next test
 *                names (else the first named) and the pool. Reason: the finding's why;
 *                evidence: the finding (as GET /v1/bottlenecks writes it).
 *   scale_down   rule "multi_gpu_no_speedup", per brief, unit and multi-GPU pool (gpu_count
 *                > 1): communication dominates the pool's phases for the brief (the largest
 *                phase, over 40% of the phase time), and a single-GPU pool (gpu_count 1)
 *                completes more of the unit per GPU-second for the same brief. Per-GPU
 *                throughput = Σ completed ÷ (Σ busy_seconds × gpu_count) over the day. The
 *                best single-GPU pool is the comparison. Target: the pool's host serving
 *                the brief that completed least (ties: lowest id); savings its pool's
 *                price_per_hour. */
#ifndef GPUFLEET_RECOMMEND_BN_H
#define GPUFLEET_RECOMMEND_BN_H

#include <jansson.h>
#include <stddef.h>

#include "planner/bottleneck.h"

/* One pool's finding over the day (decided: plan_bn_decide). */
struct plan_rec_bn_pool {
    const char *pool_id;
    const struct plan_bn_finding *f;
};

/* A brief's work in one pool over the day, in one unit. */
struct plan_rec_tput {
    const char *pool_id, *brief_id, *unit;
    long gpu_count;
    double price_per_hour;
    double completed, busy_s;
    double phase_s[PLAN_PHASE_COUNT];
    const char *least_host_id; /* the pool's host serving the brief that completed least */
};

/* Per-GPU throughput of t (units per GPU-second); 0 when it cannot be known. */
double plan_rec_tput_per_gpu(const struct plan_rec_tput *t);

/* Appends the investigate (per pool) and scale_down (per tput row) recommendations to
 * items. Returns 0, or -1 when out of memory. */
int plan_rec_bottlenecks(const struct plan_rec_bn_pool *pools, size_t np,
                         const struct plan_rec_tput *t, size_t nt, json_t *items);

#endif
