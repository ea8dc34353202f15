/* recommend.c — see recommend.h. */
#include "planner/recommend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/util.h"
#include "planner/costs.h"
#include "planner/scope.h"

const char *const plan_rec_actions[] = {"stop",        "scale_up",  "scale_down", "reuse",
                                        "investigate", "rightsize", NULL};

void plan_rec_id(const char *action, const char *rule, const char *const *host_ids, size_t n,
                 const char *pool_id, const char *brief_id, char out[37])
{
    size_t len = strlen(action) + strlen(rule) + 8 + (pool_id ? strlen(pool_id) : 0) +
                 (brief_id ? strlen(brief_id) : 0);
    for (size_t i = 0; i < n; i++)
        len += strlen(host_ids[i]) + 1;
    char *buf = malloc(len + 1);
    unsigned char d[32];
    if (buf == NULL) {
        memset(d, 0, sizeof d);
    } else {
        size_t o = (size_t)sprintf(buf, "%s|%s|", action, rule);
        for (size_t i = 0; i < n; i++)
            o += (size_t)sprintf(buf + o, "%s%s", i ? "," : "", host_ids[i]);
        o += (size_t)sprintf(buf + o, "|%s|%s", pool_id ? pool_id : "", brief_id ? brief_id : "");
        util_sha256(buf, o, d);
        free(buf);
    }
    d[6] = (unsigned char)((d[6] & 0x0f) | 0x50); /* version 5 layout */
    d[8] = (unsigned char)((d[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[d[i] >> 4];
        out[o++] = hex[d[i] & 15];
    }
    out[o] = '\0';
}

static double r4(double x)
{
    return plan_round_to(x, 4);
}

/* Appends one recommendation; takes evidence. */
static int add(json_t *items, const char *action, const char *rule, const char *const *host_ids,
               size_t n, const char *pool_id, const char *brief_id, const char *reason,
               json_t *evidence, double savings)
{
    char id[37];
    plan_rec_id(action, rule, host_ids, n, pool_id, brief_id, id);
    json_t *hids = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(hids, json_string(host_ids[i]));
    json_t *rec =
        json_pack("{s:s,s:s,s:s,s:{s:o,s:s?,s:s?},s:s,s:o,s:f}", "id", id, "action", action, "rule",
                  rule, "target", "host_ids", hids, "pool_id", pool_id, "brief_id", brief_id,
                  "reason", reason, "evidence", evidence, "estimated_savings_per_hour", savings);
    if (rec == NULL)
        return -1;
    json_t *t = json_object_get(rec, "target");
    if (pool_id == NULL)
        json_object_set_new(t, "pool_id", json_null());
    if (brief_id == NULL)
        json_object_set_new(t, "brief_id", json_null());
    return json_array_append_new(items, rec);
}

int plan_rec_visible(const struct actor *who, const char *const *projects, size_t n)
{
    if (who->platform_admin || who->kind == ACTOR_SYSTEM)
        return 1;
    if (n == 0 || projects[0] == NULL)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (projects[i] == NULL || strcmp(projects[i], projects[0]) != 0)
            return 0;
    unsigned read = ACTOR_ROLE_VIEWER | ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN;
    return plan_scope(who, projects[0], read) == PLAN_SCOPE_OK;
}

void plan_rec_default_thresholds(struct plan_rec_thresholds *t)
{
    t->idle_stop_after_s = PLAN_REC_IDLE_DEFAULT_S;
    t->scale_up_utilization = PLAN_REC_UTIL_HIGH;
    t->scale_down_utilization = PLAN_REC_UTIL_LOW;
    t->failed_share = PLAN_REC_FAILED_SHARE;
    t->cost_increase = PLAN_REC_COST_RISE;
    t->idle_gpu_util_pct = PLAN_REC_IDLE_GPU_PCT;
}

static double win_of(const struct plan_rec_host *h)
{
    return h->th.idle_stop_after_s > 0 ? h->th.idle_stop_after_s : PLAN_REC_IDLE_DEFAULT_S;
}

/* Whether the idle rule may judge the host at all: no queued or running job, and
 * neither stopping nor unreachable (an unreachable host is not idle: nothing is known of
 * it, issue 13; it is never recommended for a stop, nor stopped by the idle policy). */
static int judged(const struct plan_rec_host *h)
{
    return !h->active_job && (h->state == NULL || (strcmp(h->state, "stopping") != 0 &&
                                                   strcmp(h->state, "unreachable") != 0));
}

static double interval_of(const struct plan_rec_host *h)
{
    return h->gpu_util.interval_s > 0 ? h->gpu_util.interval_s : PLAN_REC_INTERVAL_S;
}

/* Sampled time ÷ the window, at most 1: each sample stands for one interval, and so does
 * the sample in flight, the one that fell due since the newest stored one (its age is one
 * interval or more, under two) and is not stored yet. Without it, the window read one
 * interval short whenever a sample was in flight (issue 25: over six intervals, 83% or
 * 100% by phase). A sample more than two intervals old counts for nothing more: a host no
 * longer sampled is not covered. */
static double coverage_of(const struct plan_rec_host *h)
{
    const struct gpu_util_window *g = &h->gpu_util;
    double iv = interval_of(h);
    int in_flight = g->samples > 0 && g->has_last && g->last_age_s >= iv && g->last_age_s < 2 * iv;
    double c = ((double)g->samples + in_flight) * iv / win_of(h);
    return c > 1 ? 1 : c;
}

enum idle_verdict { IDLE_NO, IDLE_YES, IDLE_UNKNOWN };

/* The idle rule (recommend.h): IDLE_YES with both signals idle; IDLE_NO when the host
 * cannot be judged or a signal shows work; else IDLE_UNKNOWN with *why the first signal
 * missing. */
static enum idle_verdict idle_verdict(const struct plan_rec_host *h, const char **why)
{
    const struct gpu_util_window *g = &h->gpu_util;
    double w = win_of(h);
    *why = NULL;
    if (!h->has_usage || !judged(h) || !(h->idle_s > w))
        return IDLE_NO;
    if (g->has_util && !(g->max_pct < h->th.idle_gpu_util_pct))
        return IDLE_NO; /* the GPUs worked */
    if (h->report_age_s > w)
        *why = "reports_stale";
    else if (g->samples <= 0)
        *why = "no_gpu_samples";
    else if (coverage_of(h) < PLAN_REC_COVERAGE)
        *why = "low_sample_coverage";
    return *why ? IDLE_UNKNOWN : IDLE_YES;
}

static int idle_past_window(const struct plan_rec_host *h)
{
    const char *why;
    return idle_verdict(h, &why) == IDLE_YES;
}

static json_t *time_json(double epoch_s)
{
    char t[40];
    util_rfc3339((int64_t)(epoch_s * 1e6), t, sizeof t);
    return json_string(t);
}

/* Both signals of the idle rule, as evidence members of ev. */
static void idle_signals(const struct plan_rec_host *h, json_t *ev)
{
    const struct gpu_util_window *g = &h->gpu_util;
    json_object_set_new(ev, "work_reports",
                        json_pack("{s:I,s:o,s:f,s:o,s:f}", "reports", (json_int_t)h->reports,
                                  "last_report_end", time_json(h->last_report_end),
                                  "last_report_age_seconds", plan_round_to(h->report_age_s, 3),
                                  "last_useful_end",
                                  h->has_useful ? time_json(h->last_useful_end) : json_null(),
                                  "idle_seconds", h->idle_s));
    json_object_set_new(
        ev, "gpu_utilization",
        json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:o,s:o,s:f}", "samples", (json_int_t)g->samples,
                  "unread_samples", (json_int_t)g->unread, "interval_seconds", interval_of(h),
                  "window_seconds", win_of(h), "coverage_pct",
                  plan_round_to(coverage_of(h) * 100, 2), "required_coverage_pct",
                  PLAN_REC_COVERAGE * 100, "max_pct",
                  g->has_util ? json_real(g->max_pct) : json_null(), "mean_pct",
                  g->has_util ? json_real(plan_round_to(g->mean_pct, 2)) : json_null(),
                  "threshold_pct", h->th.idle_gpu_util_pct));
}

static int stop_rec(const struct plan_rec_host *h, json_t *items)
{
    char reason[320];
    snprintf(reason, sizeof reason,
             "no useful work for %.0f s, more than the pool's idle window of %.0f s; GPU "
             "utilization at most %.4g%% (under %.4g%%) over %.4g%% of the window; no running "
             "job",
             h->idle_s, win_of(h), h->gpu_util.max_pct, h->th.idle_gpu_util_pct,
             plan_round_to(coverage_of(h) * 100, 2));
    json_t *ev =
        json_pack("{s:f,s:f,s:b,s:f}", "idle_seconds", h->idle_s, "idle_stop_after_seconds",
                  win_of(h), "running_job", 0, "price_per_hour", h->price_per_hour);
    if (ev == NULL)
        return -1;
    idle_signals(h, ev);
    return add(items, "stop", "idle", &h->id, 1, h->pool_id, h->brief_id, reason, ev,
               h->price_per_hour);
}

/* A host the idle rule cannot judge for want of a signal: listed apart, with both. */
static int unknown_idle(const struct plan_rec_host *h, const char *why, json_t *no_usage)
{
    json_t *ev = json_pack("{s:f}", "idle_stop_after_seconds", win_of(h));
    if (ev == NULL)
        return -1;
    idle_signals(h, ev);
    return json_array_append_new(no_usage, json_pack("{s:s,s:s,s:s,s:s,s:o}", "host_id", h->id,
                                                     "pool_id", h->pool_id, "state", h->state,
                                                     "reason", why, "evidence", ev));
}

/* A JSON string of untrusted text, cleaned to UTF-8 and cut to max bytes; null for NULL. */
static json_t *text_json(const char *s, size_t max)
{
    if (s == NULL)
        return json_null();
    size_t n = strlen(s);
    if (n > max) { /* cut before a character that would not fit whole */
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return utf8_json(s, n);
}

static json_t *or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* investigate monitor_isolated: the quarantine reason and the open isolating events. */
static int isolation_rec(const struct plan_rec_host *h, json_t *items)
{
    const struct gpu_isolation *iso = h->isolation;
    if (iso == NULL || h->state == NULL || strcmp(h->state, "quarantined") != 0)
        return 0;
    json_t *events = json_array();
    for (size_t i = 0; events && i < iso->nevents && i < PLAN_REC_EVENTS_MAX; i++) {
        const struct gpu_event *e = &iso->events[i];
        json_array_append_new(
            events,
            json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:o,s:o}", "kind", e->kind ? e->kind : "",
                      "code", e->has_code ? json_integer(e->code) : json_null(), "category",
                      or_null(e->category), "gpu_uuid", or_null(e->gpu_uuid), "pci_bus_id",
                      or_null(e->pci_bus_id), "first_seen", or_null(e->first_seen), "last_seen",
                      or_null(e->last_seen), "count", (json_int_t)e->count, "message",
                      text_json(e->message, 256), "raw", text_json(e->raw, 512)));
    }
    char why[200], reason[400];
    utf8_clean(iso->reason, iso->reason ? strlen(iso->reason) : 0, why, sizeof why);
    snprintf(reason, sizeof reason,
             "quarantined by the health monitor (%s) with %ld open isolating GPU event%s: "
             "investigate the hardware before releasing the host",
             why[0] ? why : "no reason recorded", iso->open_events,
             iso->open_events == 1 ? "" : "s");
    json_t *ev = json_pack("{s:o,s:o,s:I,s:o}", "quarantine_reason", text_json(iso->reason, 1024),
                           "quarantined_at", or_null(iso->quarantined_at), "open_isolating_events",
                           (json_int_t)iso->open_events, "events", events);
    if (ev == NULL)
        return -1;
    return add(items, "investigate", "monitor_isolated", &h->id, 1, h->pool_id, NULL, reason, ev,
               0);
}

static int host_recs(const struct plan_rec_host *h, json_t *items, json_t *no_usage)
{
    char reason[256];
    if (isolation_rec(h, items) != 0)
        return -1;
    if (!h->has_usage && no_usage == NULL)
        return 0;
    if (!h->has_usage)
        return json_array_append_new(no_usage, json_pack("{s:s,s:s,s:s,s:s}", "host_id", h->id,
                                                         "pool_id", h->pool_id, "state", h->state,
                                                         "reason", "no_usage_data"));
    const char *why;
    enum idle_verdict v = idle_verdict(h, &why);
    if (v == IDLE_YES && stop_rec(h, items) != 0)
        return -1;
    if (v == IDLE_UNKNOWN && no_usage != NULL && unknown_idle(h, why, no_usage) != 0)
        return -1;
    if (h->has_share && h->failed_share > h->th.failed_share) {
        snprintf(reason, sizeof reason,
                 "failed and retried work is %.2f%% of the last 24 h, over the pool's %.4g%%",
                 h->failed_share * 100, h->th.failed_share * 100);
        if (add(items, "investigate", "failed_share", &h->id, 1, h->pool_id, h->brief_id, reason,
                json_pack("{s:f,s:f}", "failed_retried_share", h->failed_share, "threshold",
                          h->th.failed_share),
                0) != 0)
            return -1;
    }
    json_t *rises = json_object();
    char units[128] = "";
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        if (!h->has_cpu[k] || !h->has_prev_cpu[k] || h->prev_cpu[k] <= 0 ||
            !(h->cpu[k] > h->prev_cpu[k] * (1 + h->th.cost_increase)))
            continue;
        json_object_set_new(rises, usage_unit_names[k],
                            json_pack("{s:f,s:f,s:f}", "cost_per_unit", h->cpu[k],
                                      "previous_cost_per_unit", h->prev_cpu[k], "change",
                                      r4(h->cpu[k] / h->prev_cpu[k] - 1)));
        size_t u = strlen(units);
        snprintf(units + u, sizeof units - u, "%s%s", u ? ", " : "", usage_unit_names[k]);
    }
    if (json_object_size(rises) == 0) {
        json_decref(rises);
        return 0;
    }
    snprintf(reason, sizeof reason,
             "cost per completed unit (%s) rose by more than the pool's %.4g%% against the "
             "previous 24 h",
             units, h->th.cost_increase * 100);
    return add(items, "investigate", "cost_per_unit", &h->id, 1, h->pool_id, h->brief_id, reason,
               json_pack("{s:o,s:f}", "units", rises, "threshold", h->th.cost_increase), 0);
}

/* The hosts serving brief b (indexes into hosts), and whether each has hour data. */
struct serving {
    size_t *idx;
    size_t n, nhour;
    double busy, held, p95, queue;
    int has_p95, has_queue;
    const char *pool;
};

/* The brief's serving hosts in one pool. */
static void gather(const struct plan_rec_host *hosts, size_t nh, const char *brief,
                   const char *pool, struct serving *s)
{
    s->n = s->nhour = 0;
    s->busy = s->held = s->p95 = s->queue = 0;
    s->has_p95 = s->has_queue = 0;
    s->pool = pool;
    for (size_t i = 0; i < nh; i++) {
        const struct plan_rec_host *h = &hosts[i];
        if (h->brief_id == NULL || strcmp(h->brief_id, brief) != 0 || strcmp(h->pool_id, pool) != 0)
            continue;
        s->idx[s->n++] = i;
        if (h->has_hour) {
            s->nhour++;
            s->busy += h->hour_busy_s;
            s->held += h->hour_held_s;
        }
        if (h->has_p95 && (!s->has_p95 || h->p95_ms > s->p95)) {
            s->p95 = h->p95_ms;
            s->has_p95 = 1;
        }
        if (h->has_queue && (!s->has_queue || h->queue_delay_ms > s->queue)) {
            s->queue = h->queue_delay_ms;
            s->has_queue = 1;
        }
    }
}

static json_t *host_list(const struct plan_rec_host *hosts, const struct serving *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a, json_string(hosts[s->idx[i]].id));
    return a;
}

/* Scale rules for one brief in one pool (the pool of hosts[first], a serving host), with
 * that pool's thresholds; sets *up when a scale_up was recommended. */
static int brief_recs(const struct plan_rec_host *hosts, size_t nh, const struct plan_rec_brief *b,
                      size_t first, struct serving *s, const char **ids, json_t *items, int *up)
{
    *up = 0;
    const struct plan_rec_thresholds *th = &hosts[first].th;
    gather(hosts, nh, b->id, hosts[first].pool_id, s);
    if (s->n == 0)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        ids[i] = hosts[s->idx[i]].id;
    int has_util = s->nhour > 0 && s->held > 0;
    double util = has_util ? s->busy / s->held : 0;
    char reason[512] = "";
    json_t *ev = json_object();
    if (has_util && util > th->scale_up_utilization) {
        snprintf(reason, sizeof reason, "utilization %.4g over the pool's %.4g", r4(util),
                 th->scale_up_utilization);
        json_object_set_new(ev, "threshold", json_real(th->scale_up_utilization));
        json_object_set_new(ev, "utilization", json_real(r4(util)));
    }
    double lat_target = 0;
    const char *lat_metric = NULL;
    if (b->has_ttft && (lat_metric == NULL || b->ttft_ms < lat_target)) {
        lat_target = b->ttft_ms;
        lat_metric = "time_to_first_token_ms";
    }
    if (b->has_tail && (lat_metric == NULL || b->tail_ms < lat_target)) {
        lat_target = b->tail_ms;
        lat_metric = "tail_latency_ms";
    }
    if (lat_metric && s->has_p95 && s->p95 > lat_target) {
        size_t u = strlen(reason);
        snprintf(reason + u, sizeof reason - u, "%sp95 latency %.4g ms over the %s target %.4g",
                 u ? "; " : "", s->p95, lat_metric, lat_target);
        json_object_set_new(ev, "p95_latency_ms", json_real(s->p95));
        json_object_set_new(ev, "latency_target_ms", json_real(lat_target));
        json_object_set_new(ev, "latency_metric", json_string(lat_metric));
    }
    if (b->has_queue && s->has_queue && s->queue > b->queue_delay_s * 1000) {
        size_t u = strlen(reason);
        snprintf(reason + u, sizeof reason - u,
                 "%squeue delay %.4g ms over the queue_delay_s target %.4g s", u ? "; " : "",
                 s->queue, b->queue_delay_s);
        json_object_set_new(ev, "queue_delay_ms", json_real(s->queue));
        json_object_set_new(ev, "queue_delay_target_s", json_real(b->queue_delay_s));
    }
    if (json_object_size(ev) > 0) {
        *up = 1;
        if (json_object_get(ev, "utilization") == NULL)
            json_object_set_new(ev, "utilization", has_util ? json_real(r4(util)) : json_null());
        json_object_set_new(ev, "hosts", host_list(hosts, s));
        if (add(items, "scale_up", "scale_up", ids, s->n, s->pool, b->id, reason, ev, 0) != 0)
            return -1;
    } else {
        json_decref(ev);
    }
    if (!*up && s->nhour >= 2 && has_util && util < th->scale_down_utilization) {
        /* the least utilized serving host with hour data (hosts are sorted by id) */
        const struct plan_rec_host *low = NULL;
        double lu = 0;
        json_t *per = json_object();
        for (size_t i = 0; i < s->n; i++) {
            const struct plan_rec_host *h = &hosts[s->idx[i]];
            if (!h->has_hour || h->hour_held_s <= 0)
                continue;
            double u = h->hour_busy_s / h->hour_held_s;
            json_object_set_new(per, h->id, json_real(r4(u)));
            if (low == NULL || u < lu) {
                low = h;
                lu = u;
            }
        }
        snprintf(reason, sizeof reason,
                 "utilization %.4g across %zu hosts of the brief in the pool, under the pool's "
                 "%.4g: stop the least utilized",
                 r4(util), s->nhour, th->scale_down_utilization);
        if (add(items, "scale_down", "scale_down", &low->id, 1, low->pool_id, b->id, reason,
                json_pack("{s:f,s:i,s:o,s:f,s:f}", "utilization", r4(util), "hosts", (int)s->nhour,
                          "host_utilization", per, "price_per_hour", low->price_per_hour,
                          "threshold", th->scale_down_utilization),
                low->price_per_hour) != 0)
            return -1;
    }
    return 0;
}

static int reuse_recs(const struct plan_rec_host *hosts, size_t nh,
                      const struct plan_rec_brief *briefs, size_t nb, const int *needs,
                      const int *served, const struct plan_options *opts, json_t *items)
{
    for (size_t i = 0; i < nh; i++) {
        const struct plan_rec_host *h = &hosts[i];
        if (!h->accepted || !idle_past_window(h) || h->gpu == NULL)
            continue;
        for (size_t j = 0; j < nb; j++) {
            const struct plan_rec_brief *b = &briefs[j];
            if (!needs[j] || !b->sized || (h->brief_id && strcmp(h->brief_id, b->id) == 0))
                continue;
            if (b->sizing.weights.status != PLAN_ESTIMATED)
                continue;
            struct plan_gpu_fit fit;
            plan_fit(&b->sizing, opts, h->gpu, b->precision, &fit);
            if (!fit.precision_supported || fit.gpus_needed < 1 || fit.gpus_needed > h->gpu_count)
                continue;
            char reason[256];
            snprintf(reason, sizeof reason,
                     "idle accepted host fits the brief (%s): %ld of its %ld %s GPUs needed",
                     served[j] ? "over its scale-up target" : "no host serves it", fit.gpus_needed,
                     h->gpu_count, h->gpu->key);
            if (add(items, "reuse", "reuse", &h->id, 1, h->pool_id, b->id, reason,
                    json_pack("{s:s,s:f,s:f,s:I,s:I,s:s,s:f}", "need",
                              served[j] ? "scale_up" : "no_host", "idle_seconds", h->idle_s,
                              "estimated_gib", plan_gib(b->sizing.total_bytes), "gpus_needed",
                              (json_int_t)fit.gpus_needed, "gpu_count", (json_int_t)h->gpu_count,
                              "gpu_model", h->gpu->key, "usable_gib_per_gpu",
                              plan_gib(fit.usable_bytes)),
                    0) != 0)
                return -1;
        }
    }
    return 0;
}

int plan_recommend(const struct plan_rec_host *hosts, size_t nh,
                   const struct plan_rec_brief *briefs, size_t nb, const struct plan_options *opts,
                   json_t *items, json_t *no_usage)
{
    for (size_t i = 0; i < nh; i++)
        if (host_recs(&hosts[i], items, no_usage) != 0)
            return -1;
    struct serving s;
    s.idx = malloc((nh + 1) * sizeof *s.idx);
    const char **ids = malloc((nh + 1) * sizeof *ids);
    const char **pools = malloc((nh + 1) * sizeof *pools);
    int *needs = calloc(nb + 1, sizeof *needs), *served = calloc(nb + 1, sizeof *served);
    int rc = -1;
    if (s.idx == NULL || ids == NULL || pools == NULL || needs == NULL || served == NULL)
        goto out;
    for (size_t j = 0; j < nb; j++) {
        /* once per pool among the brief's serving hosts, in host order */
        size_t npools = 0;
        for (size_t i = 0; i < nh; i++) {
            const struct plan_rec_host *h = &hosts[i];
            if (h->brief_id == NULL || strcmp(h->brief_id, briefs[j].id) != 0)
                continue;
            size_t k = 0;
            while (k < npools && strcmp(pools[k], h->pool_id) != 0)
                k++;
            if (k < npools)
                continue;
            pools[npools++] = h->pool_id;
            int up;
            if (brief_recs(hosts, nh, &briefs[j], i, &s, ids, items, &up) != 0)
                goto out;
            served[j] = 1;
            needs[j] |= up;
        }
        if (!served[j])
            needs[j] = 1;
    }
    rc = reuse_recs(hosts, nh, briefs, nb, needs, served, opts, items);
out:
    free(s.idx);
    free(ids);
    free(pools);
    free(needs);
    free(served);
    return rc;
}
