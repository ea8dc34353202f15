/* test_recommend_retry.c — the cost of failed and retried work by class
 * (plan_cost_failures), the retry budget rule (planner/recommend_retry.h) and the repeated
 * loads rule (planner/recommend_loads.h), each figure computed by hand in the comments. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "planner/costs.h"
#include "planner/recommend_loads.h"
#include "planner/recommend_retry.h"
#include "tests/unit/unit.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)
#define HA         "00000000-0000-4000-8000-00000000000a"
#define PA         "00000000-0000-4000-8000-0000000000a0"
#define BA         "00000000-0000-4000-8000-0000000000b0"

/* Two hosts of a pool at $1.37/h for an hour: A 900 completed, 40 failed, 60 retried,
 * failures {oom: 30, hardware: 55}; B 955 completed, 45 failed, none classified. */
static void acc_example(struct plan_cost_acc *acc)
{
    struct usage_prices p = {1.37, 0, 0, 0};
    struct plan_usage a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.held_seconds = b.held_seconds = 3600;
    a.reports = b.reports = 1;
    a.completed[0] = 900;
    a.failed[0] = 40;
    a.retried[0] = 60;
    a.has_unit[0] = b.has_unit[0] = 1;
    a.failures.units[USAGE_FAIL_OOM] = 30;
    a.failures.units[USAGE_FAIL_HARDWARE] = 55;
    a.failures.reports = 1;
    a.failures.of_units = 100;
    b.completed[0] = 955;
    b.failed[0] = 45;
    memset(acc, 0, sizeof *acc);
    plan_cost_add(acc, &p, &a);
    plan_cost_add(acc, &p, &b);
}

static void cost_by_class(void)
{
    struct plan_cost_acc acc;
    struct plan_cost c;
    struct plan_cost_failures f;
    acc_example(&acc);
    plan_cost_finish(&acc, &c);
    plan_cost_failures(&acc, &c, &f);
    /* $2.74 over N = 2,000 units; 145 failed or retried: $0.19865 → $0.20 */
    CHECK(NEAR(c.total, 2.74));
    CHECK(NEAR(c.failed_retried_amount, 0.20));
    CHECK(f.reports == 1 && f.of_reports == 2);
    CHECK(NEAR(f.units, 100) && NEAR(f.of_units, 145) && NEAR(f.classified, 85));
    CHECK(f.has_split && f.has_share);
    /* oom 2.74 × 30 / 2,000 = 0.0411 → 0.04; hardware 0.07535 → 0.08; rest 60 → 0.0822 → 0.08 */
    CHECK(NEAR(f.cost[USAGE_FAIL_OOM], 0.04));
    CHECK(NEAR(f.cost[USAGE_FAIL_HARDWARE], 0.08));
    CHECK(NEAR(f.cost[USAGE_FAIL_TIMEOUT], 0));
    CHECK(NEAR(f.not_broken_down, 0.08));
    CHECK(NEAR(f.covered_share, 0.5862)); /* 85 / 145 */
    CHECK(NEAR(f.share[USAGE_FAIL_HARDWARE], 0.6471) && NEAR(f.share[USAGE_FAIL_OOM], 0.3529));
    CHECK(f.dominant == USAGE_FAIL_HARDWARE);
}

static void cost_by_class_edges(void)
{
    struct plan_cost_acc acc;
    struct plan_cost c;
    struct plan_cost_failures f;
    acc_example(&acc);
    memset(&acc.failures, 0, sizeof acc.failures); /* nobody classified */
    plan_cost_finish(&acc, &c);
    plan_cost_failures(&acc, &c, &f);
    CHECK(f.has_split && !f.has_share && f.dominant == -1);
    CHECK(NEAR(f.not_broken_down, 0.20)); /* all of failed_retried, nothing invented */
    CHECK(NEAR(f.cost[USAGE_FAIL_OTHER], 0) && NEAR(f.covered_share, 0));
    /* no failed or retried unit: nothing to split */
    memset(&acc, 0, sizeof acc);
    acc.reports = 1;
    acc.completed[0] = 10;
    acc.has_unit[0] = 1;
    plan_cost_finish(&acc, &c);
    plan_cost_failures(&acc, &c, &f);
    CHECK(!f.has_split && NEAR(f.not_broken_down, 0));
}

/* A pool at $48 over the day, $6 failed and retried (12.5%), hardware dominant. */
static struct plan_retry_group group(double budget)
{
    struct plan_retry_group g;
    memset(&g, 0, sizeof g);
    g.id = PA;
    g.budget_pct = budget;
    g.cost.total = 48;
    g.cost.failed_retried_amount = 6;
    g.cost.has_share = 1;
    g.f.of_units = 250;
    g.f.of_reports = 2;
    g.f.reports = 2;
    g.f.counts[USAGE_FAIL_HARDWARE] = 160;
    g.f.counts[USAGE_FAIL_OOM] = 20;
    g.f.classified = 180;
    g.f.dominant = USAGE_FAIL_HARDWARE;
    g.hw_units = 160;
    g.hw_host_units = 150;
    g.hw_host_id = HA;
    g.hw_host_pool_id = PA;
    return g;
}

static void retry_budget_rule(void)
{
    double spent;
    struct plan_retry_group g = group(5);
    CHECK(plan_retry_over(&g, &spent) && NEAR(spent, 12.5));
    json_t *items = json_array();
    CHECK(plan_rec_retry(&g, 1, items) == 0 && json_array_size(items) == 1);
    json_t *r = json_array_get(items, 0);
    CHECK_STR(json_string_value(json_object_get(r, "rule")), "retry_budget");
    CHECK_STR(json_string_value(json_object_get(r, "action")), "investigate");
    json_t *t = json_object_get(r, "target");
    CHECK_STR(json_string_value(json_array_get(json_object_get(t, "host_ids"), 0)), HA);
    json_t *e = json_object_get(r, "evidence");
    CHECK_STR(json_string_value(json_object_get(e, "dominant_class")), "hardware");
    CHECK(NEAR(json_real_value(json_object_get(e, "dominant_share_of_failure_cost")), 0.64));
    CHECK_STR(
        json_string_value(json_object_get(json_object_get(e, "hardware_host"), "health_history")),
        "/v1/hosts/" HA "/health");
    json_decref(items);

    /* exactly at the budget: within it */
    g = group(12.5);
    items = json_array();
    CHECK(!plan_retry_over(&g, &spent) && plan_rec_retry(&g, 1, items) == 0);
    CHECK(json_array_size(items) == 0);
    json_decref(items);

    /* hardware spread over hosts (the top one has 80 of 160, not more than half): the pool */
    g = group(5);
    g.hw_host_units = 80;
    items = json_array();
    CHECK(plan_rec_retry(&g, 1, items) == 0 && json_array_size(items) == 1);
    t = json_object_get(json_array_get(items, 0), "target");
    CHECK(json_array_size(json_object_get(t, "host_ids")) == 0);
    CHECK_STR(json_string_value(json_object_get(t, "pool_id")), PA);
    CHECK(json_object_get(json_object_get(json_array_get(items, 0), "evidence"), "hardware_host") ==
          NULL);
    json_decref(items);

    /* nothing classified: no class is invented, the reason asks for failures */
    g = group(5);
    g.f.dominant = -1;
    g.f.classified = 0;
    memset(g.f.counts, 0, sizeof g.f.counts);
    items = json_array();
    CHECK(plan_rec_retry(&g, 1, items) == 0 && json_array_size(items) == 1);
    r = json_array_get(items, 0);
    CHECK(json_is_null(json_object_get(json_object_get(r, "evidence"), "dominant_class")));
    CHECK(strstr(json_string_value(json_object_get(r, "reason")), "no report classified") != NULL);
    json_decref(items);

    /* no spend, or no failed unit: never */
    g = group(5);
    g.cost.total = 0;
    CHECK(!plan_retry_over(&g, &spent));
    g = group(5);
    g.f.of_units = 0;
    CHECK(!plan_retry_over(&g, &spent));
}

/* A host's work for a brief: load time in `buckets` buckets, 5 GB moved in each, phases
 * load 900 s and compute 2,700 s per bucket. */
static struct plan_rec_load load(long buckets)
{
    struct plan_rec_load l;
    memset(&l, 0, sizeof l);
    l.host_id = HA;
    l.pool_id = PA;
    l.brief_id = BA;
    l.work.id = HA;
    l.work.load_buckets = buckets;
    l.work.load_bytes = 5e9 * (double)buckets;
    l.work.half[0].phase_s[PLAN_PHASE_LOAD] = 900.0 * (double)buckets;
    l.egress_per_gb = 0.09;
    l.has_host_cost = 1;
    l.host_cost = 49.35;
    l.host_phase_s = 3600.0 * (double)buckets;
    l.host_busy_s = l.host_phase_busy_s = 3600.0 * (double)buckets;
    return l;
}

static void repeated_loads_rule(void)
{
    struct plan_rec_load l = load(3);
    json_t *items = json_array();
    CHECK(plan_rec_loads(&l, 1, items) == 0 && json_array_size(items) == 1);
    json_t *r = json_array_get(items, 0);
    CHECK_STR(json_string_value(json_object_get(r, "rule")), "repeated_loads");
    json_t *e = json_object_get(r, "evidence");
    /* 15 GB × $0.09 = $1.35; 49.35 × 2,700 / 10,800 × 1 = 12.3375 → $12.34; $13.69 */
    CHECK(NEAR(json_real_value(json_object_get(e, "data_movement_cost")), 1.35));
    CHECK(NEAR(json_real_value(json_object_get(e, "load_phase_cost")), 12.34));
    CHECK(NEAR(json_real_value(json_object_get(e, "cost")), 13.69));
    CHECK(json_integer_value(json_object_get(e, "load_buckets")) == 3);
    json_decref(items);

    /* two buckets: not repeated (the bottleneck rule, reused) */
    l = load(2);
    items = json_array();
    CHECK(plan_rec_loads(&l, 1, items) == 0 && json_array_size(items) == 0);
    json_decref(items);

    /* under 1 GB per bucket: not repeated */
    l = load(4);
    l.work.load_bytes = 3.9e9;
    items = json_array();
    CHECK(plan_rec_loads(&l, 1, items) == 0 && json_array_size(items) == 0);
    json_decref(items);

    /* no egress price and no phases coverage: the costs are unknown, not 0 */
    l = load(3);
    l.egress_per_gb = 0;
    l.host_phase_s = 0;
    items = json_array();
    CHECK(plan_rec_loads(&l, 1, items) == 0 && json_array_size(items) == 1);
    e = json_object_get(json_array_get(items, 0), "evidence");
    CHECK(json_is_null(json_object_get(e, "data_movement_cost")));
    CHECK(json_is_null(json_object_get(e, "load_phase_cost")));
    CHECK(json_is_null(json_object_get(e, "cost")));
    json_decref(items);
}

const struct unit_test recommend_retry_tests[] = {
    {"retry: cost of failed and retried work by class", cost_by_class},
    {"retry: nothing classified, nothing failed", cost_by_class_edges},
    {"retry: budget rule, hardware on one host, at the budget", retry_budget_rule},
    {"retry: repeated loads rule and its costs", repeated_loads_rule},
    UNIT_END};
