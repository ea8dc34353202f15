/* placement.h — the cheapest place to run a brief (docs/placement.md). Pure arithmetic:
 * no I/O. The caller (api/placement.c) reads the brief, its project's pools with their
 * sizing fit, the brief's work reports over the window (the cost report's read) and the
 * throughput baselines; this file prices every option per completed unit.
 *
 * Demand profile: D = the brief's completed units (its main unit, over every pool) ÷ the
 * hours from its first report's start to its last report's end in the window.
 *
 *   measured pool   the pool's hosts' held hours in the window attributed to the brief
 *                   (each host's held time split among the briefs its reports name, in
 *                   proportion to the seconds their reports cover — as the cost report
 *                   grouped by brief), priced as the cost report prices them (compute,
 *                   storage, data movement, overhead), ÷ the brief's completed units
 *                   there. Idle held hours are paid, so they are in the cost.
 *   estimated pool  a pool that fits (sizing) where the brief has no report: throughput
 *                   per host-hour T = the median of the newest (≤ 20) nearest baselines
 *                   (metric <unit>_per_second on the pool's GPU model; nearest = most of
 *                   gpu_count, model_revision, concurrency equal) × 3600 × the pool's
 *                   gpu_count ÷ the baseline's; hosts = max(⌈gpus_needed ÷ gpu_count⌉,
 *                   ⌈D ÷ T⌉); cost per hour = hosts × price_per_hour × (1 + overhead_pct
 *                   ÷ 100); per unit = that ÷ D (without demand: at full use, price ÷ T).
 *   api             price_per_unit ÷ per_units (no idle cost); another unit than the
 *                   brief's is not comparable (no cost).
 *   on_demand       per GPU-hour throughput G (the measured pools of its gpu_model, else
 *                   the current pool's, else the baselines): per hour of demand
 *                   price_per_gpu_hour × D ÷ G (the GPU-hours the work needs), plus one
 *                   cold start a day (cold_start_seconds ÷ 3600 × price × gpus ÷ 24);
 *                   per unit = that ÷ D.
 *   reserved        price_per_gpu_hour × gpus every hour, used or not; per unit = that ÷
 *                   min(D, capacity G × gpus) (capacity below demand: the row does not
 *                   meet the success metric).
 */
#ifndef GPUFLEET_PLACEMENT_H
#define GPUFLEET_PLACEMENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/usage.h"
#include "planner/brief.h"
#include "planner/costs.h"

#define PLAN_PLACE_MAX_ALTERNATIVES 16
#define PLAN_PLACE_DEFAULT_MARGIN   20.0
#define PLAN_PLACE_DEFAULT_MIN_DAYS 7

/* The cross-field rules of a brief's alternatives (its fields passed api/briefs.c's
 * spec): names unique, each kind's required fields present and no other kind's. Returns
 * 0, or -1 with *err naming the field (alternatives[1].price_per_unit). */
int plan_place_check(const json_t *brief, struct plan_error *err);

enum plan_place_basis { PLACE_MEASURED, PLACE_ESTIMATED, PLACE_DECLARED };
extern const char *const plan_place_basis_names[]; /* "measured", "estimated", "declared" */

/* The brief as placement sees it. */
struct plan_place_brief {
    int unit;          /* the unit it completed most of, or -1 (no report) */
    double completed;  /* Σ completed of that unit over every pool in the window */
    double span_hours; /* first report start → last report end, in the window */
    int has_latency;   /* a time_to_first_token_ms or tail_latency_ms target */
    double latency_ms; /* the lowest of them */
    int has_avail;     /* availability.target_pct */
    double avail_pct;
    double margin_pct;    /* rightsize_margin_pct (default 20) */
    long min_days;        /* rightsize_min_days (default 7) */
    const char *revision; /* model.revision, or NULL: a baseline condition */
    long concurrency;     /* load.concurrency: a baseline condition */
};

/* A baseline figure as placement reads it (metric <unit>_per_second, newest first). */
struct plan_place_baseline {
    const char *gpu_model, *model_revision; /* model_revision NULL when none */
    long gpu_count, concurrency;            /* 0 when none */
    double per_second;
};

/* A pool of the brief's project. */
struct plan_place_pool {
    const char *id, *name, *gpu_model;
    long gpu_count;
    struct usage_prices prices;
    int fits;                 /* the sizing estimate fits one host of the pool */
    long gpus_needed;         /* from sizing (0 when not estimated) */
    struct plan_cost_acc acc; /* the brief's slice of the pool (zero: never ran there) */
    long days;                /* distinct UTC days with the brief's reports here */
};

/* Adds the brief's slice of one host (its rows, rows[first..last) of that host, sorted
 * by brief) to acc: see "measured pool" above. */
void plan_place_add_host(struct plan_cost_acc *acc, const struct usage_host *host,
                         const struct usage_row *rows, size_t first, size_t last,
                         const char *brief_id);

struct plan_place_row {
    const char *option, *kind, *pool_id; /* kind: pool, api, on_demand, reserved */
    enum plan_place_basis basis;
    int has_cost;
    double cost_per_unit; /* dollars per completed unit, not rounded */
    double per_hour;      /* dollars per hour at the demand profile (0 when unknown) */
    long days;            /* measured pools: days of reports */
    int current;          /* the pool where the brief completed most units */
    int meets;            /* 1, 0, or -1 (null) */
    char why[240];
    json_t *evidence; /* owned: evidence (measured) or assumptions (others) */
};

/* Prices every fitting pool and every alternative (the brief's "alternatives" array, or
 * NULL). bl: baselines newest first. *rows is malloc'd (free with plan_place_rows_free),
 * sorted cheapest first (rows without a cost last, then by option). Returns 0, -1 when
 * out of memory. */
int plan_place_rows(const struct plan_place_brief *b, const struct plan_place_pool *pools,
                    size_t np, const struct plan_place_baseline *bl, size_t nbl,
                    const json_t *alternatives, struct plan_place_row **rows, size_t *nrows);
void plan_place_rows_free(struct plan_place_row *rows, size_t n);

/* One row as JSON (schema PlacementRow). */
json_t *plan_place_row_json(const struct plan_place_row *r, int unit);

#endif
