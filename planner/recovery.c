/* recovery.c — see recovery.h. */
#include "planner/recovery.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

const char *const plan_rec_step_names[PLAN_REC__STEPS] = {"drain", "diagnostics", "gate"};

int plan_rec_step_parse(const char *name)
{
    for (int i = 0; name != NULL && i < PLAN_REC__STEPS; i++)
        if (!strcmp(name, plan_rec_step_names[i]))
            return i;
    return -1;
}

const char *plan_rec_step_job(enum plan_rec_step step)
{
    return step == PLAN_REC_DIAGNOSTICS ? "diagnostics" : step == PLAN_REC_GATE ? "gate" : NULL;
}

const char *plan_rec_action_name(enum plan_rec_action a)
{
    static const char *const names[] = {"wait",    "start",   "drained", "queue",
                                        "advance", "succeed", "fail",    "cancel"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "unknown";
}

/* Sets the action and its reason (the texts come from the database, but are cut here:
 * the cut never splits a character). */
static void say(struct plan_rec_decision *d, enum plan_rec_action a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct plan_rec_decision *d, enum plan_rec_action a, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
    d->action = a;
    utf8_clean(tmp, len, d->why, sizeof d->why);
}

static int is(const char *s, const char *v)
{
    return s != NULL && !strcmp(s, v);
}

static const char *or_none(const char *s)
{
    return s != NULL ? s : "none";
}

/* Before the drain began: the host must still be quarantined under the monitor's hold. */
static void before_start(const struct plan_rec_facts *f, struct plan_rec_decision *d)
{
    if (!is(f->host_state, "quarantined") || !f->held)
        say(d, PLAN_REC_FAIL, "the host is %s, no longer quarantined by the monitor",
            or_none(f->host_state));
    else if (!f->hold_is_ours)
        say(d, PLAN_REC_FAIL,
            "the host was quarantined again since the monitor isolated it (%s); only an "
            "admin releases that hold",
            or_none(f->hold_reason));
    else if (f->busy)
        say(d, PLAN_REC_WAIT, "waiting for the host's job to end before draining");
    else
        say(d, PLAN_REC_START, "drain: the monitor's isolation is lifted to drain the host");
}

static void drain(const struct plan_rec_facts *f, struct plan_rec_decision *d)
{
    if (!f->started)
        before_start(f, d);
    else if (is(f->host_state, "draining"))
        say(d, f->busy ? PLAN_REC_WAIT : PLAN_REC_DRAINED,
            f->busy ? "draining: waiting for the host's job to end" : "drain: no job runs");
    else if (is(f->host_state, "drained"))
        say(d, PLAN_REC_ADVANCE, "drain: the host is drained");
    else if (is(f->host_state, "quarantined"))
        say(d, PLAN_REC_FAIL, "drain: the host was quarantined again (%s)",
            or_none(f->hold_reason));
    else
        say(d, PLAN_REC_FAIL, "drain: the host is %s, not draining", or_none(f->host_state));
}

/* The diagnostics and the gate: queue the job on the drained host, wait for it, judge. */
static void job_step(const struct plan_rec_facts *f, struct plan_rec_decision *d)
{
    const char *kind = plan_rec_step_job(f->step);
    int diag = f->step == PLAN_REC_DIAGNOSTICS;
    if (f->job_state == NULL) {
        if (is(f->host_state, "drained"))
            say(d, f->busy ? PLAN_REC_WAIT : PLAN_REC_QUEUE, "%s: %s", kind,
                f->busy ? "waiting for the host's job to end" : "queued");
        else if (is(f->host_state, "quarantined"))
            say(d, PLAN_REC_FAIL, "%s: the host was quarantined again (%s)", kind,
                or_none(f->hold_reason));
        else
            say(d, PLAN_REC_FAIL, "%s: the host is %s, not drained", kind, or_none(f->host_state));
    } else if (is(f->job_state, "queued") || is(f->job_state, "running")) {
        say(d, PLAN_REC_WAIT, "%s: the job is %s", kind, f->job_state);
    } else if (is(f->job_state, "cancelled")) {
        say(d, PLAN_REC_CANCEL, "%s: the job was cancelled (%s)", kind, or_none(f->job_error));
    } else if (!is(f->job_state, "succeeded")) {
        say(d, PLAN_REC_FAIL, "%s: the job %s (%s)", kind, f->job_state, or_none(f->job_error));
    } else if (f->verdict == NULL) {
        say(d, PLAN_REC_FAIL, "%s: the job recorded no verdict", kind);
    } else if (!is(f->verdict, "accept")) {
        say(d, PLAN_REC_FAIL, "%s: verdict %s (%s); the host is %s", kind, f->verdict,
            or_none(f->verdict_reason), or_none(f->host_state));
    } else if (diag) {
        if (is(f->host_state, "drained"))
            say(d, PLAN_REC_ADVANCE, "diagnostics: verdict accept");
        else
            say(d, PLAN_REC_FAIL, "diagnostics: verdict accept but the host is %s",
                or_none(f->host_state));
    } else if (is(f->host_state, "ready") && f->gate_is_run) {
        say(d, PLAN_REC_SUCCEED, "gate: verdict accept; the host is ready");
    } else {
        say(d, PLAN_REC_FAIL, "gate: verdict accept but the host is %s%s", or_none(f->host_state),
            f->gate_is_run ? "" : " without that run as its accepted gate");
    }
}

void plan_recovery_next(const struct plan_rec_facts *f, struct plan_rec_decision *d)
{
    d->requarantine = 0;
    if (f->intervention != NULL)
        say(d, PLAN_REC_CANCEL, "an operator acted on the host: %s", f->intervention);
    else if (f->foreign_job != NULL)
        say(d, PLAN_REC_CANCEL, "another job was queued: %s", f->foreign_job);
    else if (f->step == PLAN_REC_DRAIN)
        drain(f, d);
    else if (f->step == PLAN_REC_DIAGNOSTICS || f->step == PLAN_REC_GATE)
        job_step(f, d);
    else
        say(d, PLAN_REC_FAIL, "unknown step");
    /* A failed recovery leaves no host outside quarantine that the monitor isolated: the
     * states a recovery passes through go back (the hold set again). */
    if (d->action == PLAN_REC_FAIL && f->started && !f->held)
        d->requarantine = is(f->host_state, "draining") || is(f->host_state, "drained") ||
                          is(f->host_state, "investigating") || is(f->host_state, "unreachable");
}
