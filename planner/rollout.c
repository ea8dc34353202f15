/* rollout.c — see rollout.h. */
#include "planner/rollout.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

const char *const plan_ro_step_names[PLAN_STEP__COUNT] = {
    "pending", "draining", "provisioning", "gating",     "comparing", "resuming",
    "done",    "failed",   "skipped",      "not_needed", NULL};

int plan_ro_step_parse(const char *name)
{
    if (name == NULL)
        return PLAN_STEP_NONE;
    for (int i = 0; i < PLAN_STEP_NONE; i++)
        if (!strcmp(name, plan_ro_step_names[i]))
            return i;
    return -1;
}

int plan_ro_state_parse(const char *name)
{
    static const char *const names[PLAN_RO__STATES] = {"running", "paused", "rolling_back"};
    for (int i = 0; name != NULL && i < PLAN_RO__STATES; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

const char *plan_ro_action_name(enum plan_ro_action a)
{
    static const char *const names[] = {
        "wait",   "start", "skip",      "drained", "provision", "gate",     "advance",   "compare",
        "resume", "soak",  "next_wave", "succeed", "fail",      "rb_start", "host_fail", "finish"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "unknown";
}

/* Sets the action, its host and its reason (texts from the database are cut here; the
 * cut never splits a character). Returns 1 (decided). */
static int say(struct plan_ro_decision *d, enum plan_ro_action a, int host, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int say(struct plan_ro_decision *d, enum plan_ro_action a, int host, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
    d->action = a;
    d->host = host;
    utf8_clean(tmp, len, d->why, sizeof d->why);
    return 1;
}

static int is(const char *s, const char *v)
{
    return s != NULL && !strcmp(s, v);
}

static const char *or_none(const char *s)
{
    return s != NULL ? s : "none";
}

static int job_active(const char *state)
{
    return is(state, "queued") || is(state, "running");
}

/* A forward step that holds the host out of service. */
static int fwd_out(enum plan_ro_step s)
{
    return s >= PLAN_STEP_DRAINING && s <= PLAN_STEP_RESUMING;
}

/* A rollback step that holds the host out of service. */
static int rb_out(enum plan_ro_step s)
{
    return s == PLAN_STEP_DRAINING || s == PLAN_STEP_PROVISIONING || s == PLAN_STEP_GATING ||
           s == PLAN_STEP_RESUMING;
}

int plan_rollout_unavailable(const struct plan_ro_facts *f)
{
    int n = 0;
    for (int i = 0; i < f->nhosts; i++) {
        const struct plan_ro_host *h = &f->hosts[i];
        int failed = h->step == PLAN_STEP_FAILED || h->rollback_step == PLAN_STEP_FAILED;
        if (fwd_out(h->step) || rb_out(h->rollback_step) || (failed && !is(h->host_state, "ready")))
            n++;
    }
    return n;
}

int plan_rollout_max_unavailable(int hosts, int pct, int in_scope)
{
    int n = pct > 0 ? (int)((long)in_scope * pct / 100) : hosts;
    return n < 1 ? 1 : n;
}

int plan_rollout_wave(int pos, int canary, int max_unavailable)
{
    if (max_unavailable < 1)
        max_unavailable = 1;
    if (canary > 0)
        return pos < canary ? 0 : 1 + (pos - canary) / max_unavailable;
    return pos / max_unavailable;
}

int plan_rollout_waves(int n, int canary, int max_unavailable)
{
    return n <= 0 ? 0 : plan_rollout_wave(n - 1, canary, max_unavailable) + 1;
}

int plan_rollout_judge(int matched, double value, double reference, double min_ratio, double *ratio,
                       char *why, size_t len)
{
    *ratio = 0;
    if (matched <= 0) {
        snprintf(why, len,
                 "no baseline of the previous stack was measured under the gate run's "
                 "conditions (fail closed)");
        return 0;
    }
    if (!isfinite(value) || !isfinite(reference) || reference <= 0) {
        snprintf(why, len, "the previous stack's baseline median is %g: no ratio (fail closed)",
                 reference);
        return 0;
    }
    *ratio = value / reference;
    int pass = *ratio >= min_ratio;
    snprintf(why, len,
             "throughput %g against the previous stack's median %g of %d baseline%s: "
             "ratio %.4f, %s the minimum %g",
             value, reference, matched, matched == 1 ? "" : "s", *ratio,
             pass ? "at least" : "under", min_ratio);
    return pass;
}

/* ---- going forward ---- */

static int fail(struct plan_ro_decision *d, int host, const char *why)
{
    return say(d, PLAN_RO_FAIL, host, "%s", why);
}

/* The step's job (provision or gate) as the planner sees it: 0 waiting, 1 decided (a
 * failure), 2 succeeded with an accepted run (gate) or just succeeded (provision). */
static int judge_job(const struct plan_ro_host *h, const char *kind, int gate, int host,
                     struct plan_ro_decision *d, enum plan_ro_action on_fail)
{
    const char *job = gate ? "gate" : "provision";
    if (h->job_state == NULL)
        return say(d, on_fail, host, "%s: the %s job is gone", kind, job);
    if (job_active(h->job_state))
        return 0;
    if (!is(h->job_state, "succeeded"))
        return say(d, on_fail, host, "%s: the %s job %s (%s)", kind, job, h->job_state,
                   or_none(h->job_error));
    if (!gate)
        return 2;
    if (h->verdict == NULL)
        return say(d, on_fail, host, "%s: the gate job recorded no verdict", kind);
    if (!is(h->verdict, "accept"))
        return say(d, on_fail, host, "%s: gate verdict %s (%s); the host is %s", kind, h->verdict,
                   or_none(h->verdict_reason), or_none(h->host_state));
    return 2;
}

/* An in-flight host: 1 when decided, 0 to wait. */
static int forward(const struct plan_ro_facts *f, int i, struct plan_ro_decision *d)
{
    const struct plan_ro_host *h = &f->hosts[i];
    const char *st = h->host_state;
    char why[600];
    if (h->intervention != NULL) {
        snprintf(why, sizeof why, "%s: someone else acted on the host: %s",
                 plan_ro_step_names[h->step], h->intervention);
        return fail(d, i, why);
    }
    if (h->foreign_job != NULL) {
        snprintf(why, sizeof why, "%s: another job was queued on the host: %s",
                 plan_ro_step_names[h->step], h->foreign_job);
        return fail(d, i, why);
    }
    if (h->held || is(st, "quarantined")) {
        snprintf(why, sizeof why, "%s: the host was quarantined (%s)", plan_ro_step_names[h->step],
                 or_none(h->hold_reason));
        return fail(d, i, why);
    }
    int r;
    switch (h->step) {
    case PLAN_STEP_DRAINING:
        if (is(st, "draining"))
            return h->busy ? 0 : say(d, PLAN_RO_DRAINED, i, "draining: no job runs");
        if (is(st, "drained"))
            return h->busy ? 0 : say(d, PLAN_RO_PROVISION, i, "provisioning the target stack");
        return say(d, PLAN_RO_FAIL, i, "draining: the host is %s, not draining", or_none(st));
    case PLAN_STEP_PROVISIONING:
        if ((r = judge_job(h, "provisioning", 0, i, d, PLAN_RO_FAIL)) != 2)
            return r;
        if (is(st, "provisioned") && h->on_target)
            return h->busy ? 0 : say(d, PLAN_RO_GATE, i, "provisioned: gating while drained");
        return say(d, PLAN_RO_FAIL, i, "provisioning: the job succeeded but the host is %s%s",
                   or_none(st), h->on_target ? "" : ", not on the target stack");
    case PLAN_STEP_GATING:
        if ((r = judge_job(h, "gating", 1, i, d, PLAN_RO_FAIL)) != 2)
            return r;
        if (is(st, "drained") && h->gate_is_run) {
            d->next = f->ratio_set ? PLAN_STEP_COMPARING : PLAN_STEP_RESUMING;
            return say(d, PLAN_RO_ADVANCE, i, "gating: verdict accept%s",
                       f->ratio_set ? "; comparing the throughput" : "");
        }
        return say(d, PLAN_RO_FAIL, i, "gating: verdict accept but the host is %s%s", or_none(st),
                   h->gate_is_run ? "" : " without that run as its accepted gate");
    case PLAN_STEP_COMPARING:
        if (is(st, "drained"))
            return say(d, PLAN_RO_COMPARE, i, "comparing the gate's throughput");
        return say(d, PLAN_RO_FAIL, i, "comparing: the host is %s, not drained", or_none(st));
    case PLAN_STEP_RESUMING:
        if (is(st, "drained") && h->gate_ok)
            return h->busy ? 0 : say(d, PLAN_RO_RESUME, i, "resuming on the target stack");
        if (is(st, "ready") && h->on_target) {
            d->next = PLAN_STEP_DONE;
            return say(d, PLAN_RO_ADVANCE, i, "resuming: the host is ready");
        }
        return say(d, PLAN_RO_FAIL, i, "resuming: the host is %s%s", or_none(st),
                   h->gate_ok ? "" : " without an accepted gate for its stack");
    default: return 0;
    }
}

static void go_forward(const struct plan_ro_facts *f, struct plan_ro_decision *d)
{
    char why[600];
    for (int i = 0; i < f->nhosts; i++) {
        const struct plan_ro_host *h = &f->hosts[i];
        if (h->step == PLAN_STEP_DONE && h->isolation != NULL) {
            snprintf(why, sizeof why, "the monitor isolated the host after it was rolled out: %s",
                     h->isolation);
            fail(d, i, why);
            return;
        }
        if (h->step == PLAN_STEP_FAILED) {
            fail(d, i, "the host failed");
            return;
        }
        if (fwd_out(h->step) && forward(f, i, d))
            return;
    }
    if (f->state == PLAN_RO_PAUSED) {
        say(d, PLAN_RO_WAIT, -1, "paused: no new host starts");
        return;
    }
    if (f->current_wave >= f->waves) {
        say(d, PLAN_RO_SUCCEED, -1, "every wave passed");
        return;
    }
    if (f->soaking) {
        if (!f->soak_over) {
            say(d, PLAN_RO_WAIT, -1, "soaking wave %d", f->current_wave);
            return;
        }
        d->pause =
            f->canary > 0 && f->current_wave == 0 && f->pause_after_canary && !f->canary_paused;
        say(d, PLAN_RO_NEXT_WAVE, -1, "wave %d soaked%s", f->current_wave,
            d->pause ? "; pausing after the canary" : "");
        return;
    }
    int unavailable = plan_rollout_unavailable(f), all_done = 1;
    for (int i = 0; i < f->nhosts; i++) {
        const struct plan_ro_host *h = &f->hosts[i];
        if (h->wave != f->current_wave || h->step == PLAN_STEP_DONE || h->step == PLAN_STEP_SKIPPED)
            continue;
        all_done = 0;
        if (h->step != PLAN_STEP_PENDING)
            continue; /* in flight: waits */
        if (!is(h->host_state, "ready") || h->held) {
            say(d, PLAN_RO_SKIP, i, "the host was %s%s when its turn came", or_none(h->host_state),
                h->held ? " (quarantine hold)" : "");
            return;
        }
        if (h->on_target) {
            say(d, PLAN_RO_SKIP, i, "the host was already on the target stack when its turn came");
            return;
        }
        if (unavailable >= f->max_unavailable) {
            say(d, PLAN_RO_WAIT, -1, "%d of %d hosts out of service: waiting", unavailable,
                f->max_unavailable);
            return;
        }
        say(d, PLAN_RO_START, i, "wave %d: draining (%d of %d out of service)", f->current_wave,
            unavailable + 1, f->max_unavailable);
        return;
    }
    if (all_done)
        say(d, PLAN_RO_SOAK, -1, "wave %d done: soaking", f->current_wave);
    else
        say(d, PLAN_RO_WAIT, -1, "wave %d: hosts in flight", f->current_wave);
}

/* ---- rolling back ---- */

static int host_fail(struct plan_ro_decision *d, int i, const char *what, const char *st)
{
    d->rollback = 1;
    return say(d, PLAN_RO_HOST_FAIL, i, "rollback %s: the host is %s", what, or_none(st));
}

/* A host whose rollback is under way: 1 when decided, 0 to wait. */
static int backward(const struct plan_ro_host *h, int i, struct plan_ro_decision *d)
{
    const char *st = h->host_state;
    int r;
    d->rollback = 1;
    if (h->held || is(st, "quarantined"))
        return say(d, PLAN_RO_HOST_FAIL, i, "rollback %s: the host was quarantined (%s)",
                   plan_ro_step_names[h->rollback_step], or_none(h->hold_reason));
    switch (h->rollback_step) {
    case PLAN_STEP_DRAINING:
        if (is(st, "draining"))
            return h->busy ? 0 : say(d, PLAN_RO_DRAINED, i, "rollback draining: no job runs");
        if (h->busy)
            return 0;
        if (is(st, "ready")) {
            if (!h->provisioned) {
                d->next = PLAN_STEP_DONE;
                return say(d, PLAN_RO_ADVANCE, i, "rollback: the host is ready on its stack");
            }
            d->drain = 1;
            return say(d, PLAN_RO_RB_START, i, "rollback: draining the host again");
        }
        if (!h->provisioned) {
            if (!is(st, "drained"))
                return host_fail(d, i, "draining", st);
            d->next = PLAN_STEP_RESUMING;
            return say(d, PLAN_RO_ADVANCE, i, "rollback: never provisioned; resuming");
        }
        if (!h->has_from)
            return say(d, PLAN_RO_HOST_FAIL, i, "rollback: the host had no stack to go back to");
        if (is(st, "drained") || is(st, "provisioned") || is(st, "failed") ||
            is(st, "investigating"))
            return say(d, PLAN_RO_PROVISION, i, "rollback: provisioning the previous stack");
        return host_fail(d, i, "draining", st);
    case PLAN_STEP_PROVISIONING:
        if ((r = judge_job(h, "rollback provisioning", 0, i, d, PLAN_RO_HOST_FAIL)) != 2)
            return r;
        if (is(st, "provisioned"))
            return h->busy ? 0 : say(d, PLAN_RO_GATE, i, "rollback: gating the previous stack");
        return host_fail(d, i, "provisioning", st);
    case PLAN_STEP_GATING:
        if ((r = judge_job(h, "rollback gating", 1, i, d, PLAN_RO_HOST_FAIL)) != 2)
            return r;
        if (is(st, "drained") && h->gate_is_run) {
            d->next = PLAN_STEP_RESUMING;
            return say(d, PLAN_RO_ADVANCE, i, "rollback gating: verdict accept");
        }
        return host_fail(d, i, "gating: verdict accept but", st);
    case PLAN_STEP_RESUMING:
        if (is(st, "drained") && h->gate_ok)
            return h->busy ? 0 : say(d, PLAN_RO_RESUME, i, "rollback: resuming");
        if (is(st, "ready")) {
            d->next = PLAN_STEP_DONE;
            return say(d, PLAN_RO_ADVANCE, i, "rollback: the host is ready");
        }
        return host_fail(d, i, "resuming", st);
    default: return 0;
    }
}

/* The host's rollback step; one not marked (defensive): the untouched need nothing. */
static enum plan_ro_step rollback_of(const struct plan_ro_host *h)
{
    if (h->rollback_step != PLAN_STEP_NONE)
        return h->rollback_step;
    return h->step == PLAN_STEP_PENDING || h->step == PLAN_STEP_SKIPPED ? PLAN_STEP_NOT_NEEDED
                                                                        : PLAN_STEP_PENDING;
}

/* The hosts whose rollback is under way first, then those whose rollback has not begun
 * (an out-of-service one at once, a ready one within the limit). */
static void go_back(const struct plan_ro_facts *f, struct plan_ro_decision *d)
{
    int unavailable = plan_rollout_unavailable(f);
    int waiting = 0, blocked = 0, failed = 0;
    for (int i = 0; i < f->nhosts; i++) {
        const struct plan_ro_host *h = &f->hosts[i];
        enum plan_ro_step rb = rollback_of(h);
        if (rb == PLAN_STEP_DONE || rb == PLAN_STEP_NOT_NEEDED)
            continue;
        if (rb == PLAN_STEP_FAILED) {
            failed++;
            continue;
        }
        if (rb != PLAN_STEP_PENDING) {
            waiting++;
            struct plan_ro_decision tmp = *d;
            if (backward(h, i, &tmp)) {
                *d = tmp;
                return;
            }
        }
    }
    /* then the hosts whose rollback has not begun */
    for (int i = 0; i < f->nhosts; i++) {
        const struct plan_ro_host *h = &f->hosts[i];
        if (rollback_of(h) != PLAN_STEP_PENDING)
            continue;
        /* pending: its own job (from going forward) ends first */
        if (h->busy) {
            waiting++;
            continue;
        }
        d->rollback = 1;
        if (is(h->host_state, "ready")) {
            if (!h->provisioned) {
                d->next = PLAN_STEP_DONE;
                say(d, PLAN_RO_ADVANCE, i, "rollback: never provisioned; nothing to undo");
                return;
            }
            if (unavailable >= f->max_unavailable) {
                blocked++;
                d->rollback = 0;
                continue;
            }
            d->drain = 1;
            say(d, PLAN_RO_RB_START, i, "rollback: draining (%d of %d out of service)",
                unavailable + 1, f->max_unavailable);
            return;
        }
        if (h->held || is(h->host_state, "quarantined")) {
            say(d, PLAN_RO_HOST_FAIL, i, "rollback: the host is quarantined (%s)",
                or_none(h->hold_reason));
            return;
        }
        say(d, PLAN_RO_RB_START, i, "rollback: the host is %s, out of service already",
            or_none(h->host_state));
        return;
    }
    if (waiting > 0) {
        say(d, PLAN_RO_WAIT, -1, "rolling back: hosts in flight");
        return;
    }
    if (blocked > 0) {
        d->finish_state = "failed";
        say(d, PLAN_RO_FINISH, -1,
            "rollback failed: %d host%s left out of service, %d host%s left on the new stack "
            "(the limit of %d unavailable is taken)",
            failed, failed == 1 ? "" : "s", blocked, blocked == 1 ? "" : "s", f->max_unavailable);
        return;
    }
    d->finish_state = failed > 0 ? "failed" : "rolled_back";
    if (failed > 0)
        say(d, PLAN_RO_FINISH, -1, "rollback failed on %d host%s", failed, failed == 1 ? "" : "s");
    else
        say(d, PLAN_RO_FINISH, -1, "every host is back on its previous stack");
}

void plan_rollout_next(const struct plan_ro_facts *f, struct plan_ro_decision *d)
{
    d->action = PLAN_RO_WAIT;
    d->host = -1;
    d->rollback = d->drain = d->pause = 0;
    d->next = PLAN_STEP_NONE;
    d->finish_state = NULL;
    d->why[0] = '\0';
    if (f->state == PLAN_RO_ROLLING_BACK)
        go_back(f, d);
    else
        go_forward(f, d);
}
