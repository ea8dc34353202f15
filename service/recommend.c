/* recommend.c — the recommendations as of a time. Read (db/recommend.c) in the caller's
 * transaction, the usage rows and the bottleneck rows each beside it on a connection of
 * their own (read_fn): the held seconds of every host in the last hour, the last 24 h and
 * the 24 h before; the work reports of those windows and of the lookback, summed per
 * host, brief and unit in one pass over the hour rollup; the hosts not stopped with their
 * pools' thresholds; their GPU utilization samples over their idle windows (one
 * statement over the sample rollups); the hosts quarantined by the health monitor with
 * their open isolating GPU events; the briefs and the GPU catalog. The figures per host are
 * computed by planner/costs.c, the rules applied by planner/recommend.c. Used by GET
 * /v1/recommendations (api/recommend.c) and by the idle policy (service/idle_policy.c). */
#include "service/recommend.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/costs.h"
#include "db/recommend.h"
#include "planner/brief.h"
#include "planner/costs.h"
#include "planner/recommend.h"
#include "service/catalog.h"
#include "service/recommend_bn.h"
#include "service/recommend_loads.h"
#include "service/recommend_place.h"
#include "service/recommend_retry.h"
#include "service/rollups.h"

struct rec_arg {
    int64_t at_us;
    struct db_rec_input in;
    struct svc_catalog *cat;
    struct svc_rec_bn bn;       /* the bottleneck recommendations' inputs */
    struct svc_rec_retry retry; /* the retry budgets' (issue 27) */
    json_t *rightsize;          /* the rightsize recommendations (service/recommend_place.h) */
};

static void clear(struct rec_arg *a)
{
    db_rec_input_free(&a->in);
    svc_rec_bn_free(&a->bn);
    svc_rec_retry_free(&a->retry);
    json_decref(a->rightsize);
    a->rightsize = NULL;
    if (a->cat)
        svc_catalog_release(a->cat);
    a->cat = NULL;
}

/* A read beside the caller's: fn on a connection and a thread of its own (db_run_spare),
 * or on the caller's connection when no thread or no free connection could take it. */
struct lane {
    pthread_t thread;
    int started, ran;
    enum db_status s;
    db_tx_fn fn;
    void *arg;
};

static void *lane_main(void *p)
{
    struct lane *l = p;
    l->s = db_run_spare(l->fn, l->arg, &l->ran);
    return NULL;
}

static void lane_start(struct lane *l, db_tx_fn fn, void *arg)
{
    *l = (struct lane){.fn = fn, .arg = arg};
    l->started = pthread_create(&l->thread, NULL, lane_main, l) == 0;
}

/* Waits for l; when its read did not run beside, runs it on c if run, else fails. */
static enum db_status lane_finish(struct lane *l, struct db_conn *c, int run)
{
    if (l->started)
        pthread_join(l->thread, NULL);
    if (l->started && l->ran)
        return l->s;
    return run ? l->fn(c, l->arg) : DB_HARD_ERROR;
}

/* work_mem for the bottleneck rows' read (issue 28 item 5), set for its lane's transaction
 * (or, when the read falls back to the caller's connection, for the rest of the caller's
 * read transaction: more memory for its remaining reads, nothing else). Its sort of the
 * last day's quarter rows (50,000 at 10,000 hosts, 9.5 MB in memory) spills to disk at
 * 8 MB (at 10,000 hosts: 210 -> 165 ms alone). The usage and placement reads gained
 * nothing from it. */
#define REC_WORK_MEM "32MB"

struct usage_read {
    int64_t at_us;
    int failures;
    struct db_rec_parts *parts;
};

static enum db_status usage_fn(struct db_conn *c, void *arg)
{
    struct usage_read *u = arg;
    return db_rec_usage_read(c, u->at_us, u->failures, u->parts);
}

static enum db_status bn_fn(struct db_conn *c, void *arg)
{
    struct rec_arg *a = arg;
    enum db_status s = db_local_work_mem(c, REC_WORK_MEM);
    return s < 0 ? s : svc_rec_bn_read(c, a->at_us, &a->bn);
}

static enum db_status place_fn(struct db_conn *c, void *arg)
{
    struct rec_arg *a = arg;
    return svc_rec_place_read(c, a->at_us, a->rightsize);
}

/* The inputs: the usage rows (the longest read), the bottleneck rows and the rightsize's
 * placements each on a connection of their own while c reads the rest; each statement
 * reads its own snapshot, as it would in c's READ COMMITTED transaction. */
static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct rec_arg *a = arg;
    clear(a);
    /* the budgets first: the usage read carries the failure classes only when one is set */
    enum db_status s = svc_rec_retry_budgets(c, &a->retry);
    a->rightsize = json_array(); /* out of memory is an error, never "no rightsize" */
    if (s < 0 || a->rightsize == NULL)
        return s < 0 ? s : DB_HARD_ERROR;
    struct db_rec_parts parts = {{NULL}};
    struct usage_read u = {a->at_us, svc_rec_retry_wanted(&a->retry), &parts};
    struct lane lu, lb, lp;
    lane_start(&lu, usage_fn, &u);
    lane_start(&lb, bn_fn, a);
    lane_start(&lp, place_fn, a);
    s = db_rec_parts_read(c, a->at_us, PLAN_REC_IDLE_DEFAULT_S, PLAN_REC_EVENTS_MAX, &parts);
    if (s >= 0)
        a->cat = svc_catalog_get(c, &s);
    enum db_status su = lane_finish(&lu, c, s >= 0);
    enum db_status sb = lane_finish(&lb, c, s >= 0 && su >= 0);
    enum db_status sp = lane_finish(&lp, c, s >= 0 && su >= 0 && sb >= 0);
    if (s >= 0)
        s = su < 0 ? su : sb < 0 ? sb : sp < 0 ? sp : s;
    if (s < 0) {
        db_rec_parts_free(&parts);
        return s;
    }
    enum db_status d = db_rec_parts_decode(&parts, &a->in);
    if (d < 0)
        return d;
    return svc_rec_retry_take(&a->in, &a->retry) != 0 ? DB_HARD_ERROR : s;
}

/* Sets *out to the pool's setting when it has one (else *out keeps its default). */
static void opt_setting(const struct db_rec_setting *v, double *out)
{
    if (v->set)
        *out = v->value;
}

/* Per-host costs of one window: ids[i] and costs[i], sorted by host id. */
struct window_costs {
    size_t n;
    const char **ids;
    struct plan_cost *costs;
};

/* Whether a usage row (part 0: the last hour, 1: the rest of the day, 2: the day
 * before) counts in window win. */
static int in_window(const struct db_rec_usage *u, int win)
{
    return win == DB_REC_HOUR ? u->part == 0 : win == DB_REC_DAY ? u->part <= 1 : u->part == 2;
}

/* Costs per host of window win: the hosts with their held seconds of the window, and
 * the usage rows in the window. */
static int window_costs(const struct db_rec_input *in, int win, struct window_costs *out)
{
    size_t nh = in->nheld, n = 0;
    struct usage_host *hosts = calloc(nh + 1, sizeof *hosts);
    struct usage_row *rows = calloc(in->nusage + 1, sizeof *rows);
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    int rc = -1;
    out->n = 0;
    out->ids = NULL;
    out->costs = NULL;
    if (hosts == NULL || rows == NULL)
        goto done;
    for (size_t i = 0; i < nh; i++) {
        hosts[i] = in->held[i];
        hosts[i].held_seconds = in->held_seconds[i][win];
    }
    for (size_t i = 0; i < in->nusage; i++)
        if (in_window(&in->usage[i], win) && in->usage[i].row.host != DB_NO_HOST)
            rows[n++] = in->usage[i].row;
    if (plan_costs_group(hosts, nh, rows, n, PLAN_BY_HOST, &groups, &ng) != 0)
        goto done;
    out->ids = calloc(ng + 1, sizeof *out->ids);
    out->costs = calloc(ng + 1, sizeof *out->costs);
    if (out->ids == NULL || out->costs == NULL)
        goto done;
    /* Groups come in host order (first seen), and the hosts are sorted by id. */
    for (size_t i = 0; i < ng; i++) {
        out->ids[i] = groups[i].id;
        plan_cost_finish(&groups[i].acc, &out->costs[i]);
    }
    out->n = ng;
    rc = 0;
done:
    free(hosts);
    free(rows);
    free(groups);
    return rc;
}

static const struct plan_cost *find_cost(const struct window_costs *w, const char *id)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(w->ids[mid], id);
        if (c == 0)
            return &w->costs[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const struct gpu_model *find_gpu(const struct svc_catalog *cat, const char *key)
{
    for (size_t i = 0; cat && key && i < cat->n; i++)
        if (strcmp(cat->gpus[i].key, key) == 0)
            return &cat->gpus[i];
    return NULL;
}

static void brief_targets(const json_t *spec, struct plan_rec_brief *b)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "targets"), i, t)
    {
        const char *m = json_string_value(json_object_get(t, "metric"));
        double v = json_number_value(json_object_get(t, "value"));
        if (m == NULL)
            continue;
        if (strcmp(m, "time_to_first_token_ms") == 0 && (!b->has_ttft || v < b->ttft_ms)) {
            b->has_ttft = 1;
            b->ttft_ms = v;
        } else if (strcmp(m, "tail_latency_ms") == 0 && (!b->has_tail || v < b->tail_ms)) {
            b->has_tail = 1;
            b->tail_ms = v;
        } else if (strcmp(m, "queue_delay_s") == 0 && (!b->has_queue || v < b->queue_delay_s)) {
            b->has_queue = 1;
            b->queue_delay_s = v;
        }
    }
}

/* The inputs read and the per-host and per-brief figures built from them. */
struct svc_recommendations {
    struct rec_arg a;
    char at[40];
    struct window_costs wc[DB_REC_WINDOWS];
    size_t nh, nb;
    struct plan_rec_host *hosts;
    struct plan_rec_brief *briefs;
};

static void calc_setup(struct svc_recommendations *k, int64_t at_us)
{
    memset(k, 0, sizeof *k);
    util_rfc3339(at_us, k->at, sizeof k->at);
    k->a.at_us = at_us;
}

/* The lookback of host h (usage rows flagged lb), and its highest p95 latency and queue
 * delay of the hour (part 0), from the usage rows from *pos on (sorted by host id; *pos
 * advances past h's rows). */
static void lookback(const struct db_rec_input *in, size_t *pos, int64_t at_us,
                     struct plan_rec_host *h)
{
    size_t n = in->nusage;
    while (*pos < n && strcmp(in->usage[*pos].host_id, h->id) < 0)
        (*pos)++;
    long reports = 0;
    int has_useful = 0, has_first = 0;
    double useful = 0, first = 0, latest = 0, last_end = 0;
    for (; *pos < n && strcmp(in->usage[*pos].host_id, h->id) == 0; (*pos)++) {
        const struct db_rec_usage *u = &in->usage[*pos];
        if (u->part == 0) {
            if (u->has_p95 && (!h->has_p95 || u->p95_ms > h->p95_ms)) {
                h->has_p95 = 1;
                h->p95_ms = u->p95_ms;
            }
            if (u->has_queue && (!h->has_queue || u->queue_delay_ms > h->queue_delay_ms)) {
                h->has_queue = 1;
                h->queue_delay_ms = u->queue_delay_ms;
            }
        }
        if (!u->lb)
            continue;
        reports += u->row.reports;
        if (u->has_useful_end && (!has_useful || u->useful_end > useful)) {
            useful = u->useful_end;
            has_useful = 1;
        }
        if (!has_first || u->min_start < first) {
            first = u->min_start;
            has_first = 1;
        }
        if (u->max_end > last_end)
            last_end = u->max_end;
        if (u->row.brief_id != NULL && (h->brief_id == NULL || u->max_end > latest)) {
            h->brief_id = u->row.brief_id;
            latest = u->max_end;
        }
    }
    h->has_usage = reports > 0;
    h->reports = reports;
    if (h->has_usage) {
        double at = (double)at_us / 1e6, idle = at - (has_useful ? useful : first);
        h->idle_s = idle > 0 ? idle : 0;
        h->has_useful = has_useful;
        h->last_useful_end = useful;
        h->last_report_end = last_end;
        h->report_age_s = at > last_end ? at - last_end : 0;
    }
}

/* The GPU utilization of host h over its idle window and its pool's threshold, from the
 * rows from *pos on (sorted by host id; *pos advances past h's). A host without a row
 * (it appeared between two statements) has no samples. */
static void gpu_util(const struct db_rec_input *in, size_t *pos, struct plan_rec_host *h)
{
    while (*pos < in->ngpu && strcmp(in->gpu[*pos].host_id, h->id) < 0)
        (*pos)++;
    if (*pos < in->ngpu && strcmp(in->gpu[*pos].host_id, h->id) == 0) {
        const struct db_rec_gpu *g = &in->gpu[(*pos)++];
        h->gpu_util = g->util;
        opt_setting(&g->idle_gpu_pct, &h->th.idle_gpu_util_pct);
    }
}

/* The monitor's isolation of host h, or NULL (rows sorted by host id, as for gpu_util). */
static const struct gpu_isolation *isolation(const struct db_rec_input *in, size_t *pos,
                                             const char *id)
{
    while (*pos < in->nisolated && strcmp(in->isolated[*pos].host_id, id) < 0)
        (*pos)++;
    if (*pos < in->nisolated && strcmp(in->isolated[*pos].host_id, id) == 0)
        return &in->isolated[(*pos)++].iso;
    return NULL;
}

static void calc_free(struct svc_recommendations *k)
{
    for (int w = 0; w < DB_REC_WINDOWS; w++) {
        free(k->wc[w].ids);
        free(k->wc[w].costs);
        k->wc[w].ids = NULL;
        k->wc[w].costs = NULL;
    }
    free(k->hosts);
    free(k->briefs);
    k->hosts = NULL;
    k->briefs = NULL;
    clear(&k->a);
}

/* The host (sorted by id) with this id, or NULL. */
static const struct plan_rec_host *find_host(const struct svc_recommendations *k, const char *id)
{
    size_t lo = 0, hi = k->nh;
    while (id != NULL && lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(k->hosts[mid].id, id);
        if (c == 0)
            return &k->hosts[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Sets the member "project" ({"id", "name"}) of each of items (recommendations, or
 * no_usage entries): the project of its host (a no_usage entry's host_id, else the first
 * of target.host_ids), else of its pool (target.pool_id) — a reuse that lends a host to
 * another project's brief names the host's. Returns 0, or -1 when out of memory. */
static int add_projects(const struct svc_recommendations *k, json_t *items)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const json_t *t = json_object_get(it, "target");
        const char *host = json_string_value(json_object_get(it, "host_id"));
        if (host == NULL)
            host = json_string_value(json_array_get(json_object_get(t, "host_ids"), 0));
        const char *pool = json_string_value(json_object_get(t ? t : it, "pool_id"));
        const struct plan_rec_host *h = find_host(k, host);
        for (size_t j = 0; h == NULL && pool != NULL && j < k->nh; j++)
            if (strcmp(k->hosts[j].pool_id, pool) == 0)
                h = &k->hosts[j];
        if (h == NULL)
            continue;
        const struct db_rec_host *R = &k->a.in.hosts[h - k->hosts];
        json_t *p = json_pack("{s:s, s:s}", "id", R->project_id, "name",
                              R->project_name ? R->project_name : "");
        if (json_object_set_new(it, "project", p) != 0)
            return -1;
    }
    return 0;
}

/* Sizes every brief of in into briefs (nbriefs of them), each document parsed only while
 * it is sized (nothing borrows from it: 10,000 parsed documents held at once were the idle
 * policy's largest peak), then drops the documents' text (db_rec_briefs_keep_ids).
 * Returns 0, or -1 when out of memory. */
static int size_briefs(struct db_rec_input *in, const struct plan_options *opts,
                       struct plan_rec_brief *briefs)
{
    for (size_t j = 0; j < in->nbriefs; j++) {
        struct plan_rec_brief *b = &briefs[j];
        json_t *doc = json_loads(in->briefs[j].spec, 0, NULL);
        if (doc == NULL)
            continue;
        brief_targets(doc, b);
        struct plan_brief pb;
        plan_brief_to_sizing(doc, &pb);
        plan_size(&pb, opts, &b->sizing);
        json_decref(doc);
        b->precision = pb.precision;
        b->sized = 1;
    }
    if (db_rec_briefs_keep_ids(in) != 0)
        return -1;
    for (size_t j = 0; j < in->nbriefs; j++) {
        briefs[j].id = in->briefs[j].id;
        briefs[j].project_id = in->briefs[j].project_id;
    }
    return 0;
}

/* From the inputs read (k->a), applies the rules: appends to all and no_usage. release_memory
 * nonzero: malloc's free pages are handed back once the briefs are sized (the idle policy's
 * pass, issue 28 item 7: its RSS peak; a request does not pay the trim). Returns 0, or -1
 * when out of memory. */
static int calc_run(struct svc_recommendations *k, int release_memory, json_t *all,
                    json_t *no_usage)
{
    struct db_rec_input *in = &k->a.in;
    size_t nh = k->nh = in->nhosts, nb = k->nb = in->nbriefs;
    struct plan_options opts;
    plan_default_options(&opts);
    /* The briefs first, so that their documents' text is freed before the hosts' figures
     * are built (issue 28 item 7: the pass's peak). */
    struct plan_rec_brief *briefs = k->briefs = calloc(nb + 1, sizeof *briefs);
    if (briefs == NULL || size_briefs(in, &opts, briefs) != 0)
        return -1;
    if (release_memory)
        util_malloc_release();
    struct plan_rec_host *hosts = k->hosts = calloc(nh + 1, sizeof *hosts);
    struct window_costs *wc = k->wc;
    int ok = hosts != NULL;
    for (int w = 0; ok && w < DB_REC_WINDOWS; w++)
        ok = window_costs(in, w, &wc[w]) == 0;
    if (!ok)
        return -1;
    size_t upos = 0, gpos = 0, ipos = 0;
    for (size_t i = 0; i < nh; i++) {
        struct plan_rec_host *h = &hosts[i];
        const struct db_rec_host *R = &in->hosts[i];
        h->id = R->id;
        h->pool_id = R->pool_id;
        h->project_id = R->project_id;
        h->state = R->state;
        h->accepted = R->accepted;
        h->active_job = R->active_job;
        plan_rec_default_thresholds(&h->th);
        opt_setting(&R->idle_stop_after_s, &h->th.idle_stop_after_s);
        h->price_per_hour = R->price_per_hour;
        h->gpu = find_gpu(k->a.cat, R->gpu_model);
        h->gpu_count = R->gpu_count;
        opt_setting(&R->scale_up_utilization, &h->th.scale_up_utilization);
        opt_setting(&R->scale_down_utilization, &h->th.scale_down_utilization);
        opt_setting(&R->failed_share, &h->th.failed_share);
        opt_setting(&R->cost_increase, &h->th.cost_increase);
        lookback(in, &upos, k->a.at_us, h);
        gpu_util(in, &gpos, h);
        h->isolation = isolation(in, &ipos, h->id);
        const struct plan_cost *c = find_cost(&wc[DB_REC_HOUR], h->id);
        if (c && c->has_utilization) {
            h->has_hour = 1;
            h->hour_busy_s = c->busy_hours * 3600;
            h->hour_held_s = c->held_hours * 3600;
        }
        c = find_cost(&wc[DB_REC_DAY], h->id);
        if (c) {
            h->has_share = c->has_share;
            h->failed_share = c->failed_retried_share;
            for (int kk = 0; kk < USAGE_UNIT_COUNT; kk++) {
                h->has_cpu[kk] = c->has_cost_per_unit[kk];
                h->cpu[kk] = c->cost_per_unit[kk];
            }
        }
        c = find_cost(&wc[DB_REC_PREV], h->id);
        for (int kk = 0; c && kk < USAGE_UNIT_COUNT; kk++) {
            h->has_prev_cpu[kk] = c->has_cost_per_unit[kk];
            h->prev_cpu[kk] = c->cost_per_unit[kk];
        }
    }
    if (plan_recommend(hosts, nh, briefs, nb, &opts, all, no_usage) != 0 ||
        svc_rec_bn_apply(&k->a.bn, hosts, nh, all) != 0 ||
        svc_rec_retry_apply(&k->a.retry, all) != 0 ||
        svc_rec_loads_apply(&k->a.bn, in->held, in->nheld, wc[DB_REC_DAY].ids, wc[DB_REC_DAY].costs,
                            wc[DB_REC_DAY].n, all) != 0 ||
        (k->a.rightsize && json_array_extend(all, k->a.rightsize) != 0))
        return -1;
    return add_projects(k, all) == 0 && (no_usage == NULL || add_projects(k, no_usage) == 0) ? 0
                                                                                             : -1;
}

enum db_status svc_recommend_in_tx(struct db_conn *c, int64_t at_us, int release_memory,
                                   json_t *all, json_t *no_usage)
{
    struct svc_recommendations k;
    calc_setup(&k, at_us);
    enum db_status s = read_fn(c, &k.a);
    if (s >= 0 && calc_run(&k, release_memory, all, no_usage) != 0)
        s = DB_HARD_ERROR;
    calc_free(&k);
    return s;
}

struct svc_recommendations *svc_recommend(int64_t at_us, json_t *all, json_t *no_usage,
                                          enum db_status *status)
{
    struct svc_recommendations *k = malloc(sizeof *k);
    if (k == NULL) {
        *status = DB_HARD_ERROR;
        return NULL;
    }
    calc_setup(k, at_us);
    *status = svc_rollups_run_tx(read_fn, &k->a);
    if (*status >= 0 && calc_run(k, 0, all, no_usage) != 0)
        *status = DB_HARD_ERROR;
    if (*status < 0) {
        svc_recommendations_free(k);
        return NULL;
    }
    return k;
}

const char *svc_recommendations_at(const struct svc_recommendations *k)
{
    return k->at;
}

const char *svc_recommendations_host_pool(const struct svc_recommendations *k, const char *id)
{
    for (size_t i = 0; id != NULL && i < k->nh; i++)
        if (strcmp(k->hosts[i].id, id) == 0)
            return k->hosts[i].pool_id;
    return NULL;
}

const char *svc_recommendations_project(const struct svc_recommendations *k, const char *host_id,
                                        const char *pool_id, const char *brief_id)
{
    if (host_id != NULL) {
        const struct plan_rec_host *h = find_host(k, host_id);
        return h ? h->project_id : NULL;
    }
    for (size_t i = 0; pool_id != NULL && i < k->nh; i++)
        if (strcmp(k->hosts[i].pool_id, pool_id) == 0)
            return k->hosts[i].project_id;
    size_t lo = 0, hi = brief_id ? k->nb : 0;
    while (lo < hi) { /* briefs are sorted by id */
        size_t mid = (lo + hi) / 2;
        int c = strcmp(k->briefs[mid].id, brief_id);
        if (c == 0)
            return k->briefs[mid].project_id;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void svc_recommendations_free(struct svc_recommendations *k)
{
    if (k == NULL)
        return;
    calc_free(k);
    free(k);
}
