/* recommend.c — GET /v1/recommendations. In one read transaction (db/recommend.c): the
 * held seconds of every host in the last hour, the last 24 h and the 24 h before; the
 * work reports of those windows and of the lookback, summed per host, brief and unit in
 * one pass over the hour rollup; the hosts not stopped with their pools' thresholds; the
 * briefs and the GPU catalog. The figures per host are computed by
 * planner/costs.c, the rules applied by planner/recommend.c. Not paginated: the whole
 * list is returned with next_cursor null. */
#include "api/recommend.h"

#include <stdlib.h>
#include <string.h>

#include "api/catalog.h"
#include "api/list.h"
#include "common/util.h"
#include "db/costs.h"
#include "db/recommend.h"
#include "planner/brief.h"
#include "planner/costs.h"
#include "planner/recommend.h"

static int valid_action(const char *v)
{
    return plan_lookup(plan_rec_actions, v) >= 0;
}

static const struct list_filter rec_filters[] = {
    {"action", valid_action, "one of stop, scale_up, scale_down, reuse, investigate"},
    {"pool_id", api_valid_uuid, "a UUID"},
    {"brief_id", api_valid_uuid, "a UUID"},
    {"at", api_valid_rfc3339, "an RFC 3339 date-time"},
};

enum { W_HOUR, W_DAY, W_PREV, W_COUNT };

struct rec_arg {
    int64_t at_us;
    PGresult *held, *usage, *hosts, *briefs;
    struct api_catalog *cat;
};

static void clear(struct rec_arg *a)
{
    PQclear(a->held);
    PQclear(a->usage);
    PQclear(a->hosts);
    PQclear(a->briefs);
    a->held = a->usage = a->hosts = a->briefs = NULL;
    if (a->cat)
        api_catalog_release(a->cat);
    a->cat = NULL;
}

static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct rec_arg *a = arg;
    clear(a);
    enum db_status s = db_recommend_held(c, a->at_us, &a->held);
    if (s >= 0)
        s = db_recommend_usage(c, a->at_us, &a->usage);
    if (s >= 0)
        s = db_recommend_hosts(c, &a->hosts);
    if (s >= 0)
        s = db_recommend_briefs(c, &a->briefs);
    if (s >= 0)
        a->cat = api_catalog_get(c, &s);
    return s;
}

static double num(const PGresult *r, int row, int col)
{
    return atof(PQgetvalue(r, row, col));
}
/* Sets *out to the number at (row, col) unless it is NULL (then *out keeps its default). */
static void opt_num(const PGresult *r, int row, int col, double *out)
{
    if (!PQgetisnull(r, row, col))
        *out = num(r, row, col);
}
static const char *str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* Per-host costs of one window: ids[i] and costs[i], sorted by host id. */
struct window_costs {
    size_t n;
    const char **ids;
    struct plan_cost *costs;
};

/* Whether a usage row (part 0: the last hour, 1: the rest of the day, 2: the day
 * before) counts in window win. */
static int in_window(const PGresult *u, int row, int win)
{
    int part = atoi(PQgetvalue(u, row, 13));
    return win == W_HOUR ? part == 0 : win == W_DAY ? part <= 1 : part == 2;
}

/* Costs per host of window win: held seconds from column 8 + win of hr, reports from the
 * usage rows of rr in the window. */
static int window_costs(const PGresult *hr, int win, const PGresult *rr,
                        struct window_costs *out)
{
    int nh = PQntuples(hr), nr = PQntuples(rr);
    struct plan_cost_host *hosts = calloc((size_t)nh + 1, sizeof *hosts);
    struct plan_cost_row *rows = calloc((size_t)nr + 1, sizeof *rows);
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    int rc = -1;
    out->n = 0;
    out->ids = NULL;
    out->costs = NULL;
    if (hosts == NULL || rows == NULL)
        goto done;
    for (int i = 0; i < nh; i++) {
        struct plan_cost_host *h = &hosts[i];
        h->id = str(hr, i, 0);
        h->pool_id = str(hr, i, 2);
        h->prices =
            (struct plan_prices){num(hr, i, 4), num(hr, i, 5), num(hr, i, 6), num(hr, i, 7)};
        h->held_seconds = num(hr, i, 8 + win);
    }
    int h = 0, n = 0;
    for (int i = 0; i < nr; i++) {
        if (!in_window(rr, i, win))
            continue;
        const char *host_id = PQgetvalue(rr, i, 0);
        while (h < nh && strcmp(hosts[h].id, host_id) < 0)
            h++;
        if (h == nh || strcmp(hosts[h].id, host_id) != 0)
            continue;
        struct plan_cost_row *w = &rows[n++];
        w->host = (size_t)h;
        w->brief_id = str(rr, i, 1);
        w->unit = plan_unit_lookup(PQgetvalue(rr, i, 3));
        w->reports = atol(PQgetvalue(rr, i, 4));
        w->completed = num(rr, i, 5);
        w->failed = num(rr, i, 6);
        w->retried = num(rr, i, 7);
        w->busy_seconds = num(rr, i, 8);
        w->covered_seconds = num(rr, i, 9);
        w->storage_gb_seconds = num(rr, i, 10);
        w->storage_seconds = num(rr, i, 11);
        w->bytes_moved = num(rr, i, 12);
    }
    if (plan_costs_group(hosts, (size_t)nh, rows, (size_t)n, PLAN_BY_HOST, &groups, &ng) != 0)
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

static const struct plan_gpu *find_gpu(const struct api_catalog *cat, const char *key)
{
    for (size_t i = 0; cat && i < cat->n; i++)
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

/* Keeps the items matching the filters. */
static int keep(const json_t *item, const struct list_query *q, const struct plan_rec_host *hosts,
                size_t nh)
{
    if (q->values[0] &&
        strcmp(json_string_value(json_object_get(item, "action")), q->values[0]) != 0)
        return 0;
    const json_t *t = json_object_get(item, "target");
    if (q->values[2]) {
        const char *b = json_string_value(json_object_get(t, "brief_id"));
        if (b == NULL || strcmp(b, q->values[2]) != 0)
            return 0;
    }
    if (q->values[1]) {
        const char *p = json_string_value(json_object_get(t, "pool_id"));
        if (p != NULL)
            return strcmp(p, q->values[1]) == 0;
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(t, "host_ids"), i,
                           h) for (size_t k = 0; k < nh;
                                   k++) if (strcmp(hosts[k].id, json_string_value(h)) == 0 &&
                                            strcmp(hosts[k].pool_id, q->values[1]) == 0) return 1;
        return 0;
    }
    return 1;
}

/* The inputs read and the per-host and per-brief figures built from them. */
struct rec_calc {
    struct rec_arg a;
    char at[40];
    struct window_costs wc[W_COUNT];
    int nh, nb;
    struct plan_rec_host *hosts;
    struct plan_rec_brief *briefs;
    json_t **docs;
};

static void calc_setup(struct rec_calc *k, int64_t at_us)
{
    memset(k, 0, sizeof *k);
    util_rfc3339(at_us, k->at, sizeof k->at);
    k->a.at_us = at_us;
}

/* The lookback of host h (usage rows flagged lb), and its highest p95 latency and queue
 * delay of the hour (part 0), from the usage rows from *pos on (sorted by host id; *pos
 * advances past h's rows). */
static void lookback(const PGresult *u, int *pos, int64_t at_us, struct plan_rec_host *h)
{
    int n = PQntuples(u);
    while (*pos < n && strcmp(PQgetvalue(u, *pos, 0), h->id) < 0)
        (*pos)++;
    long reports = 0;
    int has_useful = 0, has_first = 0;
    double useful = 0, first = 0, latest = 0;
    for (; *pos < n && strcmp(PQgetvalue(u, *pos, 0), h->id) == 0; (*pos)++) {
        int i = *pos;
        if (atoi(PQgetvalue(u, i, 13)) == 0) {
            if (!PQgetisnull(u, i, 18) && (!h->has_p95 || num(u, i, 18) > h->p95_ms)) {
                h->has_p95 = 1;
                h->p95_ms = num(u, i, 18);
            }
            if (!PQgetisnull(u, i, 19) && (!h->has_queue || num(u, i, 19) > h->queue_delay_ms)) {
                h->has_queue = 1;
                h->queue_delay_ms = num(u, i, 19);
            }
        }
        if (PQgetvalue(u, i, 14)[0] != 't')
            continue;
        reports += atol(PQgetvalue(u, i, 4));
        if (!PQgetisnull(u, i, 15) && (!has_useful || num(u, i, 15) > useful)) {
            useful = num(u, i, 15);
            has_useful = 1;
        }
        if (!has_first || num(u, i, 16) < first) {
            first = num(u, i, 16);
            has_first = 1;
        }
        if (!PQgetisnull(u, i, 1) && (h->brief_id == NULL || num(u, i, 17) > latest)) {
            h->brief_id = PQgetvalue(u, i, 1);
            latest = num(u, i, 17);
        }
    }
    h->has_usage = reports > 0;
    if (h->has_usage) {
        double idle = (double)at_us / 1e6 - (has_useful ? useful : first);
        h->idle_s = idle > 0 ? idle : 0;
    }
}

static void calc_free(struct rec_calc *k)
{
    for (int w = 0; w < W_COUNT; w++) {
        free(k->wc[w].ids);
        free(k->wc[w].costs);
        k->wc[w].ids = NULL;
        k->wc[w].costs = NULL;
    }
    for (int j = 0; k->docs && j < k->nb; j++)
        json_decref(k->docs[j]);
    free(k->docs);
    free(k->hosts);
    free(k->briefs);
    k->docs = NULL;
    k->hosts = NULL;
    k->briefs = NULL;
    clear(&k->a);
}

/* From the inputs read (k->a), applies the rules: appends to all and no_usage. Returns 0,
 * or -1 when out of memory. */
static int calc_run(struct rec_calc *k, json_t *all, json_t *no_usage)
{
    struct rec_arg *a = &k->a;
    int nh = k->nh = PQntuples(a->hosts), nb = k->nb = PQntuples(a->briefs);
    struct plan_rec_host *hosts = k->hosts = calloc((size_t)nh + 1, sizeof *hosts);
    struct plan_rec_brief *briefs = k->briefs = calloc((size_t)nb + 1, sizeof *briefs);
    json_t **docs = k->docs = calloc((size_t)nb + 1, sizeof *docs);
    struct window_costs *wc = k->wc;
    int ok = hosts && briefs && docs;
    for (int w = 0; ok && w < W_COUNT; w++)
        ok = window_costs(a->held, w, a->usage, &wc[w]) == 0;
    if (!ok)
        return -1;
    int upos = 0;
    for (int i = 0; i < nh; i++) {
        struct plan_rec_host *h = &hosts[i];
        const PGresult *R = a->hosts;
        h->id = str(R, i, 0);
        h->pool_id = str(R, i, 1);
        h->state = str(R, i, 2);
        h->accepted = PQgetvalue(R, i, 3)[0] == 't';
        h->active_job = PQgetvalue(R, i, 4)[0] == 't';
        plan_rec_default_thresholds(&h->th);
        opt_num(R, i, 5, &h->th.idle_stop_after_s);
        h->price_per_hour = num(R, i, 6);
        h->gpu = find_gpu(a->cat, PQgetvalue(R, i, 7));
        h->gpu_count = atol(PQgetvalue(R, i, 8));
        opt_num(R, i, 9, &h->th.scale_up_utilization);
        opt_num(R, i, 10, &h->th.scale_down_utilization);
        opt_num(R, i, 11, &h->th.failed_share);
        opt_num(R, i, 12, &h->th.cost_increase);
        lookback(a->usage, &upos, a->at_us, h);
        const struct plan_cost *c = find_cost(&wc[W_HOUR], h->id);
        if (c && c->has_utilization) {
            h->has_hour = 1;
            h->hour_busy_s = c->busy_hours * 3600;
            h->hour_held_s = c->held_hours * 3600;
        }
        c = find_cost(&wc[W_DAY], h->id);
        if (c) {
            h->has_share = c->has_share;
            h->failed_share = c->failed_retried_share;
            for (int kk = 0; kk < PLAN_UNIT_COUNT; kk++) {
                h->has_cpu[kk] = c->has_cost_per_unit[kk];
                h->cpu[kk] = c->cost_per_unit[kk];
            }
        }
        c = find_cost(&wc[W_PREV], h->id);
        for (int kk = 0; c && kk < PLAN_UNIT_COUNT; kk++) {
            h->has_prev_cpu[kk] = c->has_cost_per_unit[kk];
            h->prev_cpu[kk] = c->cost_per_unit[kk];
        }
    }
    struct plan_options opts;
    plan_default_options(&opts);
    for (int j = 0; j < nb; j++) {
        struct plan_rec_brief *b = &briefs[j];
        b->id = str(a->briefs, j, 0);
        docs[j] = json_loads(PQgetvalue(a->briefs, j, 1), 0, NULL);
        if (docs[j] == NULL)
            continue;
        brief_targets(docs[j], b);
        struct plan_brief pb;
        plan_brief_to_sizing(docs[j], &pb);
        plan_size(&pb, &opts, &b->sizing);
        b->precision = pb.precision;
        b->sized = 1;
    }
    return plan_recommend(hosts, (size_t)nh, briefs, (size_t)nb, &opts, all, no_usage);
}

enum db_status api_recommend_in_tx(struct db_conn *c, int64_t at_us, json_t *all, json_t *no_usage)
{
    struct rec_calc k;
    calc_setup(&k, at_us);
    enum db_status s = read_fn(c, &k.a);
    if (s >= 0 && calc_run(&k, all, no_usage) != 0)
        s = DB_HARD_ERROR;
    calc_free(&k);
    return s;
}

enum MHD_Result api_recommendations(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, NULL, rec_filters, 4, &q) != 0)
        return MHD_YES;
    int64_t at_us = util_now_us();
    if (q.values[3] != NULL)
        util_parse_rfc3339(q.values[3], &at_us);
    struct rec_calc k;
    calc_setup(&k, at_us);
    enum db_status s = db_run_tx(read_fn, &k.a);
    if (s < 0) {
        calc_free(&k);
        api_list_query_free(&q);
        return api_reply_db(r, s);
    }
    json_t *items = json_array(), *no_usage = json_array(), *all = json_array();
    enum MHD_Result ret;
    if (items == NULL || no_usage == NULL || all == NULL || calc_run(&k, all, no_usage) != 0) {
        json_decref(all);
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    size_t i;
    json_t *it;
    json_array_foreach(all, i, it) if (keep(it, &q, k.hosts, (size_t)k.nh))
        json_array_append(items, it);
    json_decref(all);
    json_t *nu = json_array();
    json_array_foreach(no_usage, i, it)
    {
        if (q.values[2] != NULL || (q.values[0] != NULL && strcmp(q.values[0], "stop") != 0))
            continue;
        if (q.values[1] && strcmp(json_string_value(json_object_get(it, "pool_id")), q.values[1]))
            continue;
        json_array_append(nu, it);
    }
    json_t *body = json_pack("{s:s,s:O,s:n,s:o}", "at", k.at, "items", items, "next_cursor",
                             "no_usage_data", nu);
    ret = api_reply_json(r, MHD_HTTP_OK, body, NULL);
out:
    json_decref(items);
    json_decref(no_usage);
    calc_free(&k);
    api_list_query_free(&q);
    return ret;
}
