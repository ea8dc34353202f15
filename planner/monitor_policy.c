/* monitor_policy.c — see monitor_policy.h. */
#include "planner/monitor_policy.h"

#include <stdio.h>

int plan_mon_serving(int state)
{
    return state == HS_READY || state == HS_DRAINING || state == HS_DRAINED;
}

static int step(struct plan_mon_step *out, int n, enum plan_host_event ev, int hint)
{
    out[n] = (struct plan_mon_step){ev, hint};
    return n + 1;
}

int plan_mon_after_missed(int state, int missed, int unreachable_after,
                          struct plan_mon_step out[PLAN_MON_MAX_STEPS])
{
    if (missed >= unreachable_after && plan_mon_serving(state))
        return step(out, 0, HE_MONITOR_UNREACHABLE, -1);
    return 0;
}

int plan_mon_after_sample(int state, int back, int isolate,
                          struct plan_mon_step out[PLAN_MON_MAX_STEPS])
{
    int n = 0;
    if (state == HS_UNREACHABLE) {
        state = plan_mon_serving(back) ? back : HS_DRAINED; /* gated before it serves */
        n = step(out, n, HE_MONITOR_REACHABLE, state);
    }
    if (isolate && (plan_mon_serving(state) || state == HS_UNREACHABLE))
        n = step(out, n, HE_MONITOR_ISOLATED, -1);
    return n;
}

int plan_mon_after_key_mismatch(int state, struct plan_mon_step out[PLAN_MON_MAX_STEPS])
{
    if (plan_mon_serving(state) || state == HS_UNREACHABLE)
        return step(out, 0, HE_KEY_MISMATCH, -1);
    return 0; /* quarantined already, or not watched */
}

static size_t find(struct plan_mon_finding *out, size_t n, enum plan_mon_finding_kind kind,
                   int isolate, const char *fmt, const char *uuid, double a, double b)
{
    out[n].kind = kind;
    out[n].isolate = isolate;
    snprintf(out[n].message, sizeof out[n].message, fmt, uuid, a, b);
    return n + 1;
}

size_t plan_mon_gpu_findings(const struct plan_mon_gpu *g,
                             struct plan_mon_finding out[PLAN_MON_MAX_FINDINGS])
{
    size_t n = 0;
    const char *u = g->uuid ? g->uuid : "?";
    if (g->remap_failure == 1)
        n = find(out, n, PLAN_MON_REMAP, 1, "row remapping failed on GPU %s", u, 0, 0);
    else if (g->remap_pending == 1)
        n = find(out, n, PLAN_MON_REMAP, 0, "a row remap is pending on GPU %s (reset to apply)", u,
                 0, 0);
    if (g->retired_pending == 1)
        n = find(out, n, PLAN_MON_ECC, 0, "page retirement is pending on GPU %s", u, 0, 0);
    double now = g->ecc_uncorrected, last = g->ecc_before;
    if (now >= 0 && last >= 0 && now > last)
        n = find(out, n, PLAN_MON_ECC, 1,
                 "uncorrectable ECC errors on GPU %s grew from %.0f to %.0f", u, last, now);
    else if (now > 0 && last < 0)
        n = find(out, n, PLAN_MON_ECC, 0, "GPU %s has %.0f uncorrectable ECC errors (volatile)", u,
                 now, 0);
    if (g->hw_slowdown == 1 || g->hw_thermal == 1 || g->hw_power_brake == 1) {
        out[n].kind = PLAN_MON_THERMAL;
        out[n].isolate = 0;
        snprintf(out[n].message, sizeof out[n].message,
                 "GPU %s clocks held down by hardware (%s%s%s)", u,
                 g->hw_slowdown == 1 ? "HW slowdown " : "", g->hw_thermal == 1 ? "HW thermal " : "",
                 g->hw_power_brake == 1 ? "HW power brake" : "");
        n++;
    }
    return n;
}

int plan_mon_gpu_cap(int gpu_count)
{
    if (gpu_count <= 0 || gpu_count > PLAN_MON_GPU_MAX - PLAN_MON_GPU_MARGIN)
        return PLAN_MON_GPU_MAX;
    return gpu_count + PLAN_MON_GPU_MARGIN;
}

int64_t plan_mon_next_due(int64_t due, int64_t now, int64_t step)
{
    if (now - due > step / PLAN_MON_LATE_DIV)
        return now + step;
    return due + step;
}
