/* test_rollout.c — the rollout planner (planner/rollout.h): waves, every step of a host
 * going forward, every failure and its rollback, the unavailable limit, pause, resume
 * and abort, the canary, the soak, and a rollback that fails. The driver applies one
 * decision at a time; these tests apply them to the facts by hand, as the database would
 * show them after the driver's transaction. */
#include <string.h>

#include "planner/host_state.h"
#include "planner/rollout.h"
#include "unit.h"

#define N 4

static struct plan_ro_host hosts[N];
static struct plan_ro_facts facts;

/* A rollout of n ready hosts on their old stack, waves of max (canary first). */
static void fresh(int n, int canary, int max, int ratio)
{
    memset(hosts, 0, sizeof hosts);
    for (int i = 0; i < n; i++)
        hosts[i] = (struct plan_ro_host){.wave = plan_rollout_wave(i, canary, max),
                                         .step = PLAN_STEP_PENDING,
                                         .rollback_step = PLAN_STEP_NONE,
                                         .host_state = "ready",
                                         .has_from = 1,
                                         .gate_ok = 1};
    facts = (struct plan_ro_facts){.state = PLAN_RO_RUNNING,
                                   .waves = plan_rollout_waves(n, canary, max),
                                   .canary = canary,
                                   .ratio_set = ratio,
                                   .max_unavailable = max,
                                   .nhosts = n,
                                   .hosts = hosts};
}

static enum plan_ro_action decide(struct plan_ro_decision *d)
{
    memset(d, 0x55, sizeof *d);
    plan_rollout_next(&facts, d);
    return d->action;
}

/* The job of the host's current step. */
static void job(int i, const char *state, const char *verdict)
{
    hosts[i].job_state = state;
    hosts[i].busy = state != NULL && (!strcmp(state, "queued") || !strcmp(state, "running"));
    hosts[i].verdict = verdict;
}

/* Walks host i from pending to done, checking each decision (the comparison passes). */
static int walk_forward(int i)
{
    struct plan_ro_decision d;
    struct plan_ro_host *h = &hosts[i];
    if (decide(&d) != PLAN_RO_START || d.host != i)
        return 0;
    h->step = PLAN_STEP_DRAINING, h->host_state = "draining";
    if (decide(&d) != PLAN_RO_DRAINED || d.host != i || d.rollback)
        return 0;
    h->host_state = "drained";
    if (decide(&d) != PLAN_RO_PROVISION || d.host != i || d.rollback)
        return 0;
    h->step = PLAN_STEP_PROVISIONING, h->provisioned = 1;
    job(i, "queued", NULL);
    if (decide(&d) != PLAN_RO_WAIT)
        return 0;
    job(i, "running", NULL), h->host_state = "provisioning";
    if (decide(&d) != PLAN_RO_WAIT)
        return 0;
    job(i, "succeeded", NULL), h->host_state = "provisioned", h->on_target = 1, h->gate_ok = 0;
    if (decide(&d) != PLAN_RO_GATE || d.host != i || d.rollback)
        return 0;
    h->step = PLAN_STEP_GATING, h->host_state = "draining";
    job(i, "running", NULL);
    if (decide(&d) != PLAN_RO_WAIT)
        return 0;
    job(i, "succeeded", "accept"), h->host_state = "drained", h->gate_is_run = 1, h->gate_ok = 1;
    if (decide(&d) != PLAN_RO_ADVANCE || d.host != i)
        return 0;
    if (d.next != (facts.ratio_set ? PLAN_STEP_COMPARING : PLAN_STEP_RESUMING))
        return 0;
    h->step = d.next, h->job_state = NULL, h->verdict = NULL;
    if (facts.ratio_set) {
        if (decide(&d) != PLAN_RO_COMPARE || d.host != i)
            return 0;
        h->step = PLAN_STEP_RESUMING; /* the driver judged it (plan_rollout_judge) */
    }
    if (decide(&d) != PLAN_RO_RESUME || d.host != i || d.rollback)
        return 0;
    h->step = PLAN_STEP_DONE, h->host_state = "ready";
    return 1;
}

static void test_waves(void)
{
    /* canary 1, then waves of 2: hosts 0 | 1 2 | 3 */
    CHECK(plan_rollout_wave(0, 1, 2) == 0 && plan_rollout_wave(1, 1, 2) == 1);
    CHECK(plan_rollout_wave(2, 1, 2) == 1 && plan_rollout_wave(3, 1, 2) == 2);
    CHECK(plan_rollout_waves(4, 1, 2) == 3);
    /* no canary: waves of max from the start */
    CHECK(plan_rollout_wave(0, 0, 2) == 0 && plan_rollout_wave(2, 0, 2) == 1);
    CHECK(plan_rollout_waves(4, 0, 2) == 2 && plan_rollout_waves(5, 0, 2) == 3);
    /* a canary as big as the scope: one wave */
    CHECK(plan_rollout_waves(3, 3, 1) == 1);
    CHECK(plan_rollout_waves(0, 1, 1) == 0);
    /* max_unavailable: hosts, or a percentage of the scope rounded down, at least 1 */
    CHECK(plan_rollout_max_unavailable(5, 0, 40) == 5);
    CHECK(plan_rollout_max_unavailable(0, 25, 40) == 10);
    CHECK(plan_rollout_max_unavailable(0, 25, 7) == 1);
    CHECK(plan_rollout_max_unavailable(0, 100, 3) == 3);
    CHECK(plan_rollout_max_unavailable(0, 1, 3) == 1);
}

static void test_names(void)
{
    CHECK(plan_ro_step_parse("gating") == PLAN_STEP_GATING);
    CHECK(plan_ro_step_parse(NULL) == PLAN_STEP_NONE);
    CHECK(plan_ro_step_parse("ready") == -1);
    CHECK(plan_ro_state_parse("rolling_back") == PLAN_RO_ROLLING_BACK);
    CHECK(plan_ro_state_parse("succeeded") == -1);
    CHECK_STR(plan_ro_action_name(PLAN_RO_NEXT_WAVE), "next_wave");
    CHECK_STR(plan_ro_action_name(PLAN_RO_FINISH), "finish");
}

/* The path the driver takes keeps the host out of service until the comparison: gated
 * while draining, an accepted gate leaves it drained. */
static void test_host_path(void)
{
    enum plan_host_state s = HS_READY;
    unsigned fx;
    const struct {
        enum plan_host_event ev;
        enum plan_host_state to;
    } path[] = {
        {HE_DRAIN, HS_DRAINING},
        {HE_DRAINED_WHEN_IDLE, HS_DRAINED},
        {HE_PROVISION_STARTED, HS_PROVISIONING},
        {HE_PROVISION_SUCCEEDED, HS_PROVISIONED},
        {HE_DRAIN, HS_DRAINING},
        {HE_GATE_STARTED, HS_DRAINING},
        {HE_GATE_ACCEPTED, HS_DRAINED},
        {HE_RESUME, HS_READY},
    };
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
        CHECK(plan_host_next(s, 0, path[i].ev, -1, plan_host_events[path[i].ev].actor, &s, &fx) ==
              PLAN_HOST_OK);
        CHECK(s == path[i].to);
        if (path[i].ev == HE_GATE_ACCEPTED)
            CHECK(fx & PLAN_FX_SET_GATE);
    }
    /* a provision is allowed from drained (the first drain) and a gate's verdict other than
     * accept leaves the draining host drained */
    CHECK(plan_host_allows("drained", 0, HE_PROVISION_REQUESTED, PLAN_ACTOR_OPERATOR) ==
          PLAN_HOST_OK);
    CHECK(plan_host_next(HS_DRAINING, 0, HE_GATE_INVESTIGATE, -1, PLAN_ACTOR_SYSTEM, &s, &fx) ==
              PLAN_HOST_OK &&
          s == HS_DRAINED);
}

/* Three waves (canary 1, then 1 a wave) with the throughput check: each host walks its
 * whole sequence, each wave soaks, the last one succeeds the rollout. */
static void test_happy_path(void)
{
    struct plan_ro_decision d;
    fresh(3, 1, 1, 1);
    facts.soak_over = 0;
    for (int w = 0; w < 3; w++) {
        CHECK(facts.current_wave == w);
        CHECK(walk_forward(w));
        CHECK(decide(&d) == PLAN_RO_SOAK && d.host == -1);
        facts.soaking = 1;
        CHECK(decide(&d) == PLAN_RO_WAIT && strstr(d.why, "soaking"));
        facts.soak_over = 1;
        CHECK(decide(&d) == PLAN_RO_NEXT_WAVE && !d.pause);
        facts.current_wave++, facts.soaking = 0, facts.soak_over = 0;
    }
    CHECK(decide(&d) == PLAN_RO_SUCCEED);
    /* without a throughput check the gate leads straight to resuming */
    fresh(2, 0, 1, 0);
    CHECK(walk_forward(0));
}

/* Never more than max_unavailable out of service: a canary of 3 with a limit of 1 goes
 * one host at a time; failed hosts not ready count too. */
static void test_unavailable_limit(void)
{
    struct plan_ro_decision d;
    fresh(4, 3, 1, 0);
    CHECK(decide(&d) == PLAN_RO_START && d.host == 0);
    hosts[0].step = PLAN_STEP_DRAINING, hosts[0].host_state = "draining", hosts[0].busy = 1;
    CHECK(plan_rollout_unavailable(&facts) == 1);
    CHECK(decide(&d) == PLAN_RO_WAIT && strstr(d.why, "1 of 1"));
    facts.max_unavailable = 2;
    CHECK(decide(&d) == PLAN_RO_START && d.host == 1);
    hosts[1].step = PLAN_STEP_GATING, hosts[1].host_state = "draining";
    job(1, "running", NULL);
    CHECK(plan_rollout_unavailable(&facts) == 2);
    CHECK(decide(&d) == PLAN_RO_WAIT);
    /* every out-of-service step counts; done, pending and skipped do not */
    const enum plan_ro_step out[] = {PLAN_STEP_DRAINING, PLAN_STEP_PROVISIONING, PLAN_STEP_GATING,
                                     PLAN_STEP_COMPARING, PLAN_STEP_RESUMING};
    fresh(4, 0, 1, 0);
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
        hosts[0].step = out[k];
        CHECK(plan_rollout_unavailable(&facts) == 1);
    }
    hosts[0].step = PLAN_STEP_DONE, hosts[1].step = PLAN_STEP_SKIPPED;
    CHECK(plan_rollout_unavailable(&facts) == 0);
    /* a failed host counts while it is not ready; a rollback step out of service counts */
    hosts[2].step = PLAN_STEP_FAILED, hosts[2].host_state = "drained";
    CHECK(plan_rollout_unavailable(&facts) == 1);
    hosts[2].host_state = "ready";
    CHECK(plan_rollout_unavailable(&facts) == 0);
    hosts[0].rollback_step = PLAN_STEP_PROVISIONING;
    hosts[3].rollback_step = PLAN_STEP_FAILED, hosts[3].host_state = "quarantined";
    CHECK(plan_rollout_unavailable(&facts) == 2);
    hosts[0].rollback_step = PLAN_STEP_DONE;
    CHECK(plan_rollout_unavailable(&facts) == 1);
}

/* Brings host 0 (of a fresh rollout without canary) to step at with the state given. */
static void at(enum plan_ro_step step, const char *state)
{
    fresh(3, 0, 1, 1);
    hosts[0].step = step, hosts[0].host_state = state, hosts[0].provisioned = 1;
    hosts[0].on_target = 1;
}

static int fails(const char *needle)
{
    struct plan_ro_decision d;
    return decide(&d) == PLAN_RO_FAIL && d.host == 0 && strstr(d.why, needle) != NULL;
}

/* Every failure going forward fails the rollout, naming the host and why. */
static void test_failures(void)
{
    at(PLAN_STEP_PROVISIONING, "failed");
    job(0, "failed", NULL), hosts[0].job_error = "step_failed: docker pull failed";
    CHECK(fails("docker pull failed"));
    job(0, "cancelled", NULL);
    CHECK(fails("cancelled"));
    job(0, NULL, NULL);
    CHECK(fails("gone"));
    /* the provision succeeded but the host is not provisioned (someone else's hand) */
    job(0, "succeeded", NULL), hosts[0].host_state = "ready";
    CHECK(fails("ready"));
    at(PLAN_STEP_GATING, "drained");
    job(0, "succeeded", "investigate"), hosts[0].verdict_reason = "workload 12 < 50";
    CHECK(fails("investigate") && fails("workload 12 < 50"));
    job(0, "failed", NULL), hosts[0].job_error = "timed_out: the gate ran too long";
    CHECK(fails("timed_out"));
    job(0, "succeeded", NULL);
    CHECK(fails("no verdict"));
    /* accepted, but ready: it went back into service before the comparison */
    job(0, "succeeded", "accept"), hosts[0].host_state = "ready", hosts[0].gate_is_run = 1;
    CHECK(fails("ready"));
    job(0, "succeeded", "accept"), hosts[0].host_state = "drained", hosts[0].gate_is_run = 0;
    CHECK(fails("accepted gate"));
    /* the gate isolated it */
    hosts[0].host_state = "quarantined", hosts[0].held = 1, hosts[0].hold_reason = "Xid 79";
    CHECK(fails("Xid 79"));
    /* someone else acted on it, or queued a job */
    at(PLAN_STEP_DRAINING, "draining");
    hosts[0].intervention = "host.resume by alice (operator)";
    CHECK(fails("alice"));
    at(PLAN_STEP_DRAINING, "draining");
    hosts[0].foreign_job = "gate job 1234 queued by bob", hosts[0].busy = 1;
    CHECK(fails("bob"));
    at(PLAN_STEP_DRAINING, "stopping");
    CHECK(fails("stopping"));
    at(PLAN_STEP_COMPARING, "ready");
    CHECK(fails("ready"));
    at(PLAN_STEP_RESUMING, "drained");
    hosts[0].gate_ok = 0;
    CHECK(fails("accepted gate"));
    /* a done host the monitor isolated (during the soak) */
    at(PLAN_STEP_DONE, "quarantined");
    facts.soaking = 1;
    hosts[0].isolation = "Xid 48 on GPU 1: double bit ECC error";
    CHECK(fails("double bit ECC"));
}

/* The comparison: at least the ratio passes; under it, or with nothing to compare (fail
 * closed), fails. */
static void test_judge(void)
{
    char why[300];
    double ratio;
    CHECK(plan_rollout_judge(3, 96, 100, 0.95, &ratio, why, sizeof why) == 1);
    CHECK(ratio > 0.959 && ratio < 0.961 && strstr(why, "at least"));
    CHECK(plan_rollout_judge(3, 95, 100, 0.95, &ratio, why, sizeof why) == 1);
    CHECK(plan_rollout_judge(1, 80, 100, 0.95, &ratio, why, sizeof why) == 0);
    CHECK(strstr(why, "under") && strstr(why, "0.8"));
    CHECK(plan_rollout_judge(0, 120, 0, 0.95, &ratio, why, sizeof why) == 0);
    CHECK(ratio == 0 && strstr(why, "fail closed"));
    CHECK(plan_rollout_judge(2, 10, 0, 0.5, &ratio, why, sizeof why) == 0);
}

/* After a failure: host 0 done (ready on the new stack), host 1 failed at its gate
 * (drained on the new stack), host 2 never started. The limit is 1. */
static void failed_rollout(void)
{
    fresh(3, 0, 1, 1);
    facts.state = PLAN_RO_ROLLING_BACK;
    hosts[0].step = PLAN_STEP_DONE, hosts[0].rollback_step = PLAN_STEP_PENDING;
    hosts[0].provisioned = 1, hosts[0].on_target = 1;
    hosts[1].step = PLAN_STEP_FAILED, hosts[1].rollback_step = PLAN_STEP_PENDING;
    hosts[1].host_state = "drained", hosts[1].provisioned = 1, hosts[1].on_target = 1;
    hosts[2].rollback_step = PLAN_STEP_NOT_NEEDED;
}

/* Walks host i's rollback from draining to done, checking each decision. */
static int walk_back(int i)
{
    struct plan_ro_decision d;
    struct plan_ro_host *h = &hosts[i];
    if (decide(&d) != PLAN_RO_PROVISION || d.host != i || !d.rollback)
        return 0;
    h->rollback_step = PLAN_STEP_PROVISIONING;
    job(i, "running", NULL), h->host_state = "provisioning";
    if (decide(&d) != PLAN_RO_WAIT)
        return 0;
    job(i, "succeeded", NULL), h->host_state = "provisioned", h->on_target = 0;
    if (decide(&d) != PLAN_RO_GATE || d.host != i || !d.rollback)
        return 0;
    h->rollback_step = PLAN_STEP_GATING, h->host_state = "draining";
    job(i, "running", NULL);
    if (decide(&d) != PLAN_RO_WAIT)
        return 0;
    job(i, "succeeded", "accept"), h->host_state = "drained", h->gate_is_run = 1, h->gate_ok = 1;
    if (decide(&d) != PLAN_RO_ADVANCE || d.next != PLAN_STEP_RESUMING || !d.rollback)
        return 0;
    h->rollback_step = PLAN_STEP_RESUMING, h->job_state = NULL, h->verdict = NULL;
    if (decide(&d) != PLAN_RO_RESUME || d.host != i || !d.rollback)
        return 0;
    h->rollback_step = PLAN_STEP_DONE, h->host_state = "ready";
    return 1;
}

/* The rollback: the host already out of service first, the ready one only within the
 * limit; no comparison on the way back; all back → rolled_back. */
static void test_rollback(void)
{
    struct plan_ro_decision d;
    failed_rollout();
    CHECK(plan_rollout_unavailable(&facts) == 1);
    CHECK(decide(&d) == PLAN_RO_RB_START && d.host == 1 && !d.drain);
    hosts[1].rollback_step = PLAN_STEP_DRAINING;
    CHECK(walk_back(1));
    CHECK(decide(&d) == PLAN_RO_RB_START && d.host == 0 && d.drain);
    hosts[0].rollback_step = PLAN_STEP_DRAINING, hosts[0].host_state = "draining";
    CHECK(decide(&d) == PLAN_RO_DRAINED && d.host == 0 && d.rollback);
    hosts[0].host_state = "drained";
    CHECK(walk_back(0));
    CHECK(decide(&d) == PLAN_RO_FINISH && !strcmp(d.finish_state, "rolled_back"));
    /* its job in flight ends first */
    failed_rollout();
    hosts[1].busy = 1;
    CHECK(decide(&d) == PLAN_RO_WAIT);
    /* a host interrupted while draining (never provisioned) is just resumed */
    failed_rollout();
    hosts[1].provisioned = 0, hosts[1].on_target = 0, hosts[1].host_state = "draining";
    CHECK(decide(&d) == PLAN_RO_RB_START && d.host == 1);
    hosts[1].rollback_step = PLAN_STEP_DRAINING;
    CHECK(decide(&d) == PLAN_RO_DRAINED && d.host == 1);
    hosts[1].host_state = "drained";
    CHECK(decide(&d) == PLAN_RO_ADVANCE && d.next == PLAN_STEP_RESUMING);
    hosts[1].rollback_step = PLAN_STEP_RESUMING;
    CHECK(decide(&d) == PLAN_RO_RESUME && d.host == 1 && d.rollback);
    /* nothing touched (an abort before any host): rolled back at once */
    fresh(2, 0, 1, 0);
    facts.state = PLAN_RO_ROLLING_BACK;
    hosts[0].rollback_step = hosts[1].rollback_step = PLAN_STEP_NOT_NEEDED;
    CHECK(decide(&d) == PLAN_RO_FINISH && !strcmp(d.finish_state, "rolled_back"));
}

/* A rollback step that fails leaves that host where it is; the others go on; the rollout
 * ends failed. */
static void test_rollback_failure(void)
{
    struct plan_ro_decision d;
    failed_rollout();
    facts.max_unavailable = 2;
    hosts[1].rollback_step = PLAN_STEP_GATING, hosts[1].host_state = "quarantined";
    hosts[1].held = 1, hosts[1].hold_reason = "gate isolate: GPU 3 missing";
    job(1, "succeeded", "isolate");
    CHECK(decide(&d) == PLAN_RO_HOST_FAIL && d.host == 1 && strstr(d.why, "GPU 3 missing"));
    hosts[1].rollback_step = PLAN_STEP_FAILED;
    /* the other host goes on (limit 2: the failed host counts 1) */
    CHECK(decide(&d) == PLAN_RO_RB_START && d.host == 0);
    hosts[0].rollback_step = PLAN_STEP_DRAINING, hosts[0].host_state = "drained";
    CHECK(walk_back(0));
    CHECK(decide(&d) == PLAN_RO_FINISH && !strcmp(d.finish_state, "failed"));
    /* a failed rollback provision */
    failed_rollout();
    hosts[1].rollback_step = PLAN_STEP_PROVISIONING, hosts[1].host_state = "failed";
    job(1, "failed", NULL), hosts[1].job_error = "step_failed: image pull";
    CHECK(decide(&d) == PLAN_RO_HOST_FAIL && d.host == 1 && strstr(d.why, "image pull"));
    /* limit 1, taken by the failed host: the ready host cannot go back; the rollout ends
     * failed saying so */
    hosts[1].rollback_step = PLAN_STEP_FAILED;
    CHECK(decide(&d) == PLAN_RO_FINISH && !strcmp(d.finish_state, "failed") &&
          strstr(d.why, "left on the new stack"));
}

/* Pause: hosts in flight finish their steps, no new host starts; resume goes on. */
static void test_pause_resume(void)
{
    struct plan_ro_decision d;
    fresh(4, 0, 2, 0);
    hosts[0].step = PLAN_STEP_DRAINING, hosts[0].host_state = "draining";
    facts.state = PLAN_RO_PAUSED;
    CHECK(decide(&d) == PLAN_RO_DRAINED && d.host == 0);
    hosts[0].host_state = "drained";
    CHECK(decide(&d) == PLAN_RO_PROVISION && d.host == 0);
    hosts[0].step = PLAN_STEP_PROVISIONING;
    job(0, "running", NULL);
    CHECK(decide(&d) == PLAN_RO_WAIT && strstr(d.why, "paused"));
    /* a failure while paused still rolls back */
    job(0, "failed", NULL);
    CHECK(decide(&d) == PLAN_RO_FAIL && d.host == 0);
    job(0, "running", NULL);
    facts.state = PLAN_RO_RUNNING;
    CHECK(decide(&d) == PLAN_RO_START && d.host == 1);
}

/* pause_after_canary: the canary's soak pauses the rollout, once. */
static void test_canary_pause(void)
{
    struct plan_ro_decision d;
    fresh(3, 1, 2, 0);
    facts.pause_after_canary = 1;
    CHECK(walk_forward(0));
    CHECK(decide(&d) == PLAN_RO_SOAK);
    facts.soaking = 1, facts.soak_over = 1;
    CHECK(decide(&d) == PLAN_RO_NEXT_WAVE && d.pause);
    facts.current_wave = 1, facts.soaking = 0, facts.soak_over = 0;
    facts.state = PLAN_RO_PAUSED, facts.canary_paused = 1;
    CHECK(decide(&d) == PLAN_RO_WAIT);
    facts.state = PLAN_RO_RUNNING;
    CHECK(decide(&d) == PLAN_RO_START && d.host == 1);
    /* the next waves never pause */
    hosts[1].step = hosts[2].step = PLAN_STEP_DONE;
    facts.soaking = 1, facts.soak_over = 1;
    CHECK(decide(&d) == PLAN_RO_NEXT_WAVE && !d.pause);
    /* without the option the canary's soak does not pause */
    fresh(2, 1, 1, 0);
    hosts[0].step = PLAN_STEP_DONE;
    facts.soaking = 1, facts.soak_over = 1;
    CHECK(decide(&d) == PLAN_RO_NEXT_WAVE && !d.pause);
}

/* A pending host that is not ready (or already on the target) when its turn comes is
 * skipped; a wave of skipped hosts soaks. */
static void test_skip(void)
{
    struct plan_ro_decision d;
    fresh(2, 0, 2, 0);
    hosts[0].host_state = "drained";
    CHECK(decide(&d) == PLAN_RO_SKIP && d.host == 0 && strstr(d.why, "drained"));
    hosts[0].step = PLAN_STEP_SKIPPED;
    hosts[1].on_target = 1;
    CHECK(decide(&d) == PLAN_RO_SKIP && d.host == 1 && strstr(d.why, "target"));
    hosts[1].step = PLAN_STEP_SKIPPED;
    CHECK(decide(&d) == PLAN_RO_SOAK);
}

UNIT_SUITE(rollout_tests) = {
    {"rollout: waves and the unavailable limit resolved", test_waves},
    {"rollout: step and action names", test_names},
    {"rollout: the host path stays out of service until compared", test_host_path},
    {"rollout: the happy path, wave by wave", test_happy_path},
    {"rollout: never more than max_unavailable out of service", test_unavailable_limit},
    {"rollout: every failure going forward fails the rollout", test_failures},
    {"rollout: the throughput comparison", test_judge},
    {"rollout: the rollback, within the limit", test_rollback},
    {"rollout: a rollback step that fails", test_rollback_failure},
    {"rollout: pause and resume", test_pause_resume},
    {"rollout: the pause after the canary", test_canary_pause},
    {"rollout: hosts skipped when their turn comes", test_skip},
    UNIT_END,
};
