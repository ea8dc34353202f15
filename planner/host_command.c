/* host_command.c — see host_command.h. */
#include "planner/host_command.h"

#include <string.h>

const char *const plan_cmd_names[PLAN_CMD__COUNT] = {
    [PLAN_CMD_PROVISION] = "provision",
    [PLAN_CMD_GATE] = "gate",
    [PLAN_CMD_DIAGNOSTICS] = "diagnostics",
    [PLAN_CMD_DRAIN] = "drain",
    [PLAN_CMD_RESUME] = "resume",
    [PLAN_CMD_RELEASE] = "release",
    [PLAN_CMD_STOP] = "stop",
    [PLAN_CMD_DELETE] = "delete",
    [PLAN_CMD_MOVE_POOL] = "move_pool",
    [PLAN_CMD_DRILL] = "drill",
};

const char *const plan_cmd_refusal_names[PLAN_CMD__REFUSALS] = {
    [PLAN_CMD_OK] = "ok",
    [PLAN_CMD_NOT_FOUND] = "not_found",
    [PLAN_CMD_FORBIDDEN] = "forbidden",
    [PLAN_CMD_BUSY] = "busy",
    [PLAN_CMD_NOT_PROVISIONED] = "not_provisioned",
    [PLAN_CMD_DRAINING] = "draining",
    [PLAN_CMD_NOT_DRAINED] = "not_drained",
    [PLAN_CMD_NO_GATE] = "no_gate",
    [PLAN_CMD_QUARANTINED] = "quarantined",
    [PLAN_CMD_STOPPED] = "stopped",
    [PLAN_CMD_NOT_QUARANTINED] = "not_quarantined",
    [PLAN_CMD_CONFLICT] = "conflict",
    [PLAN_CMD_NO_STOP_COMMAND] = "no_stop_command",
    [PLAN_CMD_UNKNOWN_STACK] = "unknown_stack",
    [PLAN_CMD_UNKNOWN_POOL] = "unknown_pool",
    [PLAN_CMD_ADDRESS_REFUSED] = "address_refused",
    [PLAN_CMD_NAME_TAKEN] = "name_taken",
    [PLAN_CMD_UNKNOWN_REFERENCE] = "unknown_reference",
    [PLAN_CMD_CREDENTIAL_NOT_ALLOWED] = "credential_not_allowed",
    [PLAN_CMD_QUOTA_EXCEEDED] = "quota_exceeded",
    [PLAN_CMD_BUDGET_EXHAUSTED] = "budget_exhausted",
};

enum plan_host_actor plan_cmd_actor(int system, int admin)
{
    return system ? PLAN_ACTOR_SYSTEM : admin ? PLAN_ACTOR_ADMIN : PLAN_ACTOR_OPERATOR;
}

int plan_gate_covers_stack(const char *accepted_gate_stack_id, const char *current_stack_id)
{
    return accepted_gate_stack_id != NULL && current_stack_id != NULL &&
           accepted_gate_stack_id[0] != '\0' && !strcmp(accepted_gate_stack_id, current_stack_id);
}

static int stopped(const struct plan_host_facts *f)
{
    return f->state == HS_STOPPED || f->state == HS_STOPPING;
}

/* The state machine's answer for ev from the facts' state (hint: the wanted to state). */
static enum plan_host_answer ask(const struct plan_host_facts *f, enum plan_host_event ev, int hint,
                                 enum plan_host_actor actor)
{
    enum plan_host_state to;
    unsigned fx;
    if (f->state < 0 || f->state >= HS__COUNT)
        return PLAN_HOST_NOT_ALLOWED;
    return plan_host_next((enum plan_host_state)f->state, f->held, ev, hint, actor, &to, &fx);
}

/* A refusal of the state machine as the command's: the hold, the actor, a stopped host,
 * else the command's own reading of "not now". */
static enum plan_cmd_refusal refused(const struct plan_host_facts *f, enum plan_host_answer ans,
                                     enum plan_cmd_refusal otherwise)
{
    if (ans == PLAN_HOST_QUARANTINED)
        return PLAN_CMD_QUARANTINED;
    if (ans == PLAN_HOST_FORBIDDEN)
        return PLAN_CMD_FORBIDDEN;
    return stopped(f) ? PLAN_CMD_STOPPED : otherwise;
}

static enum plan_cmd_refusal job_command(enum plan_cmd cmd, const struct plan_host_facts *f,
                                         enum plan_host_actor actor, struct plan_cmd_decision *d)
{
    enum plan_host_event ev = cmd == PLAN_CMD_PROVISION ? HE_PROVISION_REQUESTED
                              : cmd == PLAN_CMD_GATE    ? HE_GATE_REQUESTED
                                                        : HE_DIAGNOSTICS_REQUESTED;
    enum plan_host_answer ans = ask(f, ev, -1, actor);
    /* a drill runs the host's durable-state restore and its stack's workload: only on a
     * drained host (never one doing work, nor a quarantined one); its job runs through the
     * diagnostics events (drained -> diagnosing -> drained) */
    if (cmd == PLAN_CMD_DRILL && f->state != HS_DRAINED)
        return f->held ? PLAN_CMD_QUARANTINED : refused(f, ans, PLAN_CMD_NOT_DRAINED);
    if (ans != PLAN_HOST_OK) {
        if (cmd == PLAN_CMD_PROVISION) /* a job's own state: it runs one now */
            return ans == PLAN_HOST_QUARANTINED ? PLAN_CMD_QUARANTINED
                   : ans == PLAN_HOST_FORBIDDEN ? PLAN_CMD_FORBIDDEN
                                                : PLAN_CMD_BUSY;
        if (cmd == PLAN_CMD_DIAGNOSTICS || cmd == PLAN_CMD_DRILL)
            return refused(f, ans, PLAN_CMD_NOT_DRAINED);
        int draining = f->state == HS_DRAINING || f->state == HS_DRAINED;
        return refused(f, ans, draining ? PLAN_CMD_DRAINING : PLAN_CMD_BUSY);
    }
    if (cmd == PLAN_CMD_GATE && !f->has_stack)
        return PLAN_CMD_NOT_PROVISIONED;
    if (f->active_job)
        return PLAN_CMD_BUSY;
    d->ev = ev;
    d->job_kind = plan_cmd_names[cmd];
    return PLAN_CMD_OK;
}

static enum plan_cmd_refusal stop_command(const struct plan_host_facts *f,
                                          enum plan_host_actor actor, int force,
                                          struct plan_cmd_decision *d)
{
    if (force && actor != PLAN_ACTOR_ADMIN)
        return PLAN_CMD_FORBIDDEN; /* only an admin may cancel another's job to stop */
    if (!f->stop_command_ok)
        return PLAN_CMD_NO_STOP_COMMAND;
    enum plan_host_answer ans = ask(f, HE_STOP_REQUESTED, -1, actor);
    if (ans != PLAN_HOST_OK)
        return ans == PLAN_HOST_FORBIDDEN ? PLAN_CMD_FORBIDDEN
               : f->state == HS_STOPPED   ? PLAN_CMD_STOPPED
                                          : PLAN_CMD_BUSY;
    if (f->active_job && !force)
        return PLAN_CMD_BUSY;
    d->ev = HE_STOP_REQUESTED;
    d->job_kind = "stop";
    d->supersede = f->active_job;
    return PLAN_CMD_OK;
}

static enum plan_cmd_refusal move_command(const struct plan_host_facts *f,
                                          enum plan_host_actor actor, struct plan_cmd_decision *d)
{
    if (!f->move_changes_pool)
        return PLAN_CMD_OK; /* labels or credential: no state change */
    if (f->state != HS_REGISTERED && f->state != HS_DRAINED && f->state != HS_STOPPED)
        return PLAN_CMD_NOT_DRAINED;
    enum plan_host_answer ans = ask(f, HE_POOL_MOVED, -1, actor);
    if (ans == PLAN_HOST_FORBIDDEN)
        return PLAN_CMD_FORBIDDEN;
    if (ans != PLAN_HOST_OK || f->active_job)
        return f->active_job ? PLAN_CMD_BUSY : PLAN_CMD_NOT_DRAINED;
    d->ev = HE_POOL_MOVED;
    return PLAN_CMD_OK;
}

static enum plan_cmd_refusal state_command(enum plan_cmd cmd, const struct plan_host_facts *f,
                                           enum plan_host_actor actor, struct plan_cmd_decision *d)
{
    enum plan_host_answer ans;
    switch (cmd) {
    case PLAN_CMD_DRAIN:
        if ((ans = ask(f, HE_DRAIN, -1, actor)) != PLAN_HOST_OK)
            return refused(f, ans, PLAN_CMD_CONFLICT);
        if (f->state != HS_DRAINING && f->state != HS_DRAINED) { /* else: nothing to do */
            d->ev = HE_DRAIN;
            d->then_drained = !f->active_job;
        }
        return PLAN_CMD_OK;
    case PLAN_CMD_RESUME:
        if ((ans = ask(f, HE_RESUME, -1, actor)) != PLAN_HOST_OK)
            return refused(f, ans, PLAN_CMD_NOT_DRAINED);
        if (!f->gate_covers_stack)
            return PLAN_CMD_NO_GATE;
        d->ev = HE_RESUME;
        return PLAN_CMD_OK;
    case PLAN_CMD_RELEASE:
        if (!f->held)
            return PLAN_CMD_NOT_QUARANTINED;
        d->hint = f->has_stack ? HS_PROVISIONED : HS_REGISTERED;
        if ((ans = ask(f, HE_RELEASE, d->hint, actor)) != PLAN_HOST_OK)
            return ans == PLAN_HOST_FORBIDDEN ? PLAN_CMD_FORBIDDEN : PLAN_CMD_CONFLICT;
        d->ev = HE_RELEASE;
        d->repin = 1;
        return PLAN_CMD_OK;
    case PLAN_CMD_DELETE:
        if (f->running_job)
            return PLAN_CMD_BUSY;
        if ((ans = ask(f, HE_DELETED, -1, actor)) != PLAN_HOST_OK)
            return ans == PLAN_HOST_FORBIDDEN ? PLAN_CMD_FORBIDDEN : PLAN_CMD_BUSY;
        d->ev = HE_DELETED;
        return PLAN_CMD_OK;
    case PLAN_CMD_MOVE_POOL: return move_command(f, actor, d);
    default: return PLAN_CMD_CONFLICT;
    }
}

enum plan_cmd_refusal plan_host_command(enum plan_cmd cmd, const struct plan_host_facts *f,
                                        enum plan_host_actor actor, int force,
                                        struct plan_cmd_decision *d)
{
    *d = (struct plan_cmd_decision){.ev = HE__COUNT, .hint = -1};
    switch (cmd) {
    case PLAN_CMD_PROVISION:
    case PLAN_CMD_GATE:
    case PLAN_CMD_DIAGNOSTICS:
    case PLAN_CMD_DRILL: return job_command(cmd, f, actor, d);
    case PLAN_CMD_STOP: return stop_command(f, actor, force, d);
    default: return state_command(cmd, f, actor, d);
    }
}
