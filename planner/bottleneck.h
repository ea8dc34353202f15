/* bottleneck.h — where the time goes, and which test to run next (issue 26, item 4).
 * Pure: no I/O. The caller reads the phase sums of a target (a pool, a brief or a host)
 * per host and per half of the window (db/bottlenecks.c, from the work report rollups),
 * then the corroborating signals of the hosts the finding names (GPU samples, the newest
 * gate's bandwidth and storage_throughput values, the newest storage diagnostics), and
 * this file applies the rules (docs/bottlenecks.md).
 *
 * Phases (work reports' `phases`, seconds): queue, load, preprocess, compute,
 * communication, write. Only reports that gave phases count in the breakdown; the
 * dominant phase's share is of the phase time (Σ phases) and of the busy time of the
 * reports that gave phases (phase_busy_seconds).
 *
 * Rules, in order (thresholds below; compared strictly where they say "over"/"under"):
 *   no_data        no work report in the window: nothing to say.
 *   unknown        reports, but none gave phases: the dominant phase is "unknown" (never
 *                  "GPU-bound"); next test: report phases. Low GPU utilization alone is
 *                  noted and explicitly said to prove nothing about CPU or storage.
 *   mixed          the largest phase has at most PLAN_BN_DOMINANT (40%) of the phase
 *                  time: no single phase dominates; nothing is claimed.
 *   storage        load dominates: run the storage test on a drained host (the host
 *                  with the slowest gate storage read among those named, else the one
 *                  with the most load time). The gate's storage_throughput read rate
 *                  against its minimum and the newest storage diagnostics are evidence.
 *   write          write dominates: the storage test too (it measures the scratch write).
 *   bandwidth      communication dominates: run the bandwidth test (the gate's
 *                  all-reduce bus bandwidth against its minimum is evidence).
 *   input_pipeline preprocess dominates, or the GPUs' mean utilization is under
 *                  PLAN_BN_UTIL_LOW (40%) while compute has under PLAN_BN_COMPUTE_SMALL
 *                  (30%) of the phase time and neither load, write nor communication
 *                  dominates: the CPU side (tokenization, decoding, the data loader).
 *                  No automated test: next_test kind "manual".
 *   queue          queue (and cold start) dominates: capacity, not the host.
 *   gpu_bound      compute dominates and the GPUs' mean utilization is at least
 *                  PLAN_BN_UTIL_HIGH (70%) — only then.
 *   compute_unconfirmed  compute dominates without GPU samples: not claimed GPU-bound.
 *   compute_underutilized  compute dominates but the GPUs' mean utilization is under
 *                  70%: re-run the pool's workload test (one parameter changed).
 *
 * Trend: the dominant phase's share of the phase time in the first and the second half
 * of the window; "rising"/"falling" when they differ by more than PLAN_BN_TREND (5
 * points), "steady" otherwise, "unknown" when a half has no phase time.
 *
 * Repeated model loads (per host): load time recorded in at least PLAN_BN_REPEAT_BUCKETS
 * (3) buckets of the read's grain (hours, days or weeks: db/bottlenecks.h) and, in those
 * buckets, at least PLAN_BN_REPEAT_BYTES (1 GB) moved per bucket on average: the host
 * moves its artifacts again and again instead of caching them. Reported with any verdict.
 *
 * GPU utilization (the rules above): the mean over the named hosts' monitor samples,
 * weighted by samples, counting only hosts whose reports gave phases (a host without a
 * breakdown corroborates nothing); every named host's when none gave phases.
 *
 * Retries: (failed + retried) ÷ (completed + failed + retried) of the window; over
 * PLAN_BN_RETRY_SHARE (5%) it is noted (retried work counts in the phases). */
#ifndef GPUFLEET_BOTTLENECK_H
#define GPUFLEET_BOTTLENECK_H

#include <stddef.h>

#define PLAN_BN_DOMINANT       0.40
#define PLAN_BN_UTIL_LOW       40.0 /* percent */
#define PLAN_BN_UTIL_HIGH      70.0 /* percent */
#define PLAN_BN_COMPUTE_SMALL  0.30
#define PLAN_BN_TREND          0.05
#define PLAN_BN_REPEAT_BUCKETS 3
#define PLAN_BN_REPEAT_BYTES   1e9
#define PLAN_BN_RETRY_SHARE    0.05
#define PLAN_BN_NAMED_MAX      10 /* hosts named by a finding (their signals are read) */
#define PLAN_BN_NOTES_MAX      6

enum plan_phase {
    PLAN_PHASE_QUEUE,
    PLAN_PHASE_LOAD,
    PLAN_PHASE_PREPROCESS,
    PLAN_PHASE_COMPUTE,
    PLAN_PHASE_COMMUNICATION,
    PLAN_PHASE_WRITE,
    PLAN_PHASE_COUNT
};
extern const char *const plan_phase_names[]; /* queue … write, NULL */

/* Work reports summed over a stretch (a host's half of the window, or a whole target). */
struct plan_bn_sums {
    long reports;        /* every report */
    long phase_reports;  /* reports that gave phases */
    double busy_s;       /* Σ busy_seconds of every report */
    double phase_busy_s; /* Σ busy_seconds of the reports that gave phases */
    double phase_s[PLAN_PHASE_COUNT];
    double completed, failed, retried;
    double bytes_moved;
};

/* One host of the target: its sums per half of the window ([0] first, [1] second), and
 * the buckets in which it recorded load time with the bytes moved in them. */
struct plan_bn_host {
    const char *id, *pool_id;
    struct plan_bn_sums half[2];
    long load_buckets;
    double load_bytes;
};

/* What corroborates a finding, for one named host (absent signals: has_* 0). */
struct plan_bn_signals {
    const char *host_id;
    /* the monitor over the window (gpu_samples_1h, every GPU of the host) */
    int has_gpu;
    long gpu_samples;
    int has_util, has_mem, has_power;
    double util_pct, mem_used_pct, power_w; /* means */
    /* the newest gate run with a storage_throughput check holding read_mbps */
    int has_storage;
    const char *storage_run_id, *storage_at;
    double read_mbps;
    int has_min_read;
    double min_read_mbps;
    /* the newest gate run with a bandwidth check holding allreduce_busbw_gbps */
    int has_bw;
    const char *bw_run_id, *bw_at;
    double busbw_gbps;
    int has_min_bw;
    double min_busbw_gbps;
    /* the newest diagnostics run with a storage_throughput check holding read_mbps */
    int has_diag;
    const char *diag_run_id, *diag_at, *diag_status;
    double diag_read_mbps;
    int has_diag_min;
    double diag_min_read_mbps;
};

enum plan_bn_verdict {
    PLAN_BN_NO_DATA,
    PLAN_BN_UNKNOWN,
    PLAN_BN_MIXED,
    PLAN_BN_STORAGE,
    PLAN_BN_WRITE,
    PLAN_BN_BANDWIDTH,
    PLAN_BN_INPUT_PIPELINE,
    PLAN_BN_QUEUE,
    PLAN_BN_GPU_BOUND,
    PLAN_BN_COMPUTE_UNCONFIRMED,
    PLAN_BN_COMPUTE_UNDERUTILIZED,
};
extern const char *const plan_bn_verdict_names[];

enum plan_bn_trend { PLAN_BN_TREND_UNKNOWN, PLAN_BN_STEADY, PLAN_BN_RISING, PLAN_BN_FALLING };
extern const char *const plan_bn_trend_names[];

enum plan_bn_test_kind {
    PLAN_BN_TEST_NONE,
    PLAN_BN_TEST_DIAGNOSTICS,
    PLAN_BN_TEST_REPORT_PHASES,
    PLAN_BN_TEST_MANUAL
};
extern const char *const plan_bn_test_kind_names[];

struct plan_bn_finding {
    enum plan_bn_verdict verdict;
    struct plan_bn_sums total, first, second; /* the target's sums */
    int has_dominant; /* a phase was reported: dominant holds (else "unknown") */
    enum plan_phase dominant;
    int dominates;                        /* its share of the phase time is over 40% */
    double phase_total_s;                 /* Σ phases */
    double share_of_phase, share_of_busy; /* of the dominant phase */
    int has_share_of_busy;
    double phase_coverage; /* phase_reports ÷ reports */
    enum plan_bn_trend trend;
    double first_share, second_share; /* the dominant's share per half, when known */
    int has_retry_share;
    double retry_share;
    /* the hosts named, by the dominant phase's seconds (or busy time), indexes into hosts */
    size_t named[PLAN_BN_NAMED_MAX];
    size_t nnamed;
    /* the next test */
    enum plan_bn_test_kind test_kind;
    const char *tests[2]; /* diagnostics tests: "storage", "bandwidth", "workload" */
    size_t ntests;
    const char *manual;       /* manual check: "input_pipeline", "capacity", "monitor", … */
    const char *test_host_id; /* the drained host to test, or NULL */
    const struct plan_bn_signals *evidence; /* the signals the why quotes, or NULL */
    char why[640];
    char summary[320];
    const char *notes[PLAN_BN_NOTES_MAX];
    size_t nnotes;
};

/* Sums the hosts (any order) into the target's totals, picks the dominant phase, the
 * trend, the retries share and the hosts to name (f->named: the ones whose signals the
 * caller reads next). Step 1 of 2. */
void plan_bn_summarize(const struct plan_bn_host *hosts, size_t nh, struct plan_bn_finding *f);

/* Applies the rules with the named hosts' signals (sig[i] for the host named i-th, n of
 * them; NULL/0 when none were read) and writes the verdict, the next test, why and the
 * notes. Step 2 of 2. sig must outlive f (f->evidence points into it). */
void plan_bn_decide(const struct plan_bn_host *hosts, size_t nh, const struct plan_bn_signals *sig,
                    size_t n, struct plan_bn_finding *f);

/* Whether host h moves its artifacts again and again (the rule above). */
int plan_bn_repeated_loads(const struct plan_bn_host *h);

#endif
