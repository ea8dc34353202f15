/* bottleneck.c — see bottleneck.h. */
#include "planner/bottleneck.h"

#include <stdio.h>
#include <string.h>

const char *const plan_phase_names[] = {"queue",         "load",  "preprocess", "compute",
                                        "communication", "write", NULL};
const char *const plan_bn_verdict_names[] = {"no_data",
                                             "unknown",
                                             "mixed",
                                             "storage",
                                             "write",
                                             "bandwidth",
                                             "input_pipeline",
                                             "queue",
                                             "gpu_bound",
                                             "compute_unconfirmed",
                                             "compute_underutilized",
                                             NULL};
const char *const plan_bn_trend_names[] = {"unknown", "steady", "rising", "falling", NULL};
const char *const plan_bn_test_kind_names[] = {"none", "diagnostics", "report_phases", "manual",
                                               NULL};

static void sums_add(struct plan_bn_sums *a, const struct plan_bn_sums *b)
{
    a->reports += b->reports;
    a->phase_reports += b->phase_reports;
    a->busy_s += b->busy_s;
    a->phase_busy_s += b->phase_busy_s;
    for (int k = 0; k < PLAN_PHASE_COUNT; k++)
        a->phase_s[k] += b->phase_s[k];
    a->completed += b->completed;
    a->failed += b->failed;
    a->retried += b->retried;
    a->bytes_moved += b->bytes_moved;
}

static double phase_sum(const struct plan_bn_sums *s)
{
    double t = 0;
    for (int k = 0; k < PLAN_PHASE_COUNT; k++)
        t += s->phase_s[k];
    return t;
}

/* The largest phase (the first in enum order on a tie); -1 without phase time. */
static int largest(const struct plan_bn_sums *s)
{
    int best = -1;
    for (int k = 0; k < PLAN_PHASE_COUNT; k++)
        if (s->phase_s[k] > 0 && (best < 0 || s->phase_s[k] > s->phase_s[best]))
            best = k;
    return best;
}

int plan_bn_repeated_loads(const struct plan_bn_host *h)
{
    return h->load_buckets >= PLAN_BN_REPEAT_BUCKETS &&
           h->load_bytes / (double)h->load_buckets >= PLAN_BN_REPEAT_BYTES;
}

/* What ranks host h for naming: the dominant phase's seconds, else its busy time. */
static double rank_of(const struct plan_bn_host *h, const struct plan_bn_finding *f)
{
    if (f->has_dominant)
        return h->half[0].phase_s[f->dominant] + h->half[1].phase_s[f->dominant];
    return h->half[0].busy_s + h->half[1].busy_s;
}

/* The PLAN_BN_NAMED_MAX hosts ranking highest (ties: input order), highest first. */
static void pick_named(const struct plan_bn_host *hosts, size_t nh, struct plan_bn_finding *f)
{
    f->nnamed = 0;
    for (size_t i = 0; i < nh; i++) {
        double r = rank_of(&hosts[i], f);
        if (hosts[i].half[0].reports + hosts[i].half[1].reports == 0)
            continue;
        size_t pos = f->nnamed;
        while (pos > 0 && rank_of(&hosts[f->named[pos - 1]], f) < r)
            pos--;
        if (pos >= PLAN_BN_NAMED_MAX)
            continue;
        size_t end = f->nnamed < PLAN_BN_NAMED_MAX ? f->nnamed : PLAN_BN_NAMED_MAX - 1;
        memmove(&f->named[pos + 1], &f->named[pos], (end - pos) * sizeof f->named[0]);
        f->named[pos] = i;
        if (f->nnamed < PLAN_BN_NAMED_MAX)
            f->nnamed++;
    }
}

void plan_bn_summarize(const struct plan_bn_host *hosts, size_t nh, struct plan_bn_finding *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < nh; i++) {
        sums_add(&f->first, &hosts[i].half[0]);
        sums_add(&f->second, &hosts[i].half[1]);
    }
    f->total = f->first;
    sums_add(&f->total, &f->second);
    const struct plan_bn_sums *t = &f->total;
    f->phase_total_s = phase_sum(t);
    if (t->reports > 0)
        f->phase_coverage = (double)t->phase_reports / (double)t->reports;
    int d = largest(t);
    if (d >= 0) {
        f->has_dominant = 1;
        f->dominant = (enum plan_phase)d;
        f->share_of_phase = t->phase_s[d] / f->phase_total_s;
        f->dominates = f->share_of_phase > PLAN_BN_DOMINANT;
        f->has_share_of_busy = t->phase_busy_s > 0;
        if (f->has_share_of_busy)
            f->share_of_busy = t->phase_s[d] / t->phase_busy_s;
        double a = phase_sum(&f->first), b = phase_sum(&f->second);
        if (a > 0 && b > 0) {
            f->first_share = f->first.phase_s[d] / a;
            f->second_share = f->second.phase_s[d] / b;
            double dd = f->second_share - f->first_share;
            f->trend = dd > PLAN_BN_TREND    ? PLAN_BN_RISING
                       : dd < -PLAN_BN_TREND ? PLAN_BN_FALLING
                                             : PLAN_BN_STEADY;
        }
    }
    double units = t->completed + t->failed + t->retried;
    f->has_retry_share = units > 0;
    if (units > 0)
        f->retry_share = (t->failed + t->retried) / units;
    pick_named(hosts, nh, f);
}

/* The GPU utilization of the named hosts that gave phases (all of them when only_phases
 * is 0): a host whose reports gave no phases says nothing about the phases' verdict. */
static int phase_hosts_util(const struct plan_bn_host *hosts, size_t nh,
                            const struct plan_bn_signals *sig, size_t n, int only_phases,
                            double *pct)
{
    double w = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        const struct plan_bn_signals *g = &sig[i];
        if (!g->has_gpu || !g->has_util || g->gpu_samples <= 0)
            continue;
        int gave = !only_phases;
        for (size_t j = 0; !gave && j < nh; j++)
            gave = g->host_id && strcmp(hosts[j].id, g->host_id) == 0 &&
                   hosts[j].half[0].phase_reports + hosts[j].half[1].phase_reports > 0;
        if (!gave)
            continue;
        w += (double)g->gpu_samples;
        s += g->util_pct * (double)g->gpu_samples;
    }
    *pct = w > 0 ? s / w : 0;
    return w > 0;
}

static void note(struct plan_bn_finding *f, const char *s)
{
    if (f->nnotes < PLAN_BN_NOTES_MAX)
        f->notes[f->nnotes++] = s;
}

static void diag(struct plan_bn_finding *f, const char *test, const char *host)
{
    f->test_kind = PLAN_BN_TEST_DIAGNOSTICS;
    f->tests[0] = test;
    f->ntests = 1;
    f->test_host_id = host;
}

/* "load is 41% of busy time" (or "of the phase time" when busy time is unknown). */
static int share_text(const struct plan_bn_finding *f, char *out, size_t n)
{
    if (f->has_share_of_busy)
        return snprintf(out, n, "%s is %.0f%% of busy time (%.0f%% of the phase time)",
                        plan_phase_names[f->dominant], f->share_of_busy * 100,
                        f->share_of_phase * 100);
    return snprintf(out, n, "%s is %.0f%% of the phase time", plan_phase_names[f->dominant],
                    f->share_of_phase * 100);
}

/* The signals of the host whose gate storage read is slowest (ties: first named), else
 * NULL. */
static const struct plan_bn_signals *slowest_storage(const struct plan_bn_signals *sig, size_t n)
{
    const struct plan_bn_signals *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (sig[i].has_storage && (best == NULL || sig[i].read_mbps < best->read_mbps))
            best = &sig[i];
    return best;
}

static const struct plan_bn_signals *slowest_bw(const struct plan_bn_signals *sig, size_t n)
{
    const struct plan_bn_signals *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (sig[i].has_bw && (best == NULL || sig[i].busbw_gbps < best->busbw_gbps))
            best = &sig[i];
    return best;
}

static const struct plan_bn_signals *signals_of(const struct plan_bn_signals *sig, size_t n,
                                                const char *host)
{
    for (size_t i = 0; host && i < n; i++)
        if (sig[i].host_id && strcmp(sig[i].host_id, host) == 0)
            return &sig[i];
    return NULL;
}

/* load or write dominates: the storage test on the slowest named host. */
static void storage_rule(const struct plan_bn_host *hosts, const struct plan_bn_signals *sig,
                         size_t n, struct plan_bn_finding *f)
{
    const struct plan_bn_signals *s = slowest_storage(sig, n);
    const char *host = s ? s->host_id : f->nnamed ? hosts[f->named[0]].id : NULL;
    if (s == NULL)
        s = signals_of(sig, n, host);
    diag(f, "storage", host);
    f->evidence = s;
    char share[160];
    share_text(f, share, sizeof share);
    size_t o = 0;
    if (s && s->has_storage && s->has_min_read)
        o = (size_t)snprintf(f->why, sizeof f->why,
                             "%s and the durable path read at %.0f MB/s in the last gate (pool "
                             "minimum %.0f)",
                             share, s->read_mbps, s->min_read_mbps);
    else if (s && s->has_storage)
        o = (size_t)snprintf(f->why, sizeof f->why,
                             "%s and the durable path read at %.0f MB/s in the last gate (no "
                             "minimum set)",
                             share, s->read_mbps);
    else
        o = (size_t)snprintf(f->why, sizeof f->why,
                             "%s and no gate of the host measured the durable path's read rate",
                             share);
    if (s && s->has_diag && o < sizeof f->why)
        o += (size_t)snprintf(f->why + o, sizeof f->why - o,
                              "; the storage test (diagnostics run %s) read at %.0f MB/s",
                              s->diag_run_id ? s->diag_run_id : "?", s->diag_read_mbps);
    if (o < sizeof f->why)
        snprintf(f->why + o, sizeof f->why - o, ": run the storage test on a drained host");
}

static void bandwidth_rule(const struct plan_bn_host *hosts, const struct plan_bn_signals *sig,
                           size_t n, struct plan_bn_finding *f)
{
    const struct plan_bn_signals *s = slowest_bw(sig, n);
    const char *host = s ? s->host_id : f->nnamed ? hosts[f->named[0]].id : NULL;
    if (s == NULL)
        s = signals_of(sig, n, host);
    diag(f, "bandwidth", host);
    f->evidence = s;
    char share[160];
    share_text(f, share, sizeof share);
    if (s && s->has_bw && s->has_min_bw)
        snprintf(f->why, sizeof f->why,
                 "%s and the last gate measured %.0f GB/s all-reduce bus bandwidth (minimum "
                 "%.0f): run the bandwidth test on a drained host and check the topology",
                 share, s->busbw_gbps, s->min_busbw_gbps);
    else if (s && s->has_bw)
        snprintf(f->why, sizeof f->why,
                 "%s and the last gate measured %.0f GB/s all-reduce bus bandwidth: run the "
                 "bandwidth test on a drained host and check the topology",
                 share, s->busbw_gbps);
    else
        snprintf(f->why, sizeof f->why,
                 "%s and no gate of the host measured the collective bandwidth: run the "
                 "bandwidth test on a drained host and check the topology",
                 share);
}

static void manual(struct plan_bn_finding *f, const char *what)
{
    f->test_kind = PLAN_BN_TEST_MANUAL;
    f->manual = what;
}

/* compute dominates: GPU-bound only with high utilization. */
static void compute_rule(const struct plan_bn_host *hosts, int has_util, double util,
                         struct plan_bn_finding *f)
{
    char share[160];
    share_text(f, share, sizeof share);
    if (!has_util) {
        f->verdict = PLAN_BN_COMPUTE_UNCONFIRMED;
        manual(f, "monitor");
        snprintf(f->why, sizeof f->why,
                 "%s but no GPU samples cover the window: not claimed GPU-bound; enable the "
                 "health monitor on the pool to confirm",
                 share);
    } else if (util >= PLAN_BN_UTIL_HIGH) {
        f->verdict = PLAN_BN_GPU_BOUND;
        f->test_kind = PLAN_BN_TEST_NONE;
        snprintf(f->why, sizeof f->why,
                 "%s and the GPUs averaged %.0f%% utilization: GPU-bound; a faster GPU or "
                 "more GPUs is what helps, no further test points elsewhere",
                 share, util);
    } else {
        f->verdict = PLAN_BN_COMPUTE_UNDERUTILIZED;
        diag(f, "workload", f->nnamed ? hosts[f->named[0]].id : NULL);
        snprintf(f->why, sizeof f->why,
                 "%s but the GPUs averaged %.0f%% utilization: the kernels do not fill the "
                 "GPUs or the compute phase includes waits; re-run the pool's workload test "
                 "on a drained host with one parameter changed (e.g. the batch size)",
                 share, util);
    }
}

static int low_util_small_compute(const struct plan_bn_finding *f, int has_util, double util)
{
    return has_util && util < PLAN_BN_UTIL_LOW && f->phase_total_s > 0 &&
           f->total.phase_s[PLAN_PHASE_COMPUTE] / f->phase_total_s < PLAN_BN_COMPUTE_SMALL;
}

static void input_rule(const struct plan_bn_host *hosts, int has_util, double util,
                       struct plan_bn_finding *f)
{
    f->verdict = PLAN_BN_INPUT_PIPELINE;
    manual(f, "input_pipeline");
    f->test_host_id = f->nnamed ? hosts[f->named[0]].id : NULL;
    double pre =
        f->phase_total_s > 0 ? f->total.phase_s[PLAN_PHASE_PREPROCESS] / f->phase_total_s * 100 : 0;
    char gpu[80] = "no GPU samples";
    if (has_util)
        snprintf(gpu, sizeof gpu, "the GPUs averaged %.0f%% utilization", util);
    snprintf(f->why, sizeof f->why,
             "preprocess is %.0f%% and compute %.0f%% of the phase time and %s: the GPUs wait "
             "on the CPU side (tokenization, decoding, the data loader); profile the input "
             "pipeline on the host, then re-run the same workload with one parameter changed "
             "(e.g. loader workers)",
             pre,
             f->phase_total_s > 0 ? f->total.phase_s[PLAN_PHASE_COMPUTE] / f->phase_total_s * 100
                                  : 0,
             gpu);
}

/* Reports without phases: unknown, never GPU-bound. */
static void unknown_rule(int has_util, double util, struct plan_bn_finding *f)
{
    f->verdict = PLAN_BN_UNKNOWN;
    f->test_kind = PLAN_BN_TEST_REPORT_PHASES;
    snprintf(f->why, sizeof f->why,
             "none of the %ld work reports of the window gave phases: where the time goes is "
             "unknown (not GPU-bound); report phases (queue, load, preprocess, compute, "
             "communication, write) to locate the bottleneck",
             f->total.reports);
    if (has_util && util < PLAN_BN_UTIL_LOW)
        note(f, "GPU utilization is low, but low utilization alone says nothing about the CPU "
                "or storage: compare it with the phases' data-wait times");
}

static void dominant_rule(const struct plan_bn_host *hosts, const struct plan_bn_signals *sig,
                          size_t n, int has_util, double util, struct plan_bn_finding *f)
{
    enum plan_phase d = f->dominant;
    if (!f->dominates) { /* only the low-utilization rule applies (plan_bn_decide) */
        input_rule(hosts, has_util, util, f);
    } else if (d == PLAN_PHASE_LOAD || d == PLAN_PHASE_WRITE) {
        f->verdict = d == PLAN_PHASE_LOAD ? PLAN_BN_STORAGE : PLAN_BN_WRITE;
        storage_rule(hosts, sig, n, f);
    } else if (d == PLAN_PHASE_COMMUNICATION) {
        f->verdict = PLAN_BN_BANDWIDTH;
        bandwidth_rule(hosts, sig, n, f);
    } else if (d == PLAN_PHASE_PREPROCESS || low_util_small_compute(f, has_util, util)) {
        input_rule(hosts, has_util, util, f);
    } else if (d == PLAN_PHASE_QUEUE) {
        f->verdict = PLAN_BN_QUEUE;
        manual(f, "capacity");
        char share[160];
        share_text(f, share, sizeof share);
        snprintf(f->why, sizeof f->why,
                 "%s: work waits before it starts (capacity or cold start), not on the host's "
                 "data path; see the scale_up recommendations",
                 share);
    } else {
        compute_rule(hosts, has_util, util, f);
    }
}

void plan_bn_decide(const struct plan_bn_host *hosts, size_t nh, const struct plan_bn_signals *sig,
                    size_t n, struct plan_bn_finding *f)
{
    double util = 0;
    int has_util = phase_hosts_util(hosts, nh, sig, n, f->total.phase_reports > 0, &util);
    if (f->total.reports == 0) {
        f->verdict = PLAN_BN_NO_DATA;
        snprintf(f->why, sizeof f->why, "no work report in the window");
    } else if (!f->has_dominant) {
        unknown_rule(has_util, util, f);
    } else if (!f->dominates && !low_util_small_compute(f, has_util, util)) {
        f->verdict = PLAN_BN_MIXED;
        snprintf(f->why, sizeof f->why,
                 "no phase dominates: the largest, %s, is %.0f%% of the phase time (a phase "
                 "dominates above %.0f%%); nothing points to one test",
                 plan_phase_names[f->dominant], f->share_of_phase * 100, PLAN_BN_DOMINANT * 100);
    } else {
        dominant_rule(hosts, sig, n, has_util, util, f);
    }
    if (f->has_dominant && f->phase_coverage < 0.5)
        note(f, "fewer than half of the reports gave phases: the breakdown covers only them");
    if (f->has_retry_share && f->retry_share > PLAN_BN_RETRY_SHARE)
        note(f, "failed and retried units are over 5% of the work: time spent on retried work "
                "counts in the phases");
    for (size_t i = 0; i < nh; i++)
        if (plan_bn_repeated_loads(&hosts[i])) {
            note(f, "some hosts load their artifacts again and again (see repeated_loads): cache "
                    "them on the host's local disk");
            break;
        }
    const char *lead = f->has_dominant ? plan_phase_names[f->dominant] : "unknown";
    snprintf(f->summary, sizeof f->summary, "%s: dominant phase %s",
             plan_bn_verdict_names[f->verdict], lead);
}
