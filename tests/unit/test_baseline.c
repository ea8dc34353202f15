/* test_baseline.c — the matching of baselines (planner/baseline.h): each condition, null
 * handling, the median, the cap of 20, the explanation of what differed, the document. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "planner/baseline.h"
#include "unit.h"

static struct baseline_value str(const char *s)
{
    return (struct baseline_value){.is_null = s == NULL, .s = s};
}

static struct baseline_value num(long i)
{
    return (struct baseline_value){.i = i};
}

static const struct baseline_value null_value = {.is_null = 1};

/* A gate baseline measured with a full set of conditions. */
static struct baseline base(const char *id, double value)
{
    struct baseline b = {.id = id, .value = value};
    b.cond[BL_FRAMEWORK] = str("vllm");
    b.cond[BL_MODEL_REVISION] = str("0e9e39f");
    b.cond[BL_GPU_MODEL] = str("NVIDIA H100 80GB HBM3");
    b.cond[BL_GPU_COUNT] = num(8);
    b.cond[BL_WORKLOAD_HASH] = str("sha256:aa");
    b.cond[BL_METRIC] = str("tokens_per_second");
    b.cond[BL_INPUT] = str("sharegpt-1k");
    b.cond[BL_CONCURRENCY] = num(16);
    b.cond[BL_CACHE] = str("warm");
    return b;
}

/* A value that differs from base()'s in condition c. */
static struct baseline_value other(enum baseline_cond c)
{
    if (baseline_cond_is_int(c))
        return num(c == BL_GPU_COUNT ? 4 : 32);
    return str(c == BL_CACHE ? "cold" : "something-else");
}

static void test_all_match(void)
{
    struct baseline w = base("new", 100), c[2] = {base("b1", 90), base("b2", 110)};
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 2, &res) == 0);
    CHECK(res.nmatched == 2 && res.matched[0] == 0 && res.matched[1] == 1);
    CHECK(res.reference == 100.0);
    CHECK(res.unmatched == NULL);
}

/* Every condition, one at a time: a candidate that differs in it alone does not match,
 * and the explanation names exactly that condition, with the wanted and the seen value. */
static void test_each_condition(void)
{
    for (int k = 0; k < BL__COUNT; k++) {
        struct baseline w = base("new", 100), c = base("b1", 90);
        c.cond[k] = other((enum baseline_cond)k);
        struct plan_bl_result res;
        CHECK(plan_baseline_match(&w, &c, 1, &res) == 0);
        CHECK(res.nmatched == 0);
        CHECK(res.unmatched != NULL && json_object_size(res.unmatched) == 1);
        json_t *e = json_object_get(res.unmatched, baseline_cond_names[k]);
        CHECK(e != NULL);
        json_t *want = plan_bl_value_json((enum baseline_cond)k, &w.cond[k]);
        json_t *seen = plan_bl_value_json((enum baseline_cond)k, &c.cond[k]);
        int ok = json_equal(json_object_get(e, "wanted"), want) &&
                 json_array_size(json_object_get(e, "seen")) == 1 &&
                 json_equal(json_array_get(json_object_get(e, "seen"), 0), seen);
        json_decref(want);
        json_decref(seen);
        json_decref(res.unmatched);
        CHECK(ok);
    }
}

/* The stack's own fields are not conditions: they are not even in the struct. The names
 * of the conditions are the table's columns. */
static void test_condition_names(void)
{
    const char *want[] = {"framework", "model_revision", "gpu_model",
                          "gpu_count", "workload_hash",  "metric",
                          "input",     "concurrency",    "cache"};
    CHECK(BL__COUNT == sizeof want / sizeof want[0]);
    for (int k = 0; k < BL__COUNT; k++)
        CHECK_STR(baseline_cond_names[k], want[k]);
    CHECK(baseline_cond_is_int(BL_GPU_COUNT) && baseline_cond_is_int(BL_CONCURRENCY));
    CHECK(!baseline_cond_is_int(BL_CACHE) && !baseline_cond_is_int(BL_METRIC));
}

/* null equals only null, for text and integer conditions alike. */
static void test_null(void)
{
    for (int k = 0; k < BL__COUNT; k++) {
        enum baseline_cond c = (enum baseline_cond)k;
        struct baseline_value v = base("x", 0).cond[k];
        CHECK(plan_bl_value_equal(c, &null_value, &null_value));
        CHECK(!plan_bl_value_equal(c, &null_value, &v));
        CHECK(!plan_bl_value_equal(c, &v, &null_value));
        CHECK(plan_bl_value_equal(c, &v, &v));
    }
    /* an integer condition of 0 is not null */
    struct baseline_value zero = num(0);
    CHECK(!plan_bl_value_equal(BL_GPU_COUNT, &zero, &null_value));
    /* undeclared input, concurrency and cache match only undeclared ones */
    struct baseline w = base("new", 100), c[2] = {base("b1", 80), base("b2", 90)};
    w.cond[BL_INPUT] = w.cond[BL_CONCURRENCY] = w.cond[BL_CACHE] = null_value;
    c[1].cond[BL_INPUT] = c[1].cond[BL_CONCURRENCY] = c[1].cond[BL_CACHE] = null_value;
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 2, &res) == 0);
    CHECK(res.nmatched == 1 && res.matched[0] == 1 && res.reference == 90.0);
    /* the other way round: a wanted value never matches a null */
    struct baseline w2 = base("new", 100), c2 = base("b1", 80);
    c2.cond[BL_MODEL_REVISION] = null_value;
    CHECK(plan_baseline_match(&w2, &c2, 1, &res) == 0 && res.nmatched == 0);
    json_t *e = json_object_get(res.unmatched, "model_revision");
    int ok = e != NULL && json_is_string(json_object_get(e, "wanted")) &&
             json_is_null(json_array_get(json_object_get(e, "seen"), 0));
    json_decref(res.unmatched);
    CHECK(ok);
}

static void test_median(void)
{
    double one[] = {5};
    CHECK(plan_baseline_median(one, 1) == 5);
    double odd[] = {9, 1, 5};
    CHECK(plan_baseline_median(odd, 3) == 5);
    double even[] = {10, 1, 4, 2};
    CHECK(plan_baseline_median(even, 4) == 3); /* (2 + 4) / 2 */
    double two[] = {100, 50};
    CHECK(plan_baseline_median(two, 2) == 75);
    /* through the matching: odd and even counts of matching baselines */
    struct baseline w = base("new", 100),
                    c[4] = {base("a", 10), base("b", 30), base("c", 20), base("d", 1000)};
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 3, &res) == 0 && res.nmatched == 3 && res.reference == 20);
    CHECK(plan_baseline_match(&w, c, 4, &res) == 0 && res.nmatched == 4 && res.reference == 25);
}

/* At most 20 matching baselines are used: the newest (the first given); older ones, and
 * those that do not match, are not counted. */
static void test_cap(void)
{
    struct baseline c[30], w = base("new", 100);
    char ids[30][16];
    for (int i = 0; i < 30; i++) {
        snprintf(ids[i], sizeof ids[i], "b%d", i);
        c[i] = base(ids[i], i < 20 ? 50.0 : 1000.0);
    }
    c[3].cond[BL_CACHE] = str("cold"); /* not a match: the 21st match (index 20) is taken */
    c[3].value = 5000;
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 30, &res) == 0);
    CHECK(res.nmatched == PLAN_BASELINE_MAX_MATCHED);
    CHECK(res.matched[0] == 0 && res.matched[3] == 4 && res.matched[19] == 20);
    for (size_t i = 0; i < res.nmatched; i++)
        CHECK(res.matched[i] != 3);
    CHECK(res.reference == 50.0); /* 19 of 50 and one of 1000 */
}

/* The explanation lists each differing value once, never the wanted one, and only the
 * conditions that differed; no candidates at all: an empty explanation. */
static void test_explanation(void)
{
    struct baseline w = base("new", 100),
                    c[4] = {base("a", 1), base("b", 2), base("c", 3), base("d", 4)};
    c[0].cond[BL_CACHE] = str("cold");
    c[1].cond[BL_CACHE] = str("cold");
    c[2].cond[BL_CACHE] = null_value;
    c[3].cond[BL_GPU_COUNT] = num(4);
    c[3].cond[BL_CACHE] = str("cold");
    c[2].cond[BL_GPU_COUNT] = num(2);
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 4, &res) == 0 && res.nmatched == 0);
    char *text = json_dumps(res.unmatched, JSON_SORT_KEYS | JSON_COMPACT);
    int ok =
        text != NULL && strcmp(text, "{\"cache\":{\"seen\":[\"cold\",null],\"wanted\":"
                                     "\"warm\"},\"gpu_count\":{\"seen\":[2,4],\"wanted\":8}}") == 0;
    free(text);
    json_decref(res.unmatched);
    CHECK(ok);
    CHECK(plan_baseline_match(&w, NULL, 0, &res) == 0 && res.nmatched == 0);
    ok = json_is_object(res.unmatched) && json_object_size(res.unmatched) == 0;
    json_decref(res.unmatched);
    CHECK(ok);
    /* the list of seen values is bounded */
    struct baseline many[15];
    char ids[15][24];
    for (int i = 0; i < 15; i++) {
        many[i] = base("x", 1);
        snprintf(ids[i], sizeof ids[i], "input-%d", i);
        many[i].cond[BL_INPUT] = str(ids[i]);
    }
    CHECK(plan_baseline_match(&w, many, 15, &res) == 0 && res.nmatched == 0);
    ok = json_array_size(json_object_get(json_object_get(res.unmatched, "input"), "seen")) ==
         PLAN_BASELINE_MAX_SEEN;
    json_decref(res.unmatched);
    CHECK(ok);
}

/* The comparison document, matched and unmatched. */
static void test_document(void)
{
    struct baseline w = base("new", 90), c[3] = {base("a", 100), base("b", 80), base("c", 1)};
    c[2].cond[BL_METRIC] = str("requests_per_second");
    struct plan_bl_result res;
    CHECK(plan_baseline_match(&w, c, 3, &res) == 0 && res.nmatched == 2);
    json_t *d = plan_baseline_document(&w, c, 3, &res);
    CHECK(d != NULL);
    int ok = !strcmp(json_string_value(json_object_get(d, "metric")), "tokens_per_second") &&
             json_real_value(json_object_get(d, "value")) == 90 &&
             json_real_value(json_object_get(d, "reference")) == 90 &&
             fabs(json_real_value(json_object_get(d, "ratio")) - 1.0) < 1e-12 &&
             json_integer_value(json_object_get(d, "matched")) == 2 &&
             json_integer_value(json_object_get(d, "candidates")) == 3 &&
             json_array_size(json_object_get(d, "baselines")) == 2 &&
             !strcmp(json_string_value(json_array_get(json_object_get(d, "baselines"), 1)), "b") &&
             json_object_get(d, "unmatched") == NULL;
    json_decref(d);
    CHECK(ok);
    /* a reference of 0: no ratio */
    struct baseline z = base("z", 0);
    CHECK(plan_baseline_match(&w, &z, 1, &res) == 0 && res.nmatched == 1 && res.reference == 0);
    d = plan_baseline_document(&w, &z, 1, &res);
    ok = d != NULL && json_is_null(json_object_get(d, "ratio"));
    json_decref(d);
    CHECK(ok);
    /* unmatched */
    CHECK(plan_baseline_match(&w, &c[2], 1, &res) == 0 && res.nmatched == 0);
    d = plan_baseline_document(&w, &c[2], 1, &res);
    json_decref(res.unmatched);
    ok = d != NULL && json_integer_value(json_object_get(d, "matched")) == 0 &&
         json_object_get(d, "reference") == NULL && json_object_get(d, "baselines") == NULL &&
         json_object_get(json_object_get(d, "unmatched"), "metric") != NULL;
    json_decref(d);
    CHECK(ok);
}

UNIT_SUITE(baseline_tests) = {
    {"baseline: every condition equal matches", test_all_match},
    {"baseline: each condition alone makes a mismatch, explained", test_each_condition},
    {"baseline: the conditions' names", test_condition_names},
    {"baseline: null equals only null", test_null},
    {"baseline: median of odd and even counts", test_median},
    {"baseline: at most 20 newest matching", test_cap},
    {"baseline: the explanation of what differed", test_explanation},
    {"baseline: the comparison document", test_document},
    UNIT_END,
};
