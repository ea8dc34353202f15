/* test_recommend.c — the recommendation rules of issue 6 part 4 (planner/recommend.h),
 * over hand-made hosts and briefs: every rule on both sides of its threshold, stable
 * ids, and hosts without usage data never recommended for stopping. */
#include <jansson.h>
#include <stdlib.h>

#include "common/actor.h"
#include "planner/recommend.h"
#include "tests/unit/unit.h"

#define HA "00000000-0000-4000-8000-00000000000a"
#define HB "00000000-0000-4000-8000-00000000000b"
#define HC "00000000-0000-4000-8000-00000000000c"
#define P1 "00000000-0000-4000-8000-0000000000p1"
#define P2 "00000000-0000-4000-8000-0000000000p2"
#define B1 "00000000-0000-4000-8000-0000000000b1"
#define B2 "00000000-0000-4000-8000-0000000000b2"

static const struct gpu_model H100 = {"h100_sxm", "H100", 80, 81559, 0x3f};

/* A held, busy host of pool P1 at $4/h with usage data: no recommendation. Its reports
 * are fresh and its GPUs sampled idle every 60 s for two hours (the idle rule's other
 * signal, tested in test_recommend_idle.c), so idle_s alone decides here. */
static struct plan_rec_host host(const char *id)
{
    struct plan_rec_host h;
    memset(&h, 0, sizeof h);
    h.id = id;
    h.pool_id = P1;
    h.state = "ready";
    h.price_per_hour = 4;
    plan_rec_default_thresholds(&h.th);
    h.has_usage = 1;
    h.idle_s = 0;
    h.reports = 1;
    h.gpu_util.samples = 120;
    h.gpu_util.has_util = 1;
    h.gpu = &H100;
    h.gpu_count = 1;
    return h;
}

static struct plan_rec_brief brief(const char *id)
{
    struct plan_rec_brief b;
    memset(&b, 0, sizeof b);
    b.id = id;
    return b;
}

/* Serving brief with hour figures. */
static void serve(struct plan_rec_host *h, const char *brief_id, double busy_s, double held_s)
{
    h->brief_id = brief_id;
    h->has_hour = 1;
    h->hour_busy_s = busy_s;
    h->hour_held_s = held_s;
}

static json_t *items, *nousage;
static int run(const struct plan_rec_host *h, size_t nh, const struct plan_rec_brief *b, size_t nb)
{
    json_decref(items);
    json_decref(nousage);
    items = json_array();
    nousage = json_array();
    struct plan_options o;
    plan_default_options(&o);
    return plan_recommend(h, nh, b, nb, &o, items, nousage);
}
static size_t count(const char *action)
{
    size_t n = 0, i;
    json_t *it;
    json_array_foreach(items, i, it) if (strcmp(json_string_value(json_object_get(it, "action")),
                                                action) == 0) n++;
    return n;
}
static json_t *first(const char *action)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) if (strcmp(json_string_value(json_object_get(it, "action")),
                                                action) == 0) return it;
    return NULL;
}
static double ev(json_t *it, const char *k)
{
    return json_number_value(json_object_get(json_object_get(it, "evidence"), k));
}
static const char *tgt(json_t *it, const char *k)
{
    return json_string_value(json_object_get(json_object_get(it, "target"), k));
}
static const char *host0(json_t *it)
{
    return json_string_value(
        json_array_get(json_object_get(json_object_get(it, "target"), "host_ids"), 0));
}

static void stop_rule(void)
{
    struct plan_rec_host h = host(HA);
    h.idle_s = 1800; /* exactly the window: not yet */
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    h.idle_s = 1801;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 1);
    json_t *s = first("stop");
    CHECK(s != NULL);
    CHECK_STR(host0(s), HA);
    CHECK_STR(tgt(s, "pool_id"), P1);
    CHECK(json_is_null(json_object_get(json_object_get(s, "target"), "brief_id")));
    CHECK(ev(s, "idle_seconds") == 1801 && ev(s, "idle_stop_after_seconds") == 1800);
    CHECK(json_number_value(json_object_get(s, "estimated_savings_per_hour")) == 4);
    CHECK_STR(json_string_value(json_object_get(s, "rule")), "idle");
    /* A running job blocks it. */
    h.active_job = 1;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    /* A host already stopping is not recommended again. */
    h.active_job = 0;
    h.state = "stopping";
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    /* Nor one the monitor cannot reach: unreachable is not idle. */
    h.state = "unreachable";
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    h.state = "ready";
    /* The pool's own window. */
    h.active_job = 0;
    h.th.idle_stop_after_s = 7200;
    h.idle_s = 7200;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 0);
    h.idle_s = 7200.5;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    /* No window given (0): the default 1800 s. */
    h.th.idle_stop_after_s = 0;
    h.idle_s = 1801;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 &&
          ev(first("stop"), "idle_stop_after_seconds") == 1800);
}

static void no_usage_never_stopped(void)
{
    struct plan_rec_host h = host(HA);
    h.has_usage = 0;
    h.idle_s = 1e9; /* whatever the idle figure, it is not used */
    h.accepted = 1;
    h.has_share = 1;
    h.failed_share = 0.5; /* no report means no figures; even so nothing is recommended */
    h.has_share = 0;
    struct plan_rec_brief b = brief(B1);
    b.sized = 1;
    struct plan_brief pb = {.kind = PLAN_INFERENCE_INTERACTIVE,
                            .parameter_count = 7e9,
                            .precision = GPU_BF16,
                            .concurrency = 1};
    struct plan_options o;
    plan_default_options(&o);
    plan_size(&pb, &o, &b.sizing);
    CHECK(run(&h, 1, &b, 1) == 0);
    CHECK(json_array_size(items) == 0);
    CHECK(json_array_size(nousage) == 1);
    json_t *n = json_array_get(nousage, 0);
    CHECK_STR(json_string_value(json_object_get(n, "host_id")), HA);
    CHECK_STR(json_string_value(json_object_get(n, "pool_id")), P1);
    CHECK_STR(json_string_value(json_object_get(n, "reason")), "no_usage_data");
    CHECK_STR(json_string_value(json_object_get(n, "state")), "ready");
}

static void scale_up_rule(void)
{
    struct plan_rec_host h[2] = {host(HA), host(HB)};
    struct plan_rec_brief b = brief(B1);
    /* Σ busy / Σ held = (3600 + 2520) / 7200 = 0.85: not over. */
    serve(&h[0], B1, 3600, 3600);
    serve(&h[1], B1, 2520, 3600);
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 0);
    h[1].hour_busy_s = 2521;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1);
    json_t *u = first("scale_up");
    CHECK_STR(tgt(u, "brief_id"), B1);
    CHECK_STR(tgt(u, "pool_id"), P1);
    CHECK(json_array_size(json_object_get(json_object_get(u, "target"), "host_ids")) == 2);
    CHECK(ev(u, "utilization") == 0.8501);
    CHECK(json_number_value(json_object_get(u, "estimated_savings_per_hour")) == 0);
    /* Hosts of two pools: each pool is judged apart, with its own thresholds. HA alone
     * in P1 is at 1.0 (over 0.85); HB alone in P2 at 0.7003 is not. */
    h[1].pool_id = P2;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1);
    u = first("scale_up");
    CHECK_STR(tgt(u, "pool_id"), P1);
    CHECK(json_array_size(json_object_get(json_object_get(u, "target"), "host_ids")) == 1);
    CHECK(ev(u, "utilization") == 1 && ev(u, "threshold") == 0.85);
    /* P2 scales up above 0.70: 0.7003 is over it. */
    h[1].th.scale_up_utilization = 0.70;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 2);
    h[1].th.scale_up_utilization = 0.7003;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1); /* 2521/3600 = 0.70028 */
    h[1].th.scale_up_utilization = 0.85;
    h[1].pool_id = P1;

    /* Latency: p95 over the lowest latency target; equal is not over. */
    h[1].hour_busy_s = 0; /* utilization 0.5 */
    b.has_ttft = 1;
    b.ttft_ms = 500;
    b.has_tail = 1;
    b.tail_ms = 800;
    h[0].has_p95 = 1;
    h[0].p95_ms = 500;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 0);
    h[1].has_p95 = 1;
    h[1].p95_ms = 500.5;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1);
    u = first("scale_up");
    CHECK(ev(u, "p95_latency_ms") == 500.5 && ev(u, "latency_target_ms") == 500);
    CHECK_STR(json_string_value(json_object_get(json_object_get(u, "evidence"), "latency_metric")),
              "time_to_first_token_ms");
    CHECK(ev(u, "utilization") == 0.5);
    /* Tail latency target alone. */
    b.has_ttft = 0;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 0);
    h[1].p95_ms = 800.01;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1);
    b.has_tail = 0;

    /* Queue delay: ms reported, seconds targeted. */
    b.has_queue = 1;
    b.queue_delay_s = 2;
    h[0].has_queue = 1;
    h[0].queue_delay_ms = 2000;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 0);
    h[0].queue_delay_ms = 2001;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_up") == 1 &&
          ev(first("scale_up"), "queue_delay_ms") == 2001);
    /* No hosts serving a brief: no scale recommendation. */
    struct plan_rec_brief b2 = brief(B2);
    b2.has_queue = 1;
    b2.queue_delay_s = 0.001;
    CHECK(run(h, 2, &b2, 1) == 0 && json_array_size(items) == 0);
}

static void scale_down_rule(void)
{
    struct plan_rec_host h[3] = {host(HA), host(HB), host(HC)};
    struct plan_rec_brief b = brief(B1);
    /* One host at 0.1: not "across at least two hosts". */
    serve(&h[0], B1, 360, 3600);
    CHECK(run(h, 1, &b, 1) == 0 && count("scale_down") == 0);
    /* Two: (360 + 1800) / 7200 = 0.30, not under. */
    serve(&h[1], B1, 1800, 3600);
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_down") == 0);
    h[1].hour_busy_s = 1799;
    h[1].price_per_hour = 6;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_down") == 1);
    json_t *d = first("scale_down");
    CHECK_STR(host0(d), HA); /* the least utilized */
    CHECK(json_number_value(json_object_get(d, "estimated_savings_per_hour")) == 4);
    CHECK(ev(d, "utilization") == 0.2999 && ev(d, "hosts") == 2 && ev(d, "threshold") == 0.3);
    /* The pool's threshold: under 0.25 only; 0.2999 is not. */
    h[0].th.scale_down_utilization = h[1].th.scale_down_utilization = 0.25;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_down") == 0);
    h[0].th.scale_down_utilization = h[1].th.scale_down_utilization = 0.30;
    /* A host serving the brief without hour data does not count. */
    h[2].brief_id = B1;
    CHECK(run(h, 3, &b, 1) == 0 && count("scale_down") == 1);
    /* Ties: the lowest id. */
    h[1].hour_busy_s = 360;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_down") == 1);
    CHECK_STR(host0(first("scale_down")), HA);
    /* A brief over its latency target is not scaled down. */
    b.has_ttft = 1;
    b.ttft_ms = 100;
    h[0].has_p95 = 1;
    h[0].p95_ms = 200;
    CHECK(run(h, 2, &b, 1) == 0 && count("scale_down") == 0 && count("scale_up") == 1);
}

static void investigate_rule(void)
{
    struct plan_rec_host h = host(HA);
    h.has_share = 1;
    h.failed_share = 0.05;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    h.failed_share = 0.0501;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1);
    json_t *i = first("investigate");
    CHECK_STR(json_string_value(json_object_get(i, "rule")), "failed_share");
    CHECK(ev(i, "failed_retried_share") == 0.0501 && ev(i, "threshold") == 0.05);
    /* A pool that tolerates 10%: 0.0501 is fine, 0.1001 is not. */
    h.th.failed_share = 0.10;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    h.failed_share = 0.1001;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1);
    CHECK(ev(first("investigate"), "threshold") == 0.1);
    h.th.failed_share = 0.05;
    h.failed_share = 0;
    /* Cost per unit: +25% exactly is not over. */
    h.has_cpu[USAGE_UNIT_TOKENS] = h.has_prev_cpu[USAGE_UNIT_TOKENS] = 1;
    h.prev_cpu[USAGE_UNIT_TOKENS] = 0.00004;
    h.cpu[USAGE_UNIT_TOKENS] = 0.00005;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    h.cpu[USAGE_UNIT_TOKENS] = 0.0000501;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1);
    i = first("investigate");
    CHECK_STR(json_string_value(json_object_get(i, "rule")), "cost_per_unit");
    json_t *t = json_object_get(json_object_get(json_object_get(i, "evidence"), "units"), "tokens");
    CHECK(t != NULL);
    CHECK(json_number_value(json_object_get(t, "change")) == 0.2525);
    CHECK(ev(i, "threshold") == 0.25);
    /* A pool's +50% threshold: +25.25% is not over it, +50.25% is. */
    h.th.cost_increase = 0.5;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    h.cpu[USAGE_UNIT_TOKENS] = 0.0000601;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1);
    h.th.cost_increase = 0.25;
    h.cpu[USAGE_UNIT_TOKENS] = 0.0000501;
    /* Without a previous figure, no comparison. */
    h.has_prev_cpu[USAGE_UNIT_TOKENS] = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    /* Both rules: two recommendations with distinct ids. */
    h.has_prev_cpu[USAGE_UNIT_TOKENS] = 1;
    h.failed_share = 0.2;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 2);
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(items, 0), "id")),
                 json_string_value(json_object_get(json_array_get(items, 1), "id"))) != 0);
}

static void reuse_rule(void)
{
    struct plan_options o;
    plan_default_options(&o);
    struct plan_rec_brief b[2] = {brief(B1), brief(B2)};
    struct plan_brief small = {.kind = PLAN_INFERENCE_INTERACTIVE,
                               .parameter_count = 7e9,
                               .precision = GPU_BF16,
                               .concurrency = 1};
    struct plan_brief big = small;
    big.parameter_count = 70e9; /* 140 GB of weights: more than one 80 GB GPU */
    plan_size(&small, &o, &b[0].sizing);
    plan_size(&big, &o, &b[1].sizing);
    b[0].sized = b[1].sized = 1;
    b[0].precision = b[1].precision = GPU_BF16;

    struct plan_rec_host h = host(HA);
    h.accepted = 1;
    h.idle_s = 3600;
    /* No host serves either brief: both need capacity; only the 7B fits one H100. */
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 1 && count("stop") == 1);
    json_t *r = first("reuse");
    CHECK_STR(tgt(r, "brief_id"), B1);
    CHECK_STR(host0(r), HA);
    CHECK(ev(r, "gpus_needed") == 1 && ev(r, "gpu_count") == 1);
    CHECK_STR(json_string_value(json_object_get(json_object_get(r, "evidence"), "need")),
              "no_host");
    /* With 8 GPUs the 70B fits too. */
    h.gpu_count = 8;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 2);
    /* Not accepted, not idle past the window, a running job, or an unknown GPU: none. */
    h.accepted = 0;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0);
    h.accepted = 1;
    h.idle_s = 1800;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0);
    h.idle_s = 3600;
    h.active_job = 1;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0);
    h.active_job = 0;
    h.gpu = NULL;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0);
    h.gpu = &H100;
    /* A brief served and within its targets does not need capacity; one over its target
     * does. The idle host is never offered to the brief it serves itself. */
    struct plan_rec_host two[2] = {host(HB), host(HC)};
    two[0] = h; /* HA, idle, accepted, serving nothing */
    serve(&two[1], B1, 1800, 3600);
    CHECK(run(two, 2, b, 2) == 0 && count("reuse") == 1 &&
          strcmp(tgt(first("reuse"), "brief_id"), B2) == 0);
    two[1].hour_busy_s = 3500;
    CHECK(run(two, 2, b, 2) == 0 && count("reuse") == 2 && count("scale_up") == 1);
    two[0].brief_id = B1;
    two[0].has_hour = 0;
    CHECK(run(two, 2, b, 2) == 0 && count("reuse") == 1 &&
          strcmp(tgt(first("reuse"), "brief_id"), B2) == 0);
    /* Precision not supported by the GPU model. */
    struct gpu_model nofp = H100;
    nofp.formats = 1u << GPU_FP32;
    h.gpu = &nofp;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0);
    /* No usage data: never idle, never reused. */
    h.gpu = &H100;
    h.has_usage = 0;
    CHECK(run(&h, 1, b, 2) == 0 && count("reuse") == 0 && json_array_size(nousage) == 1);
}

static void stable_ids(void)
{
    char a[37], b[37], c[37];
    const char *ids[] = {HA, HB};
    plan_rec_id("stop", "idle", ids, 1, P1, NULL, a);
    plan_rec_id("stop", "idle", ids, 1, P1, NULL, b);
    CHECK(strcmp(a, b) == 0 && strlen(a) == 36);
    CHECK(a[8] == '-' && a[13] == '-' && a[14] == '5' && a[18] == '-' && a[23] == '-');
    CHECK(strchr("89ab", a[19]) != NULL);
    plan_rec_id("stop", "idle", ids, 2, P1, NULL, c);
    CHECK(strcmp(a, c) != 0);
    plan_rec_id("scale_down", "scale_down", ids, 1, P1, NULL, c);
    CHECK(strcmp(a, c) != 0);
    plan_rec_id("stop", "idle", ids, 1, P1, B1, c);
    CHECK(strcmp(a, c) != 0);
    /* The id does not change with the figures behind it. */
    struct plan_rec_host h = host(HA);
    h.idle_s = 2000;
    CHECK(run(&h, 1, NULL, 0) == 0);
    char first_id[37];
    snprintf(first_id, sizeof first_id, "%s",
             json_string_value(json_object_get(first("stop"), "id")));
    CHECK(strcmp(first_id, a) == 0);
    h.idle_s = 99999;
    CHECK(run(&h, 1, NULL, 0) == 0);
    CHECK_STR(json_string_value(json_object_get(first("stop"), "id")), first_id);
    json_decref(items);
    json_decref(nousage);
    items = nousage = NULL;
}

/* Who sees what: a platform admin every recommendation, a reuse lending project A's host
 * to project B's brief included; a member only those whose every target lies in one
 * project it may read; a reporter (no read role) none; an unknown target hides it. */
static void visibility(void)
{
    static const char *const A = "00000000-0000-4000-8000-0000000000aa";
    static const char *const B = "00000000-0000-4000-8000-0000000000bb";
    struct actor_grant both[2] = {{"", ACTOR_ROLE_VIEWER}, {"", ACTOR_ROLE_ADMIN}};
    snprintf(both[0].project_id, sizeof both[0].project_id, "%s", A);
    snprintf(both[1].project_id, sizeof both[1].project_id, "%s", B);
    struct actor admin = {.kind = ACTOR_TOKEN, .name = "p", .platform_admin = 1};
    struct actor member = {.kind = ACTOR_TOKEN, .name = "m", .grants = both, .ngrants = 2};
    struct actor only_b = {.kind = ACTOR_TOKEN, .name = "b", .grants = &both[1], .ngrants = 1};
    struct actor_grant rep = {"", ACTOR_ROLE_REPORTER};
    snprintf(rep.project_id, sizeof rep.project_id, "%s", A);
    struct actor reporter = {.kind = ACTOR_TOKEN, .name = "r", .grants = &rep, .ngrants = 1};
    struct actor sys = actor_system("system:test", "/", NULL);
    const char *in_a[] = {A, A, A}, *lend[] = {A, B}, *unknown[] = {A, NULL};
    CHECK(plan_rec_visible(&admin, lend, 2) && plan_rec_visible(&sys, lend, 2));
    CHECK(plan_rec_visible(&admin, in_a, 3));
    CHECK(plan_rec_visible(&member, in_a, 3));
    CHECK(!plan_rec_visible(&member, lend, 2)); /* even one who reads both projects */
    CHECK(!plan_rec_visible(&only_b, in_a, 3));
    CHECK(!plan_rec_visible(&reporter, in_a, 1));
    CHECK(!plan_rec_visible(&member, unknown, 2));
    CHECK(!plan_rec_visible(&member, in_a, 0));
}

UNIT_SUITE(recommend_tests) = {
    {"recommend: who sees a recommendation (projects)", visibility},
    {"recommend: stop after the idle window, not with a running job", stop_rule},
    {"recommend: no usage data is listed apart and never stopped", no_usage_never_stopped},
    {"recommend: scale_up on utilization, latency or queue delay", scale_up_rule},
    {"recommend: scale_down across at least two hosts", scale_down_rule},
    {"recommend: investigate failed share and cost per unit", investigate_rule},
    {"recommend: reuse an idle accepted host that fits a brief needing capacity", reuse_rule},
    {"recommend: stable ids", stable_ids},
    UNIT_END,
};
