/* rollout_create.c — see rollout_create.h. */
#include "planner/rollout_create.h"

#include <stdio.h>
#include <string.h>

#include "planner/rollout.h"

const char *const plan_ro_refusal_names[PLAN_RO__REFUSALS] = {
    [PLAN_RO_OK] = "ok",
    [PLAN_RO_POOL_UNKNOWN] = "pool_unknown",
    [PLAN_RO_STACK_UNKNOWN] = "stack_unknown",
    [PLAN_RO_ACTIVE] = "active",
    [PLAN_RO_NOTHING] = "nothing",
    [PLAN_RO_DRIVER_MISMATCH] = "driver_mismatch",
    [PLAN_RO_NO_WORKLOAD] = "no_workload",
    [PLAN_RO_NO_BASELINE] = "no_baseline",
    [PLAN_RO_CANARY_TOO_BIG] = "canary_too_big",
    [PLAN_RO_NOT_FOUND] = "not_found",
    [PLAN_RO_BAD_STATE] = "bad_state",
};

const char *const plan_ro_ctl_names[PLAN_RO_CTL__COUNT] = {
    [PLAN_RO_CTL_PAUSE] = "pause",
    [PLAN_RO_CTL_RESUME] = "resume",
    [PLAN_RO_CTL_ABORT] = "abort",
};

static int is(const char *s, const char *v)
{
    return s != NULL && !strcmp(s, v);
}

int plan_ro_in_scope(const struct plan_ro_candidate *h, const char *stack_id, char *reason,
                     size_t len)
{
    /* the target is a stack: a host with none is never on it */
    int on_target = h->current_stack_id != NULL && is(stack_id, h->current_stack_id);
    if (is(h->state, "ready") && !on_target) {
        if (len > 0)
            reason[0] = '\0';
        return 1;
    }
    if (on_target)
        snprintf(reason, len, "already on the target stack");
    else
        snprintf(reason, len, "the host is %s, not ready", h->state ? h->state : "unknown");
    return 0;
}

int plan_ro_driver_matches(const char *host_driver, const char *stack_driver)
{
    return host_driver != NULL && is(stack_driver, host_driver);
}

int plan_ro_needs_baseline(const struct plan_ro_request *rq)
{
    return rq->ratio_set && !rq->force;
}

enum plan_ro_refusal plan_ro_create_refusal(const struct plan_ro_request *rq,
                                            const struct plan_ro_create_facts *f)
{
    if (!f->pool_found)
        return PLAN_RO_POOL_UNKNOWN;
    if (!f->stack_found)
        return PLAN_RO_STACK_UNKNOWN;
    if (f->active)
        return PLAN_RO_ACTIVE;
    if (f->in_scope <= 0)
        return PLAN_RO_NOTHING;
    if (f->mismatched > 0)
        return PLAN_RO_DRIVER_MISMATCH;
    if (rq->ratio_set && !f->has_workload)
        return PLAN_RO_NO_WORKLOAD;
    if (plan_ro_needs_baseline(rq) && !f->any_baseline)
        return PLAN_RO_NO_BASELINE;
    if (rq->canary > f->in_scope)
        return PLAN_RO_CANARY_TOO_BIG;
    return PLAN_RO_OK;
}

void plan_ro_layout(const struct plan_ro_request *rq, int in_scope, struct plan_ro_layout *out)
{
    out->max_hosts =
        plan_rollout_max_unavailable(rq->max_unavailable, rq->max_unavailable_pct, in_scope);
    out->waves = plan_rollout_waves(in_scope, rq->canary, out->max_hosts);
}

enum plan_ro_refusal plan_ro_control(enum plan_ro_ctl action, const char *state, int touched,
                                     struct plan_ro_ctl_decision *d)
{
    memset(d, 0, sizeof *d);
    switch (action) {
    case PLAN_RO_CTL_PAUSE:
        if (is(state, "running"))
            d->to = "paused";
        break;
    case PLAN_RO_CTL_RESUME:
        if (is(state, "paused"))
            d->to = "running";
        break;
    case PLAN_RO_CTL_ABORT:
        if (is(state, "running") || is(state, "paused")) {
            d->to = touched ? "rolling_back" : "aborted";
            d->roll_back = touched;
            d->release = !touched;
            d->abort = 1;
        }
        break;
    case PLAN_RO_CTL__COUNT: break;
    }
    return d->to != NULL ? PLAN_RO_OK : PLAN_RO_BAD_STATE;
}
