/* gate_targeted.c — see gate_targeted.h. */
#include "provisioner/jobs/gate_targeted.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "provisioner/jobs/gate_eval.h"

/* Test name → gate check name. A check this build lacks (bandwidth before its check
 * lands) resolves to -1 and is recorded as skipped, naming it. */
static const struct {
    const char *test, *check;
} test_checks[] = {
    {"storage", "storage_throughput"},
    {"bandwidth", "bandwidth"}, /* i26-bandwidth's PROV_CHECK_BANDWIDTH, by its name */
    {"workload", "workload"},
};
#define NTESTS (int)(sizeof test_checks / sizeof test_checks[0])

int prov_targeted_parse(const char *tests_json, struct prov_targeted *t)
{
    memset(t, 0, sizeof *t);
    json_t *a = tests_json ? json_loads(tests_json, 0, NULL) : NULL;
    int rc = json_is_array(a) && json_array_size(a) >= 1 && json_array_size(a) <= PROV_TARGETED_MAX
                 ? 0
                 : -1;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (rc != 0)
            break;
        int k = 0;
        while (k < NTESTS &&
               !(json_string_value(v) && !strcmp(json_string_value(v), test_checks[k].test)))
            k++;
        if (k == NTESTS) {
            rc = -1;
            break;
        }
        t->test[t->n] = test_checks[k].test;
        t->check[t->n] = test_checks[k].check;
        t->id[t->n] = -1;
        for (int c = 0; c < PROV_CHECK__COUNT; c++)
            if (!strcmp(prov_check_names[c], test_checks[k].check))
                t->id[t->n] = c;
        t->n++;
    }
    json_decref(a);
    if (rc != 0)
        memset(t, 0, sizeof *t);
    return rc;
}

/* What each check's comparison reads in its values. */
struct cmp_keys {
    const char *check;
    const char *conditions[8]; /* must be equal for a like-for-like comparison */
    const char *values[6];     /* the measured figures compared */
    const char *pool[4];       /* the pool's expectation, as recorded */
};
static const struct cmp_keys keys[] = {
    {"storage_throughput",
     {"read_source", "read_path", "read_bytes", "read_tool", "direct", "write_bytes", NULL},
     {"read_mbps", "write_mbps", NULL},
     {"min_read_mbps", "min_write_mbps", NULL}},
    {"workload", {"metric", NULL}, {"value", NULL}, {"min", NULL}},
    {"bandwidth",
     {"tool", "gpus", NULL},
     {"allreduce_busbw_gbps", "allreduce_avg_busbw_gbps", "d2d_min_gbps", "d2d_median_gbps",
      "h2d_gbps", NULL},
     {"expected", NULL}},
};

static json_t *or_null(const json_t *v)
{
    return v ? json_deep_copy(v) : json_null();
}

/* Adds {condition, now, previous} to differing when they differ. */
static void differ(json_t *differing, const char *name, const json_t *now, const json_t *prev)
{
    int same = (now == NULL && prev == NULL) ||
               (now && prev &&
                (json_equal(now, prev) || (json_is_number(now) && json_is_number(prev) &&
                                           json_number_value(now) == json_number_value(prev))));
    if (!same)
        json_array_append_new(differing, json_pack("{s:s, s:o, s:o}", "condition", name, "now",
                                                   or_null(now), "previous", or_null(prev)));
}

/* The workload's figure against the median of the pool's baselines of the same workload. */
static json_t *against_baselines(const json_t *values, const json_t *pb)
{
    const json_t *now = json_object_get(values, "value");
    const json_t *ref = json_object_get(pb, "reference");
    const char *metric = json_string_value(json_object_get(values, "metric"));
    const char *bmetric = json_string_value(json_object_get(pb, "metric"));
    if (!json_is_number(now) || !json_is_number(ref) || !metric || !bmetric ||
        strcmp(metric, bmetric))
        return json_null();
    double a = json_number_value(now), b = json_number_value(ref);
    return json_pack("{s:O?, s:f, s:f, s:o, s:O?}", "matched", json_object_get(pb, "matched"),
                     "reference", b, "now", a, "delta_pct",
                     b != 0 ? json_real((a - b) / b * 100.0) : json_null(), "baselines",
                     json_object_get(pb, "baselines"));
}

json_t *prov_targeted_compare(const char *test, const char *check, const json_t *values,
                              const json_t *previous_all, const char *stack_id,
                              const json_t *pool_baselines)
{
    const struct cmp_keys *k = NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(keys[i].check, check))
            k = &keys[i];
    const json_t *prev = json_object_get(previous_all, check);
    const json_t *pv = json_object_get(prev, "values");
    json_t *out = json_pack("{s:s, s:s, s:s}", "test", test, "check", check, "against",
                            "the host's newest accepted gate that recorded this check");
    json_t *conditions = json_object(), *differing = json_array(), *vals = json_object(),
           *pool = json_object();
    if (out == NULL || conditions == NULL || differing == NULL || vals == NULL || pool == NULL) {
        json_decref(out), json_decref(conditions), json_decref(differing), json_decref(vals),
            json_decref(pool);
        return NULL;
    }
    json_object_set_new(out, "previous",
                        prev ? json_pack("{s:O?, s:O?, s:O?}", "gate_run_id",
                                         json_object_get(prev, "gate_run_id"), "finished_at",
                                         json_object_get(prev, "finished_at"), "stack_id",
                                         json_object_get(prev, "stack_id"))
                             : json_null());
    int have = json_is_object(values) && json_object_size(values) > 0 && json_is_object(pv);
    if (k != NULL && json_is_object(values)) {
        for (int i = 0; k->conditions[i]; i++) {
            const json_t *now = json_object_get(values, k->conditions[i]);
            if (now)
                json_object_set_new(conditions, k->conditions[i], json_deep_copy(now));
            if (have)
                differ(differing, k->conditions[i], now, json_object_get(pv, k->conditions[i]));
        }
        for (int i = 0; k->pool[i]; i++)
            if (json_object_get(values, k->pool[i]))
                json_object_set_new(pool, k->pool[i],
                                    json_deep_copy(json_object_get(values, k->pool[i])));
        for (int i = 0; k->values[i]; i++) {
            const json_t *now = json_object_get(values, k->values[i]);
            const json_t *then = json_object_get(pv, k->values[i]);
            if (!json_is_number(now))
                continue;
            double a = json_number_value(now),
                   b = json_is_number(then) ? json_number_value(then) : NAN;
            json_object_set_new(
                vals, k->values[i],
                json_pack("{s:f, s:o, s:o}", "now", a, "previous",
                          isfinite(b) ? json_real(b) : json_null(), "delta_pct",
                          isfinite(b) && b != 0 ? json_real((a - b) / b * 100.0) : json_null()));
        }
    }
    if (stack_id != NULL && !strcmp(check, "workload")) { /* the workload runs in the stack */
        json_object_set_new(conditions, "stack_id", json_string(stack_id));
        if (have)
            differ(differing, "stack_id", json_object_get(conditions, "stack_id"),
                   json_object_get(prev, "stack_id"));
    }
    size_t nd = json_array_size(differing);
    int comparable = have && nd <= 1;
    json_object_set_new(
        out, "changed",
        nd == 1 ? json_deep_copy(json_object_get(json_array_get(differing, 0), "condition"))
                : json_null());
    char summary[300];
    if (prev == NULL)
        snprintf(summary, sizeof summary,
                 "no accepted gate of this host recorded %s: nothing to compare with", check);
    else if (!have)
        snprintf(summary, sizeof summary, "%s has no values to compare (not measured now or then)",
                 check);
    else if (nd == 0)
        snprintf(summary, sizeof summary, "same conditions as the accepted gate: comparable");
    else if (nd == 1)
        snprintf(summary, sizeof summary,
                 "one condition changed (%s): comparable, the change is the parameter under test",
                 json_string_value(json_object_get(json_array_get(differing, 0), "condition")));
    else
        snprintf(summary, sizeof summary,
                 "%zu conditions differ from the accepted gate: not comparable", nd);
    json_object_set_new(out, "conditions", conditions);
    json_object_set_new(out, "differing", differing);
    json_object_set_new(out, "comparable", json_boolean(comparable));
    json_object_set_new(out, "values", vals);
    json_object_set_new(out, "pool", pool);
    json_object_set_new(out, "summary", json_string(summary));
    if (!strcmp(check, "workload"))
        json_object_set_new(out, "baselines", against_baselines(values, pool_baselines));
    return out;
}
