/* host_state.c — see host_state.h. */
#include "planner/host_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"

const char *const plan_host_state_names[HS__COUNT] = {
    "registered",    "provisioning", "provisioned", "gating",     "ready",
    "investigating", "quarantined",  "draining",    "drained",    "diagnosing",
    "stopping",      "stopped",      "failed",      "unreachable"};

#define OP PLAN_ACTOR_OPERATOR
#define AD PLAN_ACTOR_ADMIN
#define SY PLAN_ACTOR_SYSTEM
const struct plan_host_event_def plan_host_events[HE__COUNT] = {
    [HE_PROVISION_REQUESTED] = {"provision_requested", OP, "host.provision", 1},
    [HE_PROVISION_STARTED] = {"provision_started", SY, NULL, 1},
    [HE_PROVISION_SUCCEEDED] = {"provision_succeeded", SY, NULL, 0},
    [HE_PROVISION_FAILED] = {"provision_failed", SY, NULL, 0},
    [HE_GATE_REQUESTED] = {"gate_requested", OP, "host.gate", 1},
    [HE_GATE_STARTED] = {"gate_started", SY, NULL, 1},
    [HE_GATE_ACCEPTED] = {"gate_accepted", SY, NULL, 0},
    [HE_GATE_INVESTIGATE] = {"gate_investigate", SY, NULL, 0},
    [HE_GATE_ISOLATED] = {"gate_isolated", SY, "host.quarantine", 0},
    [HE_DIAGNOSTICS_REQUESTED] = {"diagnostics_requested", OP, "host.diagnostics", 0},
    [HE_DIAGNOSTICS_STARTED] = {"diagnostics_started", SY, NULL, 0},
    [HE_DIAGNOSTICS_FINISHED] = {"diagnostics_finished", SY, NULL, 0},
    [HE_DIAGNOSTICS_ISOLATED] = {"diagnostics_isolated", SY, "host.quarantine", 0},
    [HE_DRAIN] = {"drain", OP, "host.drain", 1},
    [HE_DRAINED_WHEN_IDLE] = {"drained_when_idle", OP, NULL, 1},
    [HE_RESUME] = {"resume", OP, "host.resume", 1},
    [HE_STOP_REQUESTED] = {"stop_requested", OP, "host.stop", 0},
    [HE_STOP_STARTED] = {"stop_started", SY, NULL, 0},
    [HE_STOP_DONE] = {"stop_done", SY, NULL, 0},
    [HE_STOP_FAILED] = {"stop_failed", SY, NULL, 0},
    [HE_KEY_MISMATCH] = {"key_mismatch", SY, "host.quarantine", 0},
    [HE_RELEASE] = {"release", AD, "host.release", 0},
    [HE_JOB_CANCELLED] = {"job_cancelled", SY, NULL, 0},
    [HE_JOB_EXPIRED] = {"job_expired", SY, NULL, 0},
    [HE_DELETED] = {"deleted", AD, "host.delete", 0},
    [HE_MONITOR_UNREACHABLE] = {"monitor_unreachable", SY, NULL, 0},
    [HE_MONITOR_REACHABLE] = {"monitor_reachable", SY, NULL, 0},
    [HE_MONITOR_ISOLATED] = {"monitor_isolated", SY, "host.quarantine", 0},
    [HE_RECOVERY_STARTED] = {"recovery_started", SY, "host.recovery", 0},
    [HE_RECOVERY_FAILED] = {"recovery_failed", SY, "host.quarantine", 0},
    [HE_POOL_MOVED] = {"pool_moved", OP, NULL, 0}, /* audited as host.update */
};
#undef OP
#undef AD
#undef SY

#define CG PLAN_FX_CLEAR_GATE
#define SG PLAN_FX_SET_GATE
#define Q  (PLAN_FX_CLEAR_GATE | PLAN_FX_SET_HOLD)
#define R(ev, f, t, fx)             \
    {                               \
        HE_##ev, HS_##f, HS_##t, fx \
    }
/* Resting states: no job of the host's acts on it. An event that finds a host in one of
 * them (a job that failed before it started, an expiry after a claim) changes nothing. */
#define REST(ev)                                                                                  \
    R(ev, REGISTERED, REGISTERED, 0), R(ev, PROVISIONED, PROVISIONED, 0), R(ev, READY, READY, 0), \
        R(ev, INVESTIGATING, INVESTIGATING, 0), R(ev, QUARANTINED, QUARANTINED, 0),               \
        R(ev, DRAINED, DRAINED, 0), R(ev, FAILED, FAILED, 0), R(ev, STOPPED, STOPPED, 0),         \
        R(ev, UNREACHABLE, UNREACHABLE, 0)
/* A stop that fails or is cancelled returns the host to where it was (the hint). */
#define BACK_FROM_STOPPING(ev)                                                                  \
    R(ev, STOPPING, REGISTERED, 0), R(ev, STOPPING, PROVISIONED, 0), R(ev, STOPPING, READY, 0), \
        R(ev, STOPPING, INVESTIGATING, 0), R(ev, STOPPING, QUARANTINED, 0),                     \
        R(ev, STOPPING, DRAINED, 0), R(ev, STOPPING, FAILED, 0), R(ev, STOPPING, UNREACHABLE, 0)

const struct plan_host_rule plan_host_rules[] = {
    /* provisioning */
    R(PROVISION_REQUESTED, REGISTERED, REGISTERED, 0),
    R(PROVISION_REQUESTED, PROVISIONED, PROVISIONED, 0),
    R(PROVISION_REQUESTED, READY, READY, 0),
    R(PROVISION_REQUESTED, INVESTIGATING, INVESTIGATING, 0),
    R(PROVISION_REQUESTED, DRAINED, DRAINED, 0),
    R(PROVISION_REQUESTED, FAILED, FAILED, 0),
    R(PROVISION_REQUESTED, STOPPED, STOPPED, 0),
    R(PROVISION_STARTED, REGISTERED, PROVISIONING, 0),
    R(PROVISION_STARTED, PROVISIONED, PROVISIONING, 0),
    R(PROVISION_STARTED, READY, PROVISIONING, 0),
    R(PROVISION_STARTED, INVESTIGATING, PROVISIONING, 0),
    R(PROVISION_STARTED, DRAINED, PROVISIONING, 0),
    R(PROVISION_STARTED, FAILED, PROVISIONING, 0),
    R(PROVISION_STARTED, STOPPED, PROVISIONING, 0),
    R(PROVISION_STARTED, PROVISIONING, PROVISIONING, 0),
    R(PROVISION_STARTED, DRAINING, DRAINING, 0),
    R(PROVISION_SUCCEEDED, PROVISIONING, PROVISIONED, 0),
    R(PROVISION_SUCCEEDED, DRAINING, DRAINED, 0),
    R(PROVISION_FAILED, PROVISIONING, FAILED, CG),
    R(PROVISION_FAILED, DRAINING, DRAINED, CG),
    REST(PROVISION_FAILED),
    /* the acceptance gate */
    R(GATE_REQUESTED, REGISTERED, REGISTERED, 0),
    R(GATE_REQUESTED, PROVISIONED, PROVISIONED, 0),
    R(GATE_REQUESTED, READY, READY, 0),
    R(GATE_REQUESTED, INVESTIGATING, INVESTIGATING, 0),
    R(GATE_REQUESTED, FAILED, FAILED, 0),
    R(GATE_STARTED, REGISTERED, GATING, 0),
    R(GATE_STARTED, PROVISIONED, GATING, 0),
    R(GATE_STARTED, READY, GATING, 0),
    R(GATE_STARTED, INVESTIGATING, GATING, 0),
    R(GATE_STARTED, FAILED, GATING, 0),
    R(GATE_STARTED, GATING, GATING, 0),
    R(GATE_STARTED, DRAINING, DRAINING, 0),
    R(GATE_STARTED, DRAINED, GATING, 0), /* a recovery's gate (the API refuses a drained host) */
    R(GATE_ACCEPTED, GATING, READY, SG),
    R(GATE_ACCEPTED, DRAINING, DRAINED, SG),
    R(GATE_INVESTIGATE, GATING, INVESTIGATING, CG),
    R(GATE_INVESTIGATE, DRAINING, DRAINED, CG),
    REST(GATE_INVESTIGATE),
    R(GATE_ISOLATED, GATING, QUARANTINED, Q),
    R(GATE_ISOLATED, DRAINING, QUARANTINED, Q),
    /* active diagnostics: on drained hosts, and on quarantined ones (they serve nothing;
     * the evidence informs the release), which stay quarantined throughout */
    R(DIAGNOSTICS_REQUESTED, DRAINED, DRAINED, 0),
    R(DIAGNOSTICS_REQUESTED, QUARANTINED, QUARANTINED, 0),
    R(DIAGNOSTICS_STARTED, DRAINED, DIAGNOSING, 0),
    R(DIAGNOSTICS_STARTED, DIAGNOSING, DIAGNOSING, 0),
    R(DIAGNOSTICS_STARTED, QUARANTINED, QUARANTINED, 0),
    R(DIAGNOSTICS_FINISHED, DIAGNOSING, DRAINED, 0),
    REST(DIAGNOSTICS_FINISHED),
    R(DIAGNOSTICS_ISOLATED, DIAGNOSING, QUARANTINED, Q),
    R(DIAGNOSTICS_ISOLATED, QUARANTINED, QUARANTINED, Q),
    /* drain and resume */
    R(DRAIN, REGISTERED, DRAINING, 0),
    R(DRAIN, PROVISIONED, DRAINING, 0),
    R(DRAIN, READY, DRAINING, 0),
    R(DRAIN, INVESTIGATING, DRAINING, 0),
    R(DRAIN, FAILED, DRAINING, 0),
    R(DRAIN, PROVISIONING, DRAINING, 0),
    R(DRAIN, GATING, DRAINING, 0),
    R(DRAIN, DRAINING, DRAINING, 0),
    R(DRAIN, DRAINED, DRAINED, 0),
    R(DRAIN, DIAGNOSING, DIAGNOSING, 0),
    R(DRAINED_WHEN_IDLE, DRAINING, DRAINED, 0),
    R(RESUME, DRAINED, READY, 0),
    R(RESUME, READY, READY, 0),
    /* stopping */
    R(STOP_REQUESTED, REGISTERED, REGISTERED, 0),
    R(STOP_REQUESTED, PROVISIONING, PROVISIONING, 0),
    R(STOP_REQUESTED, PROVISIONED, PROVISIONED, 0),
    R(STOP_REQUESTED, GATING, GATING, 0),
    R(STOP_REQUESTED, READY, READY, 0),
    R(STOP_REQUESTED, INVESTIGATING, INVESTIGATING, 0),
    R(STOP_REQUESTED, QUARANTINED, QUARANTINED, 0),
    R(STOP_REQUESTED, DRAINING, DRAINING, 0),
    R(STOP_REQUESTED, DRAINED, DRAINED, 0),
    R(STOP_REQUESTED, DIAGNOSING, DIAGNOSING, 0),
    R(STOP_REQUESTED, FAILED, FAILED, 0),
    R(STOP_REQUESTED, UNREACHABLE, UNREACHABLE, 0),
    R(STOP_STARTED, REGISTERED, STOPPING, 0),
    R(STOP_STARTED, PROVISIONING, STOPPING, 0),
    R(STOP_STARTED, PROVISIONED, STOPPING, 0),
    R(STOP_STARTED, GATING, STOPPING, 0),
    R(STOP_STARTED, READY, STOPPING, 0),
    R(STOP_STARTED, INVESTIGATING, STOPPING, 0),
    R(STOP_STARTED, QUARANTINED, STOPPING, 0),
    R(STOP_STARTED, DRAINING, STOPPING, 0),
    R(STOP_STARTED, DRAINED, STOPPING, 0),
    R(STOP_STARTED, DIAGNOSING, STOPPING, 0),
    R(STOP_STARTED, FAILED, STOPPING, 0),
    R(STOP_STARTED, UNREACHABLE, STOPPING, 0),
    R(STOP_STARTED, STOPPING, STOPPING, 0),
    R(STOP_DONE, STOPPING, STOPPED, 0),
    BACK_FROM_STOPPING(STOP_FAILED),
    REST(STOP_FAILED),
    /* quarantine */
    R(KEY_MISMATCH, REGISTERED, QUARANTINED, Q),
    R(KEY_MISMATCH, PROVISIONING, QUARANTINED, Q),
    R(KEY_MISMATCH, PROVISIONED, QUARANTINED, Q),
    R(KEY_MISMATCH, GATING, QUARANTINED, Q),
    R(KEY_MISMATCH, READY, QUARANTINED, Q),
    R(KEY_MISMATCH, INVESTIGATING, QUARANTINED, Q),
    R(KEY_MISMATCH, QUARANTINED, QUARANTINED, Q),
    R(KEY_MISMATCH, DRAINING, QUARANTINED, Q),
    R(KEY_MISMATCH, DRAINED, QUARANTINED, Q),
    R(KEY_MISMATCH, DIAGNOSING, QUARANTINED, Q),
    R(KEY_MISMATCH, STOPPING, QUARANTINED, Q),
    R(KEY_MISMATCH, FAILED, QUARANTINED, Q),
    R(KEY_MISMATCH, UNREACHABLE, QUARANTINED, Q),
    R(RELEASE, QUARANTINED, PROVISIONED, PLAN_FX_CLEAR_HOLD),
    R(RELEASE, QUARANTINED, REGISTERED, PLAN_FX_CLEAR_HOLD),
    R(RELEASE, STOPPED, STOPPED, PLAN_FX_CLEAR_HOLD),
    /* jobs that end without their own outcome */
    R(JOB_CANCELLED, PROVISIONING, FAILED, CG),
    R(JOB_CANCELLED, GATING, INVESTIGATING, CG),
    R(JOB_CANCELLED, DIAGNOSING, DRAINED, 0),
    R(JOB_CANCELLED, DRAINING, DRAINED, 0),
    BACK_FROM_STOPPING(JOB_CANCELLED),
    REST(JOB_CANCELLED),
    R(JOB_EXPIRED, PROVISIONING, FAILED, CG),
    R(JOB_EXPIRED, GATING, INVESTIGATING, CG),
    R(JOB_EXPIRED, DIAGNOSING, DRAINED, 0),
    R(JOB_EXPIRED, DRAINING, DRAINED, 0),
    R(JOB_EXPIRED, STOPPING, FAILED, 0), /* whether the host stopped is unknown */
    R(JOB_EXPIRED, STOPPING, QUARANTINED, 0),
    REST(JOB_EXPIRED),
    REST(DELETED),
    /* the monitor (passive health) */
    R(MONITOR_UNREACHABLE, READY, UNREACHABLE, 0),
    R(MONITOR_UNREACHABLE, DRAINING, UNREACHABLE, 0),
    R(MONITOR_UNREACHABLE, DRAINED, UNREACHABLE, 0),
    R(MONITOR_UNREACHABLE, UNREACHABLE, UNREACHABLE, 0),
    R(MONITOR_UNREACHABLE, QUARANTINED, QUARANTINED, 0),
    R(MONITOR_REACHABLE, UNREACHABLE, READY, 0),
    R(MONITOR_REACHABLE, UNREACHABLE, DRAINING, 0),
    R(MONITOR_REACHABLE, UNREACHABLE, DRAINED, 0),
    R(MONITOR_ISOLATED, READY, QUARANTINED, Q),
    R(MONITOR_ISOLATED, DRAINING, QUARANTINED, Q),
    R(MONITOR_ISOLATED, DRAINED, QUARANTINED, Q),
    R(MONITOR_ISOLATED, UNREACHABLE, QUARANTINED, Q),
    R(MONITOR_ISOLATED, QUARANTINED, QUARANTINED, Q),
    /* automatic recovery of a host the monitor isolated (planner/recovery.h) */
    R(RECOVERY_STARTED, QUARANTINED, DRAINING, PLAN_FX_CLEAR_HOLD),
    R(RECOVERY_FAILED, DRAINING, QUARANTINED, Q),
    R(RECOVERY_FAILED, DRAINED, QUARANTINED, Q),
    R(RECOVERY_FAILED, INVESTIGATING, QUARANTINED, Q),
    R(RECOVERY_FAILED, UNREACHABLE, QUARANTINED, Q),
    /* a move into another pool: only a host that serves nothing (registered, drained — a
     * ready host is drained first — or stopped, whose GPUs are released) moves, and the
     * gate always must pass again: it vouched for the old pool's GPUs, stop command and
     * reporter scopes. */
    R(POOL_MOVED, REGISTERED, REGISTERED, CG),
    R(POOL_MOVED, DRAINED, DRAINED, CG),
    R(POOL_MOVED, STOPPED, STOPPED, CG),
};
const size_t plan_host_nrules = sizeof plan_host_rules / sizeof plan_host_rules[0];
#undef CG
#undef SG
#undef Q
#undef R
#undef REST
#undef BACK_FROM_STOPPING

int plan_host_state_parse(const char *name)
{
    for (int i = 0; name != NULL && i < HS__COUNT; i++)
        if (!strcmp(name, plan_host_state_names[i]))
            return i;
    return -1;
}

int plan_host_event_parse(const char *name)
{
    for (int i = 0; name != NULL && i < HE__COUNT; i++)
        if (!strcmp(name, plan_host_events[i].name))
            return i;
    return -1;
}

/* The hold allows these states only. */
static int held_state(enum plan_host_state s)
{
    return s == HS_QUARANTINED || s == HS_STOPPING || s == HS_STOPPED;
}

enum plan_host_answer plan_host_next(enum plan_host_state from, int held, enum plan_host_event ev,
                                     int hint, enum plan_host_actor actor, enum plan_host_state *to,
                                     unsigned *effects)
{
    if ((unsigned)ev >= HE__COUNT || (unsigned)from >= HS__COUNT)
        return PLAN_HOST_NOT_ALLOWED;
    const struct plan_host_event_def *d = &plan_host_events[ev];
    /* system events: workers and the database only; admin events: admins only; operator
     * events: operators, admins and the system's own policies (the idle policy stops) */
    if ((d->actor == PLAN_ACTOR_SYSTEM && actor != PLAN_ACTOR_SYSTEM) ||
        (d->actor == PLAN_ACTOR_ADMIN && actor != PLAN_ACTOR_ADMIN))
        return PLAN_HOST_FORBIDDEN;
    if (held && d->refused_when_held)
        return PLAN_HOST_QUARANTINED;
    /* The row whose to is the hint; else the only row from this state. */
    const struct plan_host_rule *found = NULL, *hinted = NULL;
    int n = 0;
    for (size_t i = 0; i < plan_host_nrules; i++) {
        const struct plan_host_rule *r = &plan_host_rules[i];
        if (r->event != ev || r->from != from)
            continue;
        n++;
        found = r;
        if (hint >= 0 && (int)r->to == hint)
            hinted = r;
    }
    if (hinted != NULL)
        found = hinted;
    else if (n > 1)
        return PLAN_HOST_AMBIGUOUS;
    if (found == NULL)
        return PLAN_HOST_NOT_ALLOWED;
    unsigned fx = found->effects;
    int held_after = (held || (fx & PLAN_FX_SET_HOLD)) && !(fx & PLAN_FX_CLEAR_HOLD);
    if (held_after && !held_state(found->to))
        return PLAN_HOST_QUARANTINED;
    *to = found->to;
    *effects = fx;
    return PLAN_HOST_OK;
}

enum plan_host_answer plan_host_allows(const char *state, int held, enum plan_host_event ev,
                                       enum plan_host_actor actor)
{
    int from = plan_host_state_parse(state);
    enum plan_host_state to;
    unsigned fx;
    return from < 0 ? PLAN_HOST_NOT_ALLOWED
                    : plan_host_next((enum plan_host_state)from, held, ev, -1, actor, &to, &fx);
}

enum plan_host_state plan_host_stop_back(const char *previous_state, int held)
{
    static const enum plan_host_state rest[] = {HS_REGISTERED,    HS_PROVISIONED, HS_READY,
                                                HS_INVESTIGATING, HS_QUARANTINED, HS_DRAINED,
                                                HS_FAILED,        HS_UNREACHABLE};
    if (held)
        return HS_QUARANTINED;
    int s = plan_host_state_parse(previous_state);
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
        if (s == (int)rest[i])
            return rest[i];
    return HS_FAILED;
}

enum plan_host_event plan_host_verdict_event(int diagnostics, const char *verdict)
{
    int isolate = verdict != NULL && !strcmp(verdict, "isolate");
    int accept = verdict != NULL && !strcmp(verdict, "accept");
    if (diagnostics)
        return isolate ? HE_DIAGNOSTICS_ISOLATED : HE_DIAGNOSTICS_FINISHED;
    return isolate ? HE_GATE_ISOLATED : accept ? HE_GATE_ACCEPTED : HE_GATE_INVESTIGATE;
}

static const char *actor_name(enum plan_host_actor a)
{
    return a == PLAN_ACTOR_ADMIN ? "admin" : a == PLAN_ACTOR_OPERATOR ? "operator" : "system";
}

static const char *hold_name(unsigned fx)
{
    return fx & PLAN_FX_SET_HOLD ? "set" : fx & PLAN_FX_CLEAR_HOLD ? "clear" : "keep";
}

static const char *gate_name(unsigned fx)
{
    return fx & PLAN_FX_SET_GATE ? "set" : fx & PLAN_FX_CLEAR_GATE ? "clear" : "keep";
}

char *plan_host_sql(void)
{
    struct sbuf b;
    sbuf_init(&b, 16384);
    sbuf_adds(&b,
              "INSERT INTO host_events (event, actor, audit_action, refused_when_held) VALUES\n");
    for (int i = 0; i < HE__COUNT; i++) {
        const struct plan_host_event_def *d = &plan_host_events[i];
        sbuf_printf(&b, "    ('%s', '%s', %s%s%s, %s)%s\n", d->name, actor_name(d->actor),
                    d->audit_action ? "'" : "", d->audit_action ? d->audit_action : "NULL",
                    d->audit_action ? "'" : "", d->refused_when_held ? "true" : "false",
                    i + 1 < HE__COUNT ? "," : "");
    }
    /* events are referenced by history rows: a reload updates them in place */
    sbuf_adds(&b, "ON CONFLICT (event) DO UPDATE SET actor = EXCLUDED.actor,\n"
                  "    audit_action = EXCLUDED.audit_action,"
                  " refused_when_held = EXCLUDED.refused_when_held;\n");
    sbuf_adds(&b,
              "INSERT INTO host_transitions (event, from_state, to_state, gate, hold) VALUES\n");
    for (size_t i = 0; i < plan_host_nrules; i++) {
        const struct plan_host_rule *r = &plan_host_rules[i];
        sbuf_printf(&b, "    ('%s', '%s', '%s', '%s', '%s')%s\n", plan_host_events[r->event].name,
                    plan_host_state_names[r->from], plan_host_state_names[r->to],
                    gate_name(r->effects), hold_name(r->effects),
                    i + 1 < plan_host_nrules ? "," : ";");
    }
    return sbuf_take(&b, NULL);
}

char *plan_host_markdown(void)
{
    unsigned char *done = calloc(plan_host_nrules, 1); /* rows already listed */
    if (done == NULL)
        return NULL;
    struct sbuf b;
    sbuf_init(&b, 16384);
    sbuf_adds(&b, "| event | caused by | from → to | accepted gate | quarantine hold |\n"
                  "|---|---|---|---|---|\n");
    /* Rows in table order, one line per (event, to, effects): rows that keep the state
     * are listed together, the others by their to. */
    for (size_t i = 0; i < plan_host_nrules; i++) {
        const struct plan_host_rule *ri = &plan_host_rules[i];
        if (done[i])
            continue;
        const struct plan_host_event_def *d = &plan_host_events[ri->event];
        int same = ri->to == ri->from;
        sbuf_printf(&b, "| `%s` | %s%s | ", d->name, actor_name(d->actor),
                    d->refused_when_held ? " (not while quarantined)" : "");
        for (size_t k = i; k < plan_host_nrules; k++) {
            const struct plan_host_rule *rk = &plan_host_rules[k];
            if (done[k] || rk->event != ri->event || (rk->to == rk->from) != same ||
                rk->effects != ri->effects || (!same && rk->to != ri->to))
                continue;
            done[k] = 1;
            sbuf_printf(&b, "%s%s", k == i ? "" : ", ", plan_host_state_names[rk->from]);
        }
        if (same)
            sbuf_printf(&b, " (unchanged) | %s | %s |\n", gate_name(ri->effects),
                        hold_name(ri->effects));
        else
            sbuf_printf(&b, " → %s | %s | %s |\n", plan_host_state_names[ri->to],
                        gate_name(ri->effects), hold_name(ri->effects));
    }
    free(done);
    return sbuf_take(&b, NULL);
}
