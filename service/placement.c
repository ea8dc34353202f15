/* placement.c — see placement.h. */
#include "service/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/costs.h"
#include "db/placement.h"
#include "planner/placement.h"
#include "planner/recommend_place.h"
#include "planner/sizing.h"
#include "service/catalog.h"

static const struct gpu_model *find_gpu(const struct svc_catalog *cat, const char *key)
{
    for (size_t i = 0; cat && key && i < cat->n; i++)
        if (strcmp(cat->gpus[i].key, key) == 0)
            return &cat->gpus[i];
    return NULL;
}

/* The brief's settings and targets. */
static void brief_facts(const json_t *brief, struct plan_place_brief *b)
{
    memset(b, 0, sizeof *b);
    b->unit = -1;
    const json_t *m = json_object_get(brief, "rightsize_margin_pct");
    const json_t *d = json_object_get(brief, "rightsize_min_days");
    b->margin_pct = m ? json_number_value(m) : PLAN_PLACE_DEFAULT_MARGIN;
    b->min_days = d ? (long)json_integer_value(d) : PLAN_PLACE_DEFAULT_MIN_DAYS;
    b->revision = json_string_value(json_object_get(json_object_get(brief, "model"), "revision"));
    b->concurrency =
        (long)json_integer_value(json_object_get(json_object_get(brief, "load"), "concurrency"));
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(brief, "targets"), i, t)
    {
        const char *metric = json_string_value(json_object_get(t, "metric"));
        double v = json_number_value(json_object_get(t, "value"));
        if (metric &&
            (strcmp(metric, "time_to_first_token_ms") == 0 ||
             strcmp(metric, "tail_latency_ms") == 0) &&
            (!b->has_latency || v < b->latency_ms)) {
            b->has_latency = 1;
            b->latency_ms = v;
        }
    }
    const json_t *av = json_object_get(json_object_get(brief, "availability"), "target_pct");
    b->has_avail = av != NULL;
    b->avail_pct = json_number_value(av);
}

/* Each pool: its sizing fit and the brief's slice of its hosts. */
static void pools_in(const json_t *brief, const struct svc_catalog *cat,
                     const struct db_place_input *pin, const struct db_cost_input *cin,
                     const char *brief_id, struct plan_place_pool *pools)
{
    struct plan_brief pb;
    struct plan_sizing s;
    struct plan_options o;
    plan_default_options(&o);
    plan_brief_to_sizing(brief, &pb);
    plan_size(&pb, &o, &s);
    for (size_t i = 0; i < pin->npools; i++) {
        const struct db_place_pool *d = &pin->pools[i];
        struct plan_place_pool *p = &pools[i];
        memset(p, 0, sizeof *p);
        p->id = d->id;
        p->name = d->name;
        p->gpu_model = d->gpu_model;
        p->gpu_count = d->gpu_count;
        p->prices = d->prices;
        p->days = d->days;
        const struct gpu_model *g = find_gpu(cat, d->gpu_model);
        if (g && s.weights.status == PLAN_ESTIMATED) {
            struct plan_gpu_fit fit;
            plan_fit(&s, &o, g, pb.precision, &fit);
            p->gpus_needed = fit.gpus_needed;
            p->fits =
                fit.precision_supported && fit.gpus_needed >= 1 && fit.gpus_needed <= d->gpu_count;
        }
    }
    size_t ri = 0;
    for (size_t h = 0; h < cin->nhosts; h++) {
        while (ri < cin->nrows && cin->rows[ri].host < h)
            ri++;
        size_t first = ri;
        while (ri < cin->nrows && cin->rows[ri].host == h)
            ri++;
        if (first == ri)
            continue;
        for (size_t i = 0; i < pin->npools; i++)
            if (strcmp(pin->pools[i].id, cin->hosts[h].pool_id) == 0)
                plan_place_add_host(&pools[i].acc, &cin->hosts[h], cin->rows, first, ri, brief_id);
    }
}

/* The brief's main unit, its completed units and its report span over every pool. */
static void demand_of(const struct plan_place_pool *pools, const struct db_place_input *pin,
                      struct plan_place_brief *b)
{
    double best = -1, first = 0, last = 0;
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        double sum = 0;
        int any = 0;
        for (size_t i = 0; i < pin->npools; i++) {
            sum += pools[i].acc.completed[k];
            any |= pools[i].acc.has_unit[k];
        }
        if (any && sum > best) {
            best = sum;
            b->unit = k;
            b->completed = sum;
        }
    }
    for (size_t i = 0; i < pin->npools; i++) {
        const struct db_place_pool *d = &pin->pools[i];
        if (d->days == 0)
            continue;
        if (first == 0 || d->first_start < first)
            first = d->first_start;
        if (d->last_end > last)
            last = d->last_end;
    }
    b->span_hours = last > first ? (last - first) / 3600 : 0;
}

struct place_work {
    struct db_place_input pin;
    struct db_cost_input cin;
    struct plan_place_pool *pools;
    struct plan_place_baseline *bl;
    struct plan_place_row *rows;
    size_t nrows;
    struct svc_catalog *cat;
};

static void work_free(struct place_work *w)
{
    db_place_free(&w->pin);
    db_cost_input_free(&w->cin);
    plan_place_rows_free(w->rows, w->nrows);
    free(w->pools);
    free(w->bl);
    svc_catalog_release(w->cat);
}

static json_t *document(const struct place_work *w, const struct plan_place_brief *b,
                        const json_t *brief, const char *from, const char *to)
{
    const char *id = json_string_value(json_object_get(brief, "id"));
    int oom = 0;
    json_t *items = json_array();
    for (size_t i = 0; items && i < w->nrows; i++)
        if (json_array_append_new(items, plan_place_row_json(&w->rows[i], b->unit)) != 0)
            oom = 1;
    json_t *rec = plan_rec_rightsize(b, w->rows, w->nrows, id,
                                     json_string_value(json_object_get(brief, "name")), &oom);
    if (rec)
        json_object_set(rec, "project", json_object_get(brief, "project"));
    json_t *doc = json_pack(
        "{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:f,s:I}", "brief_id", id, "from", from, "to", to, "unit",
        b->unit >= 0 ? json_string(usage_unit_names[b->unit]) : json_null(), "demand_per_hour",
        b->span_hours > 0 && b->unit >= 0 ? json_real(b->completed / b->span_hours) : json_null(),
        "items", items ? items : json_null(), "recommendation", rec ? rec : json_null(),
        "rightsize_margin_pct", b->margin_pct, "rightsize_min_days", (json_int_t)b->min_days);
    if (oom || items == NULL) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *svc_placement(struct db_conn *c, const json_t *brief, const char *from, const char *to,
                      enum db_status *status)
{
    return svc_placement_with(c, brief, from, to, NULL, status);
}

json_t *svc_placement_with(struct db_conn *c, const json_t *brief, const char *from, const char *to,
                           struct db_cost_input *cost_out, enum db_status *status)
{
    struct place_work w;
    struct plan_place_brief b;
    memset(&w, 0, sizeof w);
    const char *project =
        json_string_value(json_object_get(json_object_get(brief, "project"), "id"));
    const char *id = json_string_value(json_object_get(brief, "id"));
    *status = DB_HARD_ERROR;
    json_t *doc = NULL;
    if (project == NULL || id == NULL)
        goto out;
    /* The cost input of the hosts that ran the brief only: the others add nothing to it
     * (plan_place_add_host), and each of these brings all its reports (its idle time).
     * Its reports are read on a second connection while this one reads the pools (the
     * two largest reads side by side), or after them when no connection is free. */
    struct db_conn *side = db_try_acquire();
    if (side != NULL && db_cost_send_brief(side, from, to, project, id) < 0) {
        db_release(side);
        side = NULL;
    }
    enum db_status ps = db_place_read(c, project, id, from, to, &w.pin);
    *status =
        db_cost_read_brief(c, side, from, to, project, id, ps < 0 ? NULL : w.pin.hosts, &w.cin);
    db_release(side);
    if (ps < 0)
        *status = ps;
    if (*status < 0 || (w.cat = svc_catalog_get(c, status)) == NULL)
        goto out;
    brief_facts(brief, &b);
    w.pools = calloc(w.pin.npools + 1, sizeof *w.pools);
    if (w.pools == NULL)
        goto oom;
    pools_in(brief, w.cat, &w.pin, &w.cin, id, w.pools);
    demand_of(w.pools, &w.pin, &b);
    if (b.unit >= 0) {
        char metric[64];
        snprintf(metric, sizeof metric, "%s_per_second", usage_unit_names[b.unit]);
        if ((*status = db_place_baselines(c, project, metric, &w.pin)) < 0)
            goto out;
    }
    w.bl = calloc(w.pin.nbaselines + 1, sizeof *w.bl);
    if (w.bl == NULL)
        goto oom;
    for (size_t i = 0; i < w.pin.nbaselines; i++) {
        const struct db_place_baseline *d = &w.pin.baselines[i];
        w.bl[i] = (struct plan_place_baseline){d->gpu_model, d->model_revision, d->gpu_count,
                                               d->concurrency, d->value};
    }
    if (plan_place_rows(&b, w.pools, w.pin.npools, w.bl, w.pin.nbaselines,
                        json_object_get(brief, "alternatives"), &w.rows, &w.nrows) != 0)
        goto oom;
    doc = document(&w, &b, brief, from, to);
    *status = doc ? DB_ONE_RESULT : DB_HARD_ERROR;
    if (doc && cost_out) { /* handed over: work_free frees a zeroed one */
        *cost_out = w.cin;
        memset(&w.cin, 0, sizeof w.cin);
    }
    goto out;
oom:
    *status = DB_HARD_ERROR;
out:
    work_free(&w);
    return doc;
}
