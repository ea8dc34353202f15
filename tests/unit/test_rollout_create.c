/* test_rollout_create.c — the create's and the control's decisions
 * (planner/rollout_create.h): a host's scope and its skip reason, the driver match, each
 * refusal in its order, the options that skip one (no ratio, force), the layout, every
 * action × state × touched of pause, resume and abort; and the driver's gate_ok, which
 * is plan_gate_covers_stack() of the typed ids db/ reads (service/rollout.h). */
#include <stdlib.h>
#include <string.h>

#include "db/rollouts.h"
#include "planner/rollout.h"
#include "planner/rollout_create.h"
#include "service/rollout.h"
#include "unit.h"

#define TARGET "11111111-1111-4111-8111-111111111111"
#define OTHER  "22222222-2222-4222-8222-222222222222"

static int scope(const char *state, const char *stack, char reason[160])
{
    struct plan_ro_candidate h = {state, stack};
    memset(reason, 'x', 160);
    return plan_ro_in_scope(&h, TARGET, reason, 160);
}

static void test_scope(void)
{
    char why[160];
    /* ready on another stack, or on none: in scope, no reason */
    CHECK(scope("ready", OTHER, why) == 1 && why[0] == '\0');
    CHECK(scope("ready", NULL, why) == 1 && why[0] == '\0');
    /* on the target already: skipped, whatever the state */
    CHECK(scope("ready", TARGET, why) == 0);
    CHECK_STR(why, "already on the target stack");
    CHECK(scope("draining", TARGET, why) == 0);
    CHECK_STR(why, "already on the target stack");
    /* not ready: skipped naming the state */
    CHECK(scope("registered", NULL, why) == 0);
    CHECK_STR(why, "the host is registered, not ready");
    CHECK(scope("drained", OTHER, why) == 0);
    CHECK_STR(why, "the host is drained, not ready");
    CHECK(scope("quarantined", OTHER, why) == 0);
    CHECK_STR(why, "the host is quarantined, not ready");
    /* a short buffer is cut, still a string */
    struct plan_ro_candidate h = {"provisioning", OTHER};
    char small[12];
    CHECK(plan_ro_in_scope(&h, TARGET, small, sizeof small) == 0);
    CHECK_STR(small, "the host is");
}

static void test_driver(void)
{
    CHECK(plan_ro_driver_matches("550.54.15", "550.54.15") == 1);
    CHECK(plan_ro_driver_matches("550.54.14", "550.54.15") == 0);
    CHECK(plan_ro_driver_matches("550.54", "550.54.15") == 0);
    CHECK(plan_ro_driver_matches(NULL, "550.54.15") == 0); /* the host reports none */
    CHECK(plan_ro_driver_matches("550.54.15", NULL) == 0); /* the stack names none */
    CHECK(plan_ro_driver_matches(NULL, NULL) == 0);
}

/* Every fact wrong at once: fixing them one by one walks the refusals in their order. */
static void test_refusal_order(void)
{
    struct plan_ro_request rq = {.canary = 5, .max_unavailable = 1, .ratio_set = 1};
    struct plan_ro_create_facts f = {.active = 1, .in_scope = 0, .mismatched = 1};
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_POOL_UNKNOWN);
    f.pool_found = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_STACK_UNKNOWN);
    f.stack_found = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_ACTIVE);
    f.active = 0;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NOTHING);
    f.in_scope = 3;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_DRIVER_MISMATCH);
    f.mismatched = 0;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NO_WORKLOAD);
    f.has_workload = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NO_BASELINE);
    f.any_baseline = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_CANARY_TOO_BIG);
    rq.canary = 3; /* as many as in scope */
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_OK);
    rq.canary = 4;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_CANARY_TOO_BIG);
    rq.canary = 0;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_OK);
}

static void test_refusal_options(void)
{
    struct plan_ro_create_facts f = {.pool_found = 1, .stack_found = 1, .in_scope = 2};
    /* no ratio: neither the workload nor a baseline is needed */
    struct plan_ro_request rq = {.canary = 1, .max_unavailable = 1};
    CHECK(plan_ro_needs_baseline(&rq) == 0);
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_OK);
    /* a ratio: both are */
    rq.ratio_set = 1;
    CHECK(plan_ro_needs_baseline(&rq) == 1);
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NO_WORKLOAD);
    f.has_workload = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NO_BASELINE);
    /* force skips the baseline, not the workload nor the driver */
    rq.force = 1;
    CHECK(plan_ro_needs_baseline(&rq) == 0);
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_OK);
    f.has_workload = 0;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_NO_WORKLOAD);
    f.has_workload = 1;
    f.mismatched = 1;
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_DRIVER_MISMATCH);
    /* an active rollout comes before an empty scope */
    f = (struct plan_ro_create_facts){.pool_found = 1, .stack_found = 1, .active = 1};
    CHECK(plan_ro_create_refusal(&rq, &f) == PLAN_RO_ACTIVE);
}

static void test_layout(void)
{
    struct plan_ro_layout l;
    /* 7 hosts, canary 1, 2 at a time: 0 | 1 2 | 3 4 | 5 6 */
    struct plan_ro_request rq = {.canary = 1, .max_unavailable = 2};
    plan_ro_layout(&rq, 7, &l);
    CHECK(l.max_hosts == 2 && l.waves == 4);
    /* 25% of 8 hosts, no canary: 2 at a time, 4 waves */
    rq = (struct plan_ro_request){.canary = 0, .max_unavailable_pct = 25};
    plan_ro_layout(&rq, 8, &l);
    CHECK(l.max_hosts == 2 && l.waves == 4);
    /* 10% of 3 hosts rounds down to 0: at least 1 */
    rq = (struct plan_ro_request){.canary = 3, .max_unavailable_pct = 10};
    plan_ro_layout(&rq, 3, &l);
    CHECK(l.max_hosts == 1 && l.waves == 1);
}

/* Every action × state × touched: the pairs listed apply, every other is refused. */
static void test_control_table(void)
{
    static const struct {
        enum plan_ro_ctl action;
        const char *state;
        int touched;
        const char *to;
        int roll_back, release;
    } applies[] = {
        {PLAN_RO_CTL_PAUSE, "running", 0, "paused", 0, 0},
        {PLAN_RO_CTL_PAUSE, "running", 1, "paused", 0, 0},
        {PLAN_RO_CTL_RESUME, "paused", 0, "running", 0, 0},
        {PLAN_RO_CTL_RESUME, "paused", 1, "running", 0, 0},
        {PLAN_RO_CTL_ABORT, "running", 0, "aborted", 0, 1},
        {PLAN_RO_CTL_ABORT, "running", 1, "rolling_back", 1, 0},
        {PLAN_RO_CTL_ABORT, "paused", 0, "aborted", 0, 1},
        {PLAN_RO_CTL_ABORT, "paused", 1, "rolling_back", 1, 0},
    };
    static const char *const states[] = {"running",   "paused",      "rolling_back",
                                         "succeeded", "rolled_back", "aborted",
                                         "failed",    "Running",     ""};
    int applied = 0, refused = 0;
    for (int a = 0; a < PLAN_RO_CTL__COUNT; a++)
        for (size_t s = 0; s <= sizeof states / sizeof states[0]; s++)
            for (int t = 0; t < 2; t++) {
                const char *st = s < sizeof states / sizeof states[0] ? states[s] : NULL;
                struct plan_ro_ctl_decision d;
                memset(&d, 0x55, sizeof d);
                enum plan_ro_refusal r = plan_ro_control((enum plan_ro_ctl)a, st, t, &d);
                size_t k = 0, n = sizeof applies / sizeof applies[0];
                while (k < n && !(applies[k].action == (enum plan_ro_ctl)a && st != NULL &&
                                  !strcmp(applies[k].state, st) && applies[k].touched == t))
                    k++;
                if (k == n) {
                    CHECK(r == PLAN_RO_BAD_STATE && d.to == NULL);
                    CHECK(d.roll_back == 0 && d.release == 0 && d.abort == 0);
                    refused++;
                    continue;
                }
                CHECK(r == PLAN_RO_OK);
                CHECK_STR(d.to, applies[k].to);
                CHECK(d.roll_back == applies[k].roll_back && d.release == applies[k].release);
                CHECK(d.abort == (a == PLAN_RO_CTL_ABORT));
                applied++;
            }
    CHECK(applied == 8 && refused == 3 * 10 * 2 - 8);
}

static void test_names(void)
{
    CHECK_STR(plan_ro_ctl_names[PLAN_RO_CTL_PAUSE], "pause");
    CHECK_STR(plan_ro_ctl_names[PLAN_RO_CTL_RESUME], "resume");
    CHECK_STR(plan_ro_ctl_names[PLAN_RO_CTL_ABORT], "abort");
    for (int i = 0; i < PLAN_RO__REFUSALS; i++)
        CHECK(plan_ro_refusal_names[i] != NULL);
    CHECK_STR(plan_ro_refusal_names[PLAN_RO_NO_BASELINE], "no_baseline");
}

/* The driver's facts: gate_ok is the one rule over the ids db/ returns. */
static void test_gate_ok(void)
{
    char a[] = TARGET, a2[] = TARGET, b[] = OTHER, pending[] = "pending";
    struct db_rollout_host_facts h[5];
    memset(h, 0, sizeof h);
    for (int i = 0; i < 5; i++)
        h[i].step = pending;
    h[0].gate_stack_id = a, h[0].current_stack_id = a2;   /* the gate ran on its stack */
    h[1].gate_stack_id = b, h[1].current_stack_id = a;    /* on another stack */
    h[2].gate_stack_id = NULL, h[2].current_stack_id = a; /* no accepted gate */
    h[3].gate_stack_id = a, h[3].current_stack_id = NULL; /* no stack */
    /* h[4]: neither */
    struct db_rollout_facts f = {.nhosts = 5, .hosts = h};
    struct plan_ro_host *ph = svc_rollout_plan_hosts(&f);
    CHECK(ph != NULL);
    int ok[5];
    for (int i = 0; i < 5; i++)
        ok[i] = ph[i].gate_ok;
    int steps = ph[0].step == PLAN_STEP_PENDING && ph[0].rollback_step == PLAN_STEP_NONE;
    free(ph);
    CHECK(steps);
    CHECK(ok[0] == 1 && ok[1] == 0 && ok[2] == 0 && ok[3] == 0 && ok[4] == 0);
}

UNIT_SUITE(rollout_create_tests) = {
    {"rollout create: a host in scope or skipped, and why", test_scope},
    {"rollout create: the driver match", test_driver},
    {"rollout create: each refusal in its order", test_refusal_order},
    {"rollout create: no ratio, a ratio, force", test_refusal_options},
    {"rollout create: the limit and the waves", test_layout},
    {"rollout control: every action x state x touched", test_control_table},
    {"rollout create: names", test_names},
    {"rollout driver: gate_ok is plan_gate_covers_stack", test_gate_ok},
    UNIT_END,
};
