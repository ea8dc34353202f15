/* recommend_loads.h — repeated loads (issue 27, item 3). Pure: no I/O. The recommendations'
 * bottleneck read (service/recommend_bn.h: the work report quarters from the one holding
 * at − 24 h up to at, per host, brief, unit and half) gives, per host and brief, the buckets
 * in which load time was recorded and the bytes moved in them; this file applies
 * planner/bottleneck.c's repeated-load rule (plan_bn_repeated_loads: load time in at least
 * 3 buckets, at least 1 GB moved per such bucket on average) to each host's work for each
 * brief and appends recommendations (schema Recommendation). The read's rows are per unit
 * too: a bucket with reports in two units is counted once (per half of the read, the most
 * buckets any unit has: service/recommend_loads.c), never twice.
 *
 *   investigate  rule "repeated_loads", per host and brief (brief_id null: the host's
 *                reports that named none): the host loads the brief's artifacts again and
 *                again instead of from a cache. Evidence: the buckets, the bytes moved in
 *                them and, as its cost:
 *                  data_movement_cost = bytes ÷ 1e9 × the pool's egress_price_per_gb, to
 *                    the cent (null when the pool sets no egress price);
 *                  load_phase_cost    = the host's cost over the last 24 h (the cost
 *                    report's total) × the brief's load seconds ÷ all the host's phase
 *                    seconds × the host's phase coverage (busy seconds of its reports with
 *                    phases ÷ all its busy seconds, at most 1), to the cent (null without
 *                    phases or busy time);
 *                  cost = the sum of those known. Target: the host, its pool, the brief.
 *                Savings: 0 (the rule cannot know how much a cache saves per hour). */
#ifndef GPUFLEET_RECOMMEND_LOADS_H
#define GPUFLEET_RECOMMEND_LOADS_H

#include <jansson.h>
#include <stddef.h>

#include "planner/bottleneck.h"

/* One host's work for one brief over the read. */
struct plan_rec_load {
    const char *host_id, *pool_id, *brief_id; /* brief_id NULL: none named */
    struct plan_bn_host work;                 /* its rows summed (svc_bn_add_row) */
    double egress_per_gb;                     /* its pool's, 0: none set */
    int has_host_cost;
    double host_cost; /* the host's total over the day (dollars) */
    /* all the host's rows (every brief): phase seconds, busy seconds, busy seconds of the
     * reports with phases */
    double host_phase_s, host_busy_s, host_phase_busy_s;
};

/* The load seconds of l's work. */
double plan_rec_load_seconds(const struct plan_rec_load *l);

/* Appends the repeated_loads recommendations of loads[0..n) to items. Returns 0, or -1
 * when out of memory. */
int plan_rec_loads(const struct plan_rec_load *loads, size_t n, json_t *items);

#endif
