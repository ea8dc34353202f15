/* recommend.h — stop / scale / reuse / investigate recommendations (docs/product.md §6,
 * issue 6 part 4). Pure: no I/O. The caller gathers per-host and per-brief figures
 * (api/recommend.c, from db/recommend.c and the cost queries) and this file applies the
 * rules, writing each recommendation as JSON (schema Recommendation in openapi.yaml).
 *
 * Windows, relative to the evaluation time `at`:
 *   - the hour [at − 1 h, at) gives utilization, p95 latency and queue delay;
 *   - the day [at − 24 h, at) gives the failed + retried share and cost per unit, compared
 *     with the previous day [at − 48 h, at − 24 h);
 *   - idleness looks back over the reports ending within the last 24 h (the lookback).
 *
 * Rules. Every threshold is the host's pool's (struct plan_rec_thresholds: the pool's
 * idle_stop_after_seconds and recommendation_thresholds); the defaults are given here:
 *   stop        a held host (any state but stopped/stopping/unreachable) without a queued
 *               or running job, idle by both signals over its pool's idle window W
 *               (idle_stop_after_seconds, default 1800) — positive evidence, never the
 *               absence of data (issue 13, item 5):
 *                 work reports: no useful report for more than W (idle time = at − the end
 *                   of the last report with completed > 0 or busy_seconds > 0, or, when no
 *                   report of the lookback was useful, at − the start of the earliest
 *                   report of the lookback), and reports still arriving: the latest ends
 *                   no earlier than at − W;
 *                 GPU utilization: monitor samples of [at − W, at) whose every GPU has a
 *                   utilization reading cover at least 90% of W (samples × the pool's
 *                   monitor.interval_seconds ÷ W), and the highest reading is under the
 *                   pool's idle_gpu_utilization_pct (default 5).
 *               Savings: the pool's price_per_hour.
 *   no_usage_data  a held host without any report in the lookback (reason no_usage_data),
 *               or one that would be stopped but for an unknown signal (reasons
 *               reports_stale, no_gpu_samples, low_sample_coverage, with the evidence):
 *               listed apart (the envelope's no_usage_data list), never recommended for
 *               stopping or reuse. A signal that shows work (a useful report within W, a
 *               reading at or over the threshold) makes the host busy, not unknown.
 *   scale_up    per brief and pool, over the brief's serving hosts in the pool (a host
 *               serves the brief named by its latest report of the lookback), with that
 *               pool's thresholds: Σ busy ÷ Σ held of the hour > 0.85, or the
 *               highest p95_latency_ms of the hour > the brief's time_to_first_token_ms or
 *               tail_latency_ms target, or the highest queue_delay_ms > its queue_delay_s
 *               target × 1000.
 *   scale_down  per brief and pool with at least two serving hosts having utilization: Σ busy ÷
 *               Σ held < 0.30. Target: the least utilized of them (ties: lowest id); savings
 *               its price_per_hour.
 *   investigate per host: failed + retried share of the day > 0.05; or, per unit, cost
 *               per completed unit of the day > 1.25 × the previous day's. One
 *               recommendation per host and rule (failed_share, cost_per_unit). And rule
 *               monitor_isolated: a host quarantined by the health monitor (its latest
 *               move to quarantined was the event monitor_isolated), with the quarantine
 *               reason and its open isolating GPU events as evidence; it goes when the
 *               host leaves quarantined (released, recovered).
 *   reuse       an accepted host (accepted gate, state ready) that is idle as for stop
 *               (idle past the window, no job), and a brief that needs capacity — it has
 *               a scale_up recommendation, or no host serves it — whose sizing estimate
 *               fits the host's GPUs: weights estimated, the precision supported by the
 *               pool's GPU model, and gpus_needed ≤ the pool's gpu_count. Never for the
 *               brief the host already serves.
 * Thresholds are compared strictly (exactly 0.85, 0.30, 5%, +25% or the idle window do
 * not trigger).
 *
 * Ids: a UUID (version 5 layout) made of the SHA-256 of "action|rule|host ids|pool
 * id|brief id", so it stays the same across calls while the condition holds. */
#ifndef GPUFLEET_RECOMMEND_H
#define GPUFLEET_RECOMMEND_H

#include <jansson.h>
#include <stddef.h>

#include "common/gpu.h"
#include "common/usage.h"
#include "planner/sizing.h"

#define PLAN_REC_IDLE_DEFAULT_S 1800.0
#define PLAN_REC_UTIL_HIGH      0.85
#define PLAN_REC_UTIL_LOW       0.30
#define PLAN_REC_FAILED_SHARE   0.05
#define PLAN_REC_COST_RISE      0.25 /* +25% */
#define PLAN_REC_IDLE_GPU_PCT   5.0  /* stop: GPU utilization under this, percent */
#define PLAN_REC_COVERAGE       0.90 /* stop: samples cover at least this share of W */
#define PLAN_REC_INTERVAL_S     60.0 /* the monitor's default interval_seconds */
#define PLAN_REC_EVENTS_MAX     16   /* isolating events listed in an evidence */

/* A pool's thresholds (pool spec: idle_stop_after_seconds, recommendation_thresholds). */
struct plan_rec_thresholds {
    double idle_stop_after_s;      /* stop: idle longer than this */
    double scale_up_utilization;   /* scale_up: utilization above */
    double scale_down_utilization; /* scale_down: utilization below */
    double failed_share;           /* investigate: failed + retried share above */
    double cost_increase;          /* investigate: cost per unit above (1 + this) × previous */
    double idle_gpu_util_pct;      /* stop: every GPU reading under this, percent */
};

/* A host's GPU utilization over its idle window [at − W, at) (struct gpu_util_window),
 * and its quarantine by the monitor with its open isolating events, the oldest
 * PLAN_REC_EVENTS_MAX of them listed (struct gpu_isolation): common/gpu.h. */

/* The defaults above. */
void plan_rec_default_thresholds(struct plan_rec_thresholds *t);

struct plan_rec_host {
    const char *id, *pool_id;
    const char *project_id; /* its pool's project */
    const char *brief_id;   /* the brief it serves, or NULL */
    const char *state;
    int accepted;   /* accepted gate and state ready */
    int active_job; /* a queued or running job */
    double price_per_hour;
    struct plan_rec_thresholds th; /* its pool's */
    /* lookback */
    int has_usage;
    double idle_s;
    long reports;                          /* reports of the lookback */
    double report_age_s;                   /* at − the end of its latest report */
    double last_report_end;                /* epoch seconds */
    int has_useful;                        /* a useful report in the lookback */
    double last_useful_end;                /* epoch seconds */
    struct gpu_util_window gpu_util;       /* over the idle window */
    const struct gpu_isolation *isolation; /* quarantined by the monitor, or NULL */
    /* hour */
    int has_hour; /* reports in the hour and held time > 0 */
    double hour_busy_s, hour_held_s;
    int has_p95, has_queue;
    double p95_ms, queue_delay_ms; /* highest of the hour */
    /* day and previous day */
    int has_share;
    double failed_share;
    int has_cpu[USAGE_UNIT_COUNT], has_prev_cpu[USAGE_UNIT_COUNT];
    double cpu[USAGE_UNIT_COUNT], prev_cpu[USAGE_UNIT_COUNT];
    /* the pool's GPUs, for reuse; gpu NULL when the model is unknown */
    const struct gpu_model *gpu;
    long gpu_count;
};

struct plan_rec_brief {
    const char *id;
    const char *project_id;
    int has_ttft, has_tail, has_queue;
    double ttft_ms, tail_ms, queue_delay_s; /* targets */
    int sized;                              /* sizing, precision and opts are set */
    struct plan_sizing sizing;
    enum gpu_precision precision;
};

/* Applies the rules. hosts and briefs sorted by id. Appends recommendations to items
 * (hosts' stop, investigate, then briefs' scale_up, scale_down, then reuse) and the
 * hosts without usage data, or with an unknown idle signal, to no_usage ({host_id,
 * pool_id, state, reason}, plus evidence for an unknown signal); no_usage NULL: that list
 * is not built (the idle policy, which never reads it). Returns 0, or -1 when out of
 * memory. */
int plan_recommend(const struct plan_rec_host *hosts, size_t nh,
                   const struct plan_rec_brief *briefs, size_t nb, const struct plan_options *opts,
                   json_t *items, json_t *no_usage);

/* The stable id of a recommendation: host_ids (n of them, in the given order), pool_id
 * and brief_id may be NULL. out receives 37 bytes. */
void plan_rec_id(const char *action, const char *rule, const char *const *host_ids, size_t n,
                 const char *pool_id, const char *brief_id, char out[37]);

extern const char *const plan_rec_actions[]; /* stop, scale_up, scale_down, reuse, investigate,
                                                rightsize (planner/recommend_place.h) */

/* Projects. The rules run over the whole fleet, so a reuse may lend an idle host of one
 * project to another project's brief: that is the platform's to decide. Who may see a
 * recommendation whose targets (its hosts, pool and brief) lie in projects[0..n) (NULL: a
 * target whose project is unknown)? A platform admin (or a system actor): every one.
 * Anyone else: one whose every target lies in one project, where it may read (viewer,
 * operator or admin there). */
struct actor;
int plan_rec_visible(const struct actor *who, const char *const *projects, size_t n);

#endif
