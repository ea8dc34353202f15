/* monitor_policy.h — what the health monitor's readings mean for a host's state, and which
 * GPU readings isolate a host (pure logic, no I/O). The monitor (provisioner/monitor/)
 * stores a sample or a miss and reads the host's state in one transaction, asks here, and
 * applies the answer through the one host-command path (provisioner/host_port.h). The
 * kernel log's Xid and SXid rules are planner/xid_policy.h's.
 *
 * The monitor watches ready, draining, drained (serving: in service or on the way out of
 * it), unreachable and quarantined hosts:
 *   - unreachable_after misses in a row make a serving host unreachable;
 *   - a sample from an unreachable host brings it back to the state it had when it became
 *     unreachable, when that was a serving one, else to drained (it must be gated before
 *     it serves);
 *   - an isolating reading quarantines a serving or unreachable host (after the return
 *     above);
 *   - a host key that is not the pin quarantines a serving or unreachable host. */
#ifndef GPUFLEET_MONITOR_POLICY_H
#define GPUFLEET_MONITOR_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "planner/host_state.h"

/* ready, draining or drained. */
int plan_mon_serving(int state);

/* One event to apply, in order. */
struct plan_mon_step {
    enum plan_host_event ev;
    int hint; /* the wanted to state, or -1 */
};
#define PLAN_MON_MAX_STEPS 2

/* state: the host's (enum plan_host_state, -1 unknown); back: the state it had before it
 * became unreachable (-1 unknown). Each returns how many steps it wrote to out. */
int plan_mon_after_missed(int state, int missed, int unreachable_after,
                          struct plan_mon_step out[PLAN_MON_MAX_STEPS]);
int plan_mon_after_sample(int state, int back, int isolate,
                          struct plan_mon_step out[PLAN_MON_MAX_STEPS]);
int plan_mon_after_key_mismatch(int state, struct plan_mon_step out[PLAN_MON_MAX_STEPS]);

/* ---- one GPU's readings ---- */

/* A reading: known or not (a field the sample could not read decides nothing). */
struct plan_mon_gpu {
    const char *uuid;
    int remap_failure, remap_pending, retired_pending; /* 1 yes, 0 no, -1 not read */
    double ecc_uncorrected;                            /* volatile count; < 0: not read */
    double ecc_before; /* the count of the host's previous sample; < 0: none yet */
    int hw_slowdown, hw_thermal, hw_power_brake; /* clock event reasons; -1: not read */
};

/* What a reading shows. */
enum plan_mon_finding_kind { PLAN_MON_REMAP, PLAN_MON_ECC, PLAN_MON_THERMAL };
struct plan_mon_finding {
    enum plan_mon_finding_kind kind;
    int isolate; /* hardware evidence: quarantine the host; else recorded */
    char message[200];
};
#define PLAN_MON_MAX_FINDINGS 4

/* The GPUs of a host a sample records (migrations/0027 applies the same rule): the pool's
 * gpu_count plus a margin of PLAN_MON_GPU_MARGIN (a GPU or two beyond what the pool
 * expects is worth seeing, not trusting), never more than PLAN_MON_GPU_MAX; a pool
 * without a count allows PLAN_MON_GPU_MAX. More than that is evidence (isolate). */
#define PLAN_MON_GPU_MARGIN 2
#define PLAN_MON_GPU_MAX    64
int plan_mon_gpu_cap(int gpu_count);

/* The findings of one GPU's readings, in the order an operator reads them (remap, page
 * retirement, ECC, clocks). Returns how many were written to out. */
size_t plan_mon_gpu_findings(const struct plan_mon_gpu *g,
                             struct plan_mon_finding out[PLAN_MON_MAX_FINDINGS]);

/* When a host's next sample falls due, given the one now starting at now (µs) that fell
 * due at due, every step µs. On time (started within step / PLAN_MON_LATE_DIV of due) the
 * samples keep their phase: due + step. A sample that started later (the connection came
 * up after its due time, the worker was held up) anchors the next one: now + step, so that
 * no two samples of a host are closer than an interval (a fixed phase would make the next
 * one come early by the delay), and a host behind never takes a burst to catch up. */
#define PLAN_MON_LATE_DIV 10
int64_t plan_mon_next_due(int64_t due, int64_t now, int64_t step);

#endif
