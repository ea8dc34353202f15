/* baseline.c — see baseline.h. */
#include "planner/baseline.h"

#include <stdlib.h>
#include <string.h>

int plan_bl_value_equal(enum baseline_cond c, const struct baseline_value *a,
                        const struct baseline_value *b)
{
    if (a->is_null || b->is_null)
        return a->is_null && b->is_null;
    if (baseline_cond_is_int(c))
        return a->i == b->i;
    return a->s != NULL && b->s != NULL && strcmp(a->s, b->s) == 0;
}

json_t *plan_bl_value_json(enum baseline_cond c, const struct baseline_value *v)
{
    if (v->is_null)
        return json_null();
    if (baseline_cond_is_int(c))
        return json_integer((json_int_t)v->i);
    return v->s ? json_string(v->s) : json_null();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double plan_baseline_median(double *values, size_t n)
{
    qsort(values, n, sizeof *values, cmp_double);
    if (n % 2 == 1)
        return values[n / 2];
    return (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

static int matches(const struct baseline *w, const struct baseline *b)
{
    for (int c = 0; c < BL__COUNT; c++)
        if (!plan_bl_value_equal((enum baseline_cond)c, &w->cond[c], &b->cond[c]))
            return 0;
    return 1;
}

/* Adds v to seen unless an equal value is there (or the list is full). */
static void add_seen(json_t *seen, json_t *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(seen, i, x)
    {
        if (json_equal(x, v)) {
            json_decref(v);
            return;
        }
    }
    if (json_array_size(seen) < PLAN_BASELINE_MAX_SEEN)
        json_array_append(seen, v);
    json_decref(v);
}

/* Per condition, the values of the candidates that differ from the wanted one. */
static json_t *explain(const struct baseline *w, const struct baseline *cand, size_t ncand)
{
    json_t *out = json_object();
    if (out == NULL)
        return NULL;
    for (int c = 0; c < BL__COUNT; c++) {
        enum baseline_cond k = (enum baseline_cond)c;
        json_t *seen = json_array();
        if (seen == NULL) {
            json_decref(out);
            return NULL;
        }
        for (size_t i = 0; i < ncand; i++)
            if (!plan_bl_value_equal(k, &w->cond[c], &cand[i].cond[c]))
                add_seen(seen, plan_bl_value_json(k, &cand[i].cond[c]));
        if (json_array_size(seen) == 0) {
            json_decref(seen);
            continue;
        }
        json_object_set_new(
            out, baseline_cond_names[c],
            json_pack("{s:o, s:o}", "wanted", plan_bl_value_json(k, &w->cond[c]), "seen", seen));
    }
    return out;
}

int plan_baseline_match(const struct baseline *wanted, const struct baseline *cand, size_t ncand,
                        struct plan_bl_result *out)
{
    memset(out, 0, sizeof *out);
    double values[PLAN_BASELINE_MAX_MATCHED];
    for (size_t i = 0; i < ncand && out->nmatched < PLAN_BASELINE_MAX_MATCHED; i++)
        if (matches(wanted, &cand[i])) {
            values[out->nmatched] = cand[i].value;
            out->matched[out->nmatched++] = i;
        }
    if (out->nmatched > 0) {
        out->reference = plan_baseline_median(values, out->nmatched);
        return 0;
    }
    out->unmatched = explain(wanted, cand, ncand);
    return out->unmatched ? 0 : -1;
}

json_t *plan_baseline_document(const struct baseline *wanted, const struct baseline *cand,
                               size_t ncand, const struct plan_bl_result *res)
{
    const struct baseline_value *m = &wanted->cond[BL_METRIC];
    json_t *doc = json_pack("{s:o, s:f, s:I, s:I}", "metric", plan_bl_value_json(BL_METRIC, m),
                            "value", wanted->value, "matched", (json_int_t)res->nmatched,
                            "candidates", (json_int_t)ncand);
    if (doc == NULL)
        return NULL;
    if (res->nmatched == 0) {
        if (res->unmatched != NULL)
            json_object_set(doc, "unmatched", res->unmatched);
        else
            json_object_set_new(doc, "unmatched", json_object());
        return doc;
    }
    json_t *ids = json_array();
    for (size_t i = 0; i < res->nmatched; i++)
        json_array_append_new(ids, json_string(cand[res->matched[i]].id));
    json_object_set_new(doc, "baselines", ids);
    json_object_set_new(doc, "reference", json_real(res->reference));
    json_object_set_new(
        doc, "ratio", res->reference > 0 ? json_real(wanted->value / res->reference) : json_null());
    return doc;
}
