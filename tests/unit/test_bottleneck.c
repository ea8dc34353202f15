/* test_bottleneck.c — the bottleneck rules (planner/bottleneck.h, issue 26 item 4), one
 * test per rule, each figure computed by hand in the comments. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "planner/bottleneck.h"
#include "planner/recommend_bn.h"
#include "tests/unit/unit.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)
#define HA         "00000000-0000-4000-8000-00000000000a"
#define HB         "00000000-0000-4000-8000-00000000000b"

/* A host with the same sums in both halves: reports, busy seconds and phases
 * (queue, load, preprocess, compute, communication, write) per half. */
static struct plan_bn_host host(const char *id, long reports, double busy, const double ph[6])
{
    struct plan_bn_host h;
    memset(&h, 0, sizeof h);
    h.id = id;
    h.pool_id = "p";
    for (int i = 0; i < 2; i++) {
        h.half[i].reports = reports;
        h.half[i].busy_s = busy;
        h.half[i].completed = 1000;
        if (ph) {
            h.half[i].phase_reports = reports;
            h.half[i].phase_busy_s = busy;
            for (int k = 0; k < PLAN_PHASE_COUNT; k++)
                h.half[i].phase_s[k] = ph[k];
        }
    }
    return h;
}

static struct plan_bn_signals gpu(const char *id, double util)
{
    struct plan_bn_signals s;
    memset(&s, 0, sizeof s);
    s.host_id = id;
    s.has_gpu = s.has_util = 1;
    s.gpu_samples = 60;
    s.util_pct = util;
    return s;
}

static void run(const struct plan_bn_host *h, size_t nh, const struct plan_bn_signals *s, size_t ns,
                struct plan_bn_finding *f)
{
    plan_bn_summarize(h, nh, f);
    plan_bn_decide(h, nh, s, ns, f);
}

static int has_note(const struct plan_bn_finding *f, const char *part)
{
    for (size_t i = 0; i < f->nnotes; i++)
        if (strstr(f->notes[i], part))
            return 1;
    return 0;
}

static void no_data(void)
{
    struct plan_bn_finding f;
    run(NULL, 0, NULL, 0, &f);
    CHECK(f.verdict == PLAN_BN_NO_DATA);
    CHECK(!f.has_dominant);
    CHECK(f.test_kind == PLAN_BN_TEST_NONE);
}

/* Reports without phases: unknown, never GPU-bound, even with the GPUs at 95%. */
static void no_phases_unknown(void)
{
    struct plan_bn_host h = host(HA, 10, 3000, NULL);
    struct plan_bn_signals s = gpu(HA, 95);
    struct plan_bn_finding f;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_UNKNOWN);
    CHECK(!f.has_dominant);
    CHECK(f.test_kind == PLAN_BN_TEST_REPORT_PHASES);
    CHECK(strstr(f.why, "none of the 20 work reports") != NULL);
    CHECK(strstr(f.why, "not GPU-bound") != NULL);
    CHECK(!has_note(&f, "low utilization alone"));
    /* Low utilization alone says nothing about the CPU or storage: a note, no verdict. */
    s.util_pct = 10;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_UNKNOWN);
    CHECK(has_note(&f, "low utilization alone says nothing about the CPU or storage"));
}

/* Load 41% of busy time: per half busy 1000 s, phases load 410, compute 300, queue 90,
 * preprocess 100, write 100 (Σ 1000): load 41% of busy and of the phase time. The gate read
 * 180 MB/s against a pool minimum of 1,000. */
static void load_storage(void)
{
    const double ph[6] = {90, 410, 100, 300, 0, 100};
    struct plan_bn_host h[2] = {host(HA, 5, 1000, ph), host(HB, 5, 1000, ph)};
    struct plan_bn_signals s[2] = {gpu(HA, 30), gpu(HB, 30)};
    s[1].has_storage = s[1].has_min_read = 1;
    s[1].read_mbps = 180;
    s[1].min_read_mbps = 1000;
    s[0].has_storage = 1;
    s[0].read_mbps = 900;
    struct plan_bn_finding f;
    run(h, 2, s, 2, &f);
    CHECK(f.verdict == PLAN_BN_STORAGE);
    CHECK(f.dominant == PLAN_PHASE_LOAD && f.dominates);
    CHECK(NEAR(f.share_of_busy, 0.41) && NEAR(f.share_of_phase, 0.41));
    CHECK(f.test_kind == PLAN_BN_TEST_DIAGNOSTICS && f.ntests == 1);
    CHECK_STR(f.tests[0], "storage");
    CHECK_STR(f.test_host_id, HB); /* the slowest gate read, not the first named */
    CHECK(f.evidence == &s[1]);
    CHECK(strstr(f.why, "load is 41% of busy time") != NULL);
    CHECK(strstr(f.why, "the durable path read at 180 MB/s in the last gate (pool minimum "
                        "1000): run the storage test on a drained host") != NULL);
    /* The storage test's result becomes evidence. */
    s[1].has_diag = 1;
    s[1].diag_run_id = "run-1";
    s[1].diag_read_mbps = 175;
    run(h, 2, s, 2, &f);
    CHECK(strstr(f.why, "the storage test (diagnostics run run-1) read at 175 MB/s") != NULL);
    /* Without any gate measurement: said so, the host with the most load time tested. */
    s[0].has_storage = s[1].has_storage = s[1].has_diag = 0;
    h[1].half[0].phase_s[PLAN_PHASE_LOAD] = 500;
    run(h, 2, s, 2, &f);
    CHECK(f.verdict == PLAN_BN_STORAGE);
    CHECK_STR(f.test_host_id, HB);
    CHECK(strstr(f.why, "no gate of the host measured the durable path's read rate") != NULL);
}

static void write_storage(void)
{
    const double ph[6] = {0, 100, 0, 300, 0, 600};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_finding f;
    run(&h, 1, NULL, 0, &f);
    CHECK(f.verdict == PLAN_BN_WRITE);
    CHECK_STR(f.tests[0], "storage");
    CHECK_STR(f.test_host_id, HA);
}

/* Communication 50% of the phase time; the gate measured 250 GB/s, minimum 370. */
static void communication_bandwidth(void)
{
    const double ph[6] = {0, 50, 50, 400, 500, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_signals s = gpu(HA, 60);
    s.has_bw = s.has_min_bw = 1;
    s.busbw_gbps = 250;
    s.min_busbw_gbps = 370;
    struct plan_bn_finding f;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_BANDWIDTH);
    CHECK_STR(f.tests[0], "bandwidth");
    CHECK(strstr(f.why, "communication is 50% of busy time") != NULL);
    CHECK(strstr(f.why, "250 GB/s all-reduce bus bandwidth (minimum 370)") != NULL);
}

static void preprocess_input(void)
{
    const double ph[6] = {0, 100, 600, 300, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_finding f;
    run(&h, 1, NULL, 0, &f);
    CHECK(f.verdict == PLAN_BN_INPUT_PIPELINE);
    CHECK(f.test_kind == PLAN_BN_TEST_MANUAL);
    CHECK_STR(f.manual, "input_pipeline");
    CHECK(strstr(f.why, "preprocess is 60% and compute 30%") != NULL);
}

/* No phase dominates (largest 35%): mixed; with the GPUs at 20% and compute at 20% (under
 * 30%) the low-utilization rule names the input pipeline; at 45% utilization it does not. */
static void mixed_and_low_util(void)
{
    const double ph[6] = {0, 350, 300, 200, 150, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_signals s = gpu(HA, 45);
    struct plan_bn_finding f;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_MIXED);
    CHECK(f.test_kind == PLAN_BN_TEST_NONE);
    CHECK(!f.dominates && f.dominant == PLAN_PHASE_LOAD);
    s.util_pct = 20;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_INPUT_PIPELINE);
    /* Exactly 40% is not dominance. */
    const double at[6] = {0, 400, 300, 300, 0, 0};
    h = host(HA, 4, 1000, at);
    s.util_pct = 80;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_MIXED);
}

/* Compute dominates: GPU-bound only at ≥ 70% utilization. */
static void compute_rules(void)
{
    const double ph[6] = {0, 100, 100, 800, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_signals s = gpu(HA, 70);
    struct plan_bn_finding f;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_GPU_BOUND);
    s.util_pct = 69.9;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_COMPUTE_UNDERUTILIZED);
    CHECK_STR(f.tests[0], "workload");
    run(&h, 1, NULL, 0, &f);
    CHECK(f.verdict == PLAN_BN_COMPUTE_UNCONFIRMED);
    CHECK(strstr(f.why, "not claimed GPU-bound") != NULL);
    /* A second host without phases at 10% does not dilute the first's 90%. */
    struct plan_bn_host two[2] = {h, host(HB, 4, 1000, NULL)};
    struct plan_bn_signals s2[2] = {gpu(HA, 90), gpu(HB, 10)};
    run(two, 2, s2, 2, &f);
    CHECK(f.verdict == PLAN_BN_GPU_BOUND);
    two[1] = host(HB, 4, 1000, ph); /* with phases, it counts: mean 50% */
    run(two, 2, s2, 2, &f);
    CHECK(f.verdict == PLAN_BN_COMPUTE_UNDERUTILIZED);
    /* A host with samples but no utilization read does not confirm anything. */
    s.has_util = 0;
    run(&h, 1, &s, 1, &f);
    CHECK(f.verdict == PLAN_BN_COMPUTE_UNCONFIRMED);
}

static void queue_capacity(void)
{
    const double ph[6] = {700, 100, 0, 200, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_finding f;
    run(&h, 1, NULL, 0, &f);
    CHECK(f.verdict == PLAN_BN_QUEUE);
    CHECK_STR(f.manual, "capacity");
}

/* Trend: first half load 200 of 1000 (20%), second 600 of 1000 (60%): rising. */
static void trend(void)
{
    const double ph[6] = {0, 200, 0, 800, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    h.half[1].phase_s[PLAN_PHASE_LOAD] = 600;
    h.half[1].phase_s[PLAN_PHASE_COMPUTE] = 400;
    struct plan_bn_finding f;
    plan_bn_summarize(&h, 1, &f);
    /* Σ load 800 of 2000, Σ compute 1200: compute dominates at 60%; first 80%, second 40%. */
    CHECK(f.dominant == PLAN_PHASE_COMPUTE);
    CHECK(NEAR(f.first_share, 0.8) && NEAR(f.second_share, 0.4));
    CHECK(f.trend == PLAN_BN_FALLING);
    h.half[1].phase_s[PLAN_PHASE_LOAD] = 240; /* 240 / 640 = 37.5%, compute 62.5%: −17.5 */
    plan_bn_summarize(&h, 1, &f);
    CHECK(f.trend == PLAN_BN_FALLING);
    h.half[1].phase_s[PLAN_PHASE_COMPUTE] = 1000; /* 1000 / 1240 = 80.6%: +0.6 points */
    plan_bn_summarize(&h, 1, &f);
    CHECK(f.trend == PLAN_BN_STEADY);
    memset(h.half[0].phase_s, 0, sizeof h.half[0].phase_s);
    plan_bn_summarize(&h, 1, &f);
    CHECK(f.trend == PLAN_BN_TREND_UNKNOWN);
    /* Rising: the first half 10% load, the second 90%. */
    h.half[0].phase_s[PLAN_PHASE_LOAD] = 100;
    h.half[0].phase_s[PLAN_PHASE_COMPUTE] = 900;
    h.half[1].phase_s[PLAN_PHASE_LOAD] = 9000;
    h.half[1].phase_s[PLAN_PHASE_COMPUTE] = 1000;
    plan_bn_summarize(&h, 1, &f);
    CHECK(f.dominant == PLAN_PHASE_LOAD && f.trend == PLAN_BN_RISING);
}

/* Repeated loads: 3 buckets with load and 3 GB moved in them (1 GB each) is the rule;
 * 2 buckets, or 2.99 GB, is not. */
static void repeated_loads(void)
{
    const double ph[6] = {0, 100, 0, 900, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    h.load_buckets = 3;
    h.load_bytes = 3e9;
    CHECK(plan_bn_repeated_loads(&h));
    h.load_bytes = 2.99e9;
    CHECK(!plan_bn_repeated_loads(&h));
    h.load_buckets = 2;
    h.load_bytes = 1e12;
    CHECK(!plan_bn_repeated_loads(&h));
    h.load_buckets = 0;
    h.load_bytes = 0;
    CHECK(!plan_bn_repeated_loads(&h));
    h.load_buckets = 5;
    h.load_bytes = 5e9;
    struct plan_bn_finding f;
    run(&h, 1, NULL, 0, &f);
    CHECK(has_note(&f, "again and again"));
}

/* Retries: failed 30 + retried 30 of 1000 completed per half → 120 / 2120 = 5.66%. */
static void retries(void)
{
    const double ph[6] = {0, 100, 0, 900, 0, 0};
    struct plan_bn_host h = host(HA, 4, 1000, ph);
    struct plan_bn_finding f;
    run(&h, 1, NULL, 0, &f);
    CHECK(f.has_retry_share && f.retry_share == 0);
    CHECK(!has_note(&f, "retried"));
    h.half[0].failed = h.half[1].failed = 30;
    h.half[0].retried = h.half[1].retried = 30;
    run(&h, 1, NULL, 0, &f);
    CHECK(NEAR(f.retry_share, 120.0 / 2120.0));
    CHECK(has_note(&f, "retried"));
}

/* Named hosts: at most PLAN_BN_NAMED_MAX, by the dominant phase's seconds; a host without
 * reports is never named. Half coverage of phases is noted. */
static void named_hosts(void)
{
    static char ids[14][40];
    struct plan_bn_host h[14];
    for (int i = 0; i < 14; i++) {
        snprintf(ids[i], sizeof ids[i], "h%02d", i);
        const double ph[6] = {0, 100.0 + i, 0, 50, 0, 0};
        h[i] = host(ids[i], 2, 500, ph);
    }
    h[13] = host(ids[13], 0, 0, NULL);
    struct plan_bn_finding f;
    plan_bn_summarize(h, 14, &f);
    CHECK(f.nnamed == PLAN_BN_NAMED_MAX);
    CHECK(f.named[0] == 12 && f.named[9] == 3);
    /* Phase coverage: 13 hosts × 4 reports with phases, 40 without: 52 of 92. */
    h[13] = host(ids[13], 20, 500, NULL);
    run(h, 14, NULL, 0, &f);
    CHECK(NEAR(f.phase_coverage, 52.0 / 92.0));
    CHECK(!has_note(&f, "fewer than half"));
    h[13] = host(ids[13], 30, 500, NULL); /* 52 of 112 */
    run(h, 14, NULL, 0, &f);
    CHECK(has_note(&f, "fewer than half"));
}

/* investigate "bottleneck": one per pool whose finding names a test, carrying it. */
static void rec_investigate(void)
{
    const double ph[6] = {90, 410, 100, 300, 0, 100};
    struct plan_bn_host h = host(HA, 5, 1000, ph);
    struct plan_bn_finding f, g;
    run(&h, 1, NULL, 0, &f);
    struct plan_bn_host u = host(HB, 5, 1000, NULL); /* unknown: nothing recommended */
    run(&u, 1, NULL, 0, &g);
    struct plan_rec_bn_pool p[2] = {{"pool-a", &f}, {"pool-b", &g}};
    json_t *items = json_array();
    CHECK(plan_rec_bottlenecks(p, 2, NULL, 0, items) == 0);
    CHECK(json_array_size(items) == 1);
    json_t *r = json_array_get(items, 0);
    CHECK_STR(json_string_value(json_object_get(r, "action")), "investigate");
    CHECK_STR(json_string_value(json_object_get(r, "rule")), "bottleneck");
    json_t *t = json_object_get(r, "target");
    CHECK_STR(json_string_value(json_array_get(json_object_get(t, "host_ids"), 0)), HA);
    CHECK_STR(json_string_value(json_object_get(t, "pool_id")), "pool-a");
    json_t *ev = json_object_get(r, "evidence");
    CHECK_STR(json_string_value(json_object_get(ev, "verdict")), "storage");
    json_t *nt = json_object_get(ev, "next_test");
    CHECK_STR(json_string_value(json_array_get(json_object_get(nt, "tests"), 0)), "storage");
    CHECK(strstr(json_string_value(json_object_get(r, "reason")), "load is 41% of busy time"));
    json_decref(items);
}

/* scale_down "multi_gpu_no_speedup": an 8-GPU pool completing 800 units in 1000 busy
 * seconds = 800 / (1000 × 8) = 0.1 per GPU-second, communication 60% of its phases; a
 * 1-GPU pool completing 300 in 1000 s = 0.3 per GPU-second for the same brief and unit. */
static void rec_no_speedup(void)
{
    struct plan_rec_tput t[2];
    memset(t, 0, sizeof t);
    t[0] = (struct plan_rec_tput){.pool_id = "multi",
                                  .brief_id = "b",
                                  .unit = "tokens",
                                  .gpu_count = 8,
                                  .price_per_hour = 30,
                                  .completed = 800,
                                  .busy_s = 1000,
                                  .least_host_id = HA};
    t[0].phase_s[PLAN_PHASE_COMMUNICATION] = 600;
    t[0].phase_s[PLAN_PHASE_COMPUTE] = 400;
    t[1] = (struct plan_rec_tput){.pool_id = "single",
                                  .brief_id = "b",
                                  .unit = "tokens",
                                  .gpu_count = 1,
                                  .price_per_hour = 4,
                                  .completed = 300,
                                  .busy_s = 1000,
                                  .least_host_id = HB};
    CHECK(NEAR(plan_rec_tput_per_gpu(&t[0]), 0.1) && NEAR(plan_rec_tput_per_gpu(&t[1]), 0.3));
    json_t *items = json_array();
    CHECK(plan_rec_bottlenecks(NULL, 0, t, 2, items) == 0);
    CHECK(json_array_size(items) == 1);
    json_t *r = json_array_get(items, 0);
    CHECK_STR(json_string_value(json_object_get(r, "action")), "scale_down");
    CHECK_STR(json_string_value(json_object_get(r, "rule")), "multi_gpu_no_speedup");
    CHECK(json_real_value(json_object_get(r, "estimated_savings_per_hour")) == 30);
    json_t *ev = json_object_get(r, "evidence");
    CHECK(NEAR(json_real_value(json_object_get(ev, "per_gpu_throughput")), 0.1));
    CHECK(NEAR(json_real_value(json_object_get(ev, "communication_share")), 0.6));
    CHECK_STR(json_string_value(json_object_get(ev, "single_gpu_pool_id")), "single");
    json_decref(items);
    /* Not when the single-GPU pool is no faster per GPU (exactly 0.1: 100 in 1000 s). */
    t[1].completed = 100;
    items = json_array();
    CHECK(plan_rec_bottlenecks(NULL, 0, t, 2, items) == 0 && json_array_size(items) == 0);
    json_decref(items);
    /* Not when communication does not dominate (compute is the largest phase). */
    t[1].completed = 300;
    t[0].phase_s[PLAN_PHASE_COMPUTE] = 700;
    items = json_array();
    CHECK(plan_rec_bottlenecks(NULL, 0, t, 2, items) == 0 && json_array_size(items) == 0);
    json_decref(items);
    /* Not against another unit, nor without a single-GPU pool. */
    t[0].phase_s[PLAN_PHASE_COMPUTE] = 400;
    t[1].unit = "requests";
    items = json_array();
    CHECK(plan_rec_bottlenecks(NULL, 0, t, 2, items) == 0 && json_array_size(items) == 0);
    json_decref(items);
    t[1].unit = "tokens";
    t[1].gpu_count = 2;
    items = json_array();
    CHECK(plan_rec_bottlenecks(NULL, 0, t, 2, items) == 0 && json_array_size(items) == 0);
    json_decref(items);
}

UNIT_SUITE(bottleneck_tests) = {
    {"bottleneck: no reports, no data", no_data},
    {"bottleneck: no phases is unknown, never GPU-bound", no_phases_unknown},
    {"bottleneck: load dominates -> storage test, gate evidence", load_storage},
    {"bottleneck: write dominates -> storage test", write_storage},
    {"bottleneck: communication dominates -> bandwidth test", communication_bandwidth},
    {"bottleneck: preprocess dominates -> input pipeline", preprocess_input},
    {"bottleneck: mixed, and low utilization with small compute", mixed_and_low_util},
    {"bottleneck: compute is GPU-bound only with high utilization", compute_rules},
    {"bottleneck: queue dominates -> capacity", queue_capacity},
    {"bottleneck: trend per half", trend},
    {"bottleneck: repeated model loads rule", repeated_loads},
    {"bottleneck: retries share", retries},
    {"bottleneck: named hosts and phase coverage", named_hosts},
    {"bottleneck: investigate recommendation carries the finding", rec_investigate},
    {"bottleneck: scale_down when multi-GPU does not speed up", rec_no_speedup},
    UNIT_END};
