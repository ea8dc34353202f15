/* test_recovery.c — automatic recovery (planner/recovery.h): the state machine's
 * recovery rows, and each decision of the planner, walked step by step. */
#include <string.h>

#include "planner/host_state.h"
#include "planner/recovery.h"
#include "unit.h"

static enum plan_host_answer next(enum plan_host_state from, int held, enum plan_host_event ev,
                                  int hint, enum plan_host_state *to, unsigned *fx)
{
    return plan_host_next(from, held, ev, hint, plan_host_events[ev].actor, to, fx);
}

/* recovery_started lifts the hold of a quarantined host to drain it, and only the system
 * causes it; recovery_failed sends the recovery's states back into quarantine; a drained
 * host's gate (the recovery's) goes through gating to ready. */
static void test_state_machine(void)
{
    enum plan_host_state to;
    unsigned fx;
    CHECK(next(HS_QUARANTINED, 1, HE_RECOVERY_STARTED, -1, &to, &fx) == PLAN_HOST_OK &&
          to == HS_DRAINING && fx == PLAN_FX_CLEAR_HOLD);
    CHECK(plan_host_next(HS_QUARANTINED, 1, HE_RECOVERY_STARTED, -1, PLAN_ACTOR_ADMIN, &to, &fx) ==
          PLAN_HOST_FORBIDDEN);
    CHECK(plan_host_next(HS_QUARANTINED, 1, HE_RECOVERY_STARTED, -1, PLAN_ACTOR_OPERATOR, &to,
                         &fx) == PLAN_HOST_FORBIDDEN);
    /* from nowhere else: not a way out of a stop, a failure or an investigation */
    for (int s = 0; s < HS__COUNT; s++)
        if (s != HS_QUARANTINED)
            CHECK(next((enum plan_host_state)s, 0, HE_RECOVERY_STARTED, -1, &to, &fx) ==
                  PLAN_HOST_NOT_ALLOWED);
    CHECK_STR(plan_host_events[HE_RECOVERY_STARTED].audit_action, "host.recovery");
    const enum plan_host_state back[] = {HS_DRAINING, HS_DRAINED, HS_INVESTIGATING, HS_UNREACHABLE};
    for (size_t i = 0; i < sizeof back / sizeof back[0]; i++)
        CHECK(next(back[i], 0, HE_RECOVERY_FAILED, -1, &to, &fx) == PLAN_HOST_OK &&
              to == HS_QUARANTINED && (fx & PLAN_FX_SET_HOLD) && (fx & PLAN_FX_CLEAR_GATE));
    CHECK(next(HS_READY, 0, HE_RECOVERY_FAILED, -1, &to, &fx) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_QUARANTINED, 1, HE_RECOVERY_FAILED, -1, &to, &fx) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_STOPPED, 0, HE_RECOVERY_FAILED, -1, &to, &fx) == PLAN_HOST_NOT_ALLOWED);
    /* the whole walk */
    enum plan_host_state s = HS_READY;
    CHECK(next(s, 0, HE_MONITOR_ISOLATED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_QUARANTINED);
    CHECK(next(s, 1, HE_RECOVERY_STARTED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_DRAINING);
    CHECK(next(s, 0, HE_DRAINED_WHEN_IDLE, -1, &s, &fx) == PLAN_HOST_OK && s == HS_DRAINED);
    CHECK(next(s, 0, HE_DIAGNOSTICS_STARTED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_DIAGNOSING);
    CHECK(next(s, 0, HE_DIAGNOSTICS_FINISHED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_DRAINED);
    CHECK(next(s, 0, HE_GATE_STARTED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_GATING);
    CHECK(next(s, 0, HE_GATE_ACCEPTED, -1, &s, &fx) == PLAN_HOST_OK && s == HS_READY &&
          fx == PLAN_FX_SET_GATE);
    /* the API still refuses a gate on a drained host, and a quarantined one's gate */
    CHECK(next(HS_DRAINED, 0, HE_GATE_REQUESTED, -1, &to, &fx) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_QUARANTINED, 1, HE_GATE_STARTED, -1, &to, &fx) == PLAN_HOST_QUARANTINED);
    /* a key mismatch during the recovery quarantines as ever */
    CHECK(next(HS_DRAINED, 0, HE_KEY_MISMATCH, -1, &to, &fx) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
}

static void test_step_names(void)
{
    CHECK(plan_rec_step_parse("drain") == PLAN_REC_DRAIN);
    CHECK(plan_rec_step_parse("gate") == PLAN_REC_GATE);
    CHECK(plan_rec_step_parse("ready") == -1 && plan_rec_step_parse(NULL) == -1);
    CHECK(plan_rec_step_job(PLAN_REC_DRAIN) == NULL);
    CHECK_STR(plan_rec_step_job(PLAN_REC_DIAGNOSTICS), "diagnostics");
    CHECK_STR(plan_rec_action_name(PLAN_REC_CANCEL), "cancel");
}

/* A fresh recovery: the host quarantined under the monitor's hold. */
static struct plan_rec_facts fresh(void)
{
    return (struct plan_rec_facts){.step = PLAN_REC_DRAIN,
                                   .host_state = "quarantined",
                                   .held = 1,
                                   .hold_is_ours = 1,
                                   .hold_reason = "Xid 79 on GPU 0"};
}

static enum plan_rec_action decide(const struct plan_rec_facts *f, struct plan_rec_decision *d)
{
    memset(d, 0x55, sizeof *d);
    plan_recovery_next(f, d);
    return d->action;
}

/* The walk that succeeds, one decision at a time, as the driver applies them. */
static void test_walk(void)
{
    struct plan_rec_decision d;
    struct plan_rec_facts f = fresh();
    CHECK(decide(&f, &d) == PLAN_REC_START && !d.requarantine);
    f.busy = 1; /* a job that ran before the isolation: waited for */
    CHECK(decide(&f, &d) == PLAN_REC_WAIT);
    f.busy = 0;
    f.started = 1, f.held = 0, f.hold_is_ours = 0, f.host_state = "draining";
    CHECK(decide(&f, &d) == PLAN_REC_DRAINED);
    f.host_state = "drained";
    CHECK(decide(&f, &d) == PLAN_REC_ADVANCE);
    f.step = PLAN_REC_DIAGNOSTICS;
    CHECK(decide(&f, &d) == PLAN_REC_QUEUE);
    f.job_state = "queued", f.busy = 1;
    CHECK(decide(&f, &d) == PLAN_REC_WAIT);
    f.job_state = "running", f.host_state = "diagnosing";
    CHECK(decide(&f, &d) == PLAN_REC_WAIT);
    f.job_state = "succeeded", f.busy = 0, f.host_state = "drained", f.verdict = "accept";
    CHECK(decide(&f, &d) == PLAN_REC_ADVANCE);
    f.step = PLAN_REC_GATE, f.job_state = NULL, f.verdict = NULL;
    CHECK(decide(&f, &d) == PLAN_REC_QUEUE);
    f.job_state = "running", f.host_state = "gating", f.busy = 1;
    CHECK(decide(&f, &d) == PLAN_REC_WAIT);
    f.job_state = "succeeded", f.host_state = "ready", f.busy = 0, f.verdict = "accept";
    f.gate_is_run = 1;
    CHECK(decide(&f, &d) == PLAN_REC_SUCCEED && strstr(d.why, "ready"));
    /* an accepted run that is not the host's accepted gate is no success */
    f.gate_is_run = 0;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine);
}

/* Each failure stops at its step; the recovery's own states go back into quarantine. */
static void test_failures(void)
{
    struct plan_rec_decision d;
    struct plan_rec_facts f = fresh();
    /* a hold set again since the isolation (a key mismatch): never lifted */
    f.hold_is_ours = 0, f.hold_reason = "host key mismatch: SHA256:abc";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine && strstr(d.why, "key mismatch"));
    /* no longer quarantined before it began (an admin released it: that is audited and
     * cancels first; here without the audit row) */
    f = fresh();
    f.host_state = "provisioned", f.held = 0;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine);
    /* the monitor isolates again while draining */
    f = fresh();
    f.started = 1, f.host_state = "quarantined", f.hold_is_ours = 0;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine && strstr(d.why, "Xid 79"));
    /* diagnostics: job failed, verdict investigate, verdict isolate */
    f = fresh();
    f.started = 1, f.held = 0, f.step = PLAN_REC_DIAGNOSTICS, f.host_state = "drained";
    f.job_state = "failed", f.job_error = "timed_out: dcgmi did not answer";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine && strstr(d.why, "timed_out"));
    f.job_state = "succeeded", f.job_error = NULL, f.verdict = "investigate";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine && strstr(d.why, "investigate"));
    f.verdict = "isolate", f.host_state = "quarantined", f.held = 1;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine);
    f.verdict = NULL, f.host_state = "drained", f.held = 0;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine); /* no run: not a pass */
    /* the gate: investigate leaves the host investigating, which goes back */
    f.step = PLAN_REC_GATE, f.host_state = "investigating", f.verdict = "investigate";
    f.verdict_reason = "container_gpu (fail)";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine &&
          !strcmp(d.why, "gate: verdict investigate (container_gpu (fail)); the host is "
                         "investigating"));
    f.verdict_reason = NULL;
    /* a gate job that expired */
    f.job_state = "failed", f.job_error = "lease_lost: …", f.verdict = NULL;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine);
    /* a step that finds the host elsewhere */
    f.job_state = NULL, f.host_state = "ready";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && !d.requarantine);
    /* the monitor lost it before the gate was queued: back in quarantine too */
    f.host_state = "unreachable";
    CHECK(decide(&f, &d) == PLAN_REC_FAIL && d.requarantine && strstr(d.why, "unreachable"));
}

/* Someone else acting on the host cancels; the host stays where they put it. */
static void test_cancel(void)
{
    struct plan_rec_decision d;
    struct plan_rec_facts f = fresh();
    f.intervention = "host.release by alice (admin)";
    CHECK(decide(&f, &d) == PLAN_REC_CANCEL && !d.requarantine && strstr(d.why, "alice"));
    f = fresh();
    f.started = 1, f.held = 0, f.host_state = "drained", f.step = PLAN_REC_DIAGNOSTICS;
    f.foreign_job = "stop job 1 queued by system:idle-policy";
    CHECK(decide(&f, &d) == PLAN_REC_CANCEL && !d.requarantine);
    f.foreign_job = NULL, f.job_state = "cancelled", f.job_error = "cancelled: by bob";
    CHECK(decide(&f, &d) == PLAN_REC_CANCEL && !d.requarantine);
    /* an intervention wins over anything the step would do */
    f.job_state = "succeeded", f.verdict = "accept", f.intervention = "host.stop by bob (operator)";
    CHECK(decide(&f, &d) == PLAN_REC_CANCEL);
}

/* Reasons from the database are cut without splitting a character. */
static void test_reason_bounded(void)
{
    char reason[1500];
    memset(reason, 'a', sizeof reason);
    memcpy(reason + 380, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);
    reason[sizeof reason - 1] = '\0';
    struct plan_rec_facts f = fresh();
    f.hold_is_ours = 0, f.hold_reason = reason;
    struct plan_rec_decision d;
    CHECK(decide(&f, &d) == PLAN_REC_FAIL);
    size_t n = strlen(d.why);
    CHECK(n < sizeof d.why);
    for (size_t i = 0; i < n; i++) /* every é whole: a lead byte is followed by its tail */
        if ((unsigned char)d.why[i] == 0xc3)
            CHECK(i + 1 < n && (unsigned char)d.why[i + 1] == 0xa9);
}

UNIT_SUITE(recovery_tests) = {
    {"recovery: the state machine's recovery rows", test_state_machine},
    {"recovery: step names and job kinds", test_step_names},
    {"recovery: drain, diagnostics, gate, ready", test_walk},
    {"recovery: stops at the first failure, back in quarantine", test_failures},
    {"recovery: someone else acting cancels it", test_cancel},
    {"recovery: reasons bounded, characters whole", test_reason_bounded},
    UNIT_END,
};
