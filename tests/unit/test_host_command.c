/* test_host_command.c — planner/host_command.c: what each host command may do, from typed
 * facts; and planner/monitor_policy.c: the monitor's consequences and its GPU rules. */
#include <stdio.h>
#include <string.h>

#include "planner/host_command.h"
#include "planner/monitor_policy.h"
#include "unit.h"

#define OP PLAN_ACTOR_OPERATOR
#define AD PLAN_ACTOR_ADMIN
#define SY PLAN_ACTOR_SYSTEM

/* A ready host on its stack with an accepted gate for it, no job, a stop command. */
static struct plan_host_facts ready(void)
{
    return (struct plan_host_facts){
        .state = HS_READY, .has_stack = 1, .gate_covers_stack = 1, .stop_command_ok = 1};
}

static struct plan_host_facts in(enum plan_host_state s)
{
    struct plan_host_facts f = ready();
    f.state = s;
    return f;
}

static enum plan_cmd_refusal ask(enum plan_cmd cmd, struct plan_host_facts f,
                                 enum plan_host_actor actor, int force, struct plan_cmd_decision *d)
{
    return plan_host_command(cmd, &f, actor, force, d);
}

static void gate_and_diagnostics(void)
{
    struct plan_cmd_decision d;
    CHECK(ask(PLAN_CMD_GATE, ready(), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_GATE_REQUESTED && d.job_kind && !strcmp(d.job_kind, "gate"));
    CHECK(ask(PLAN_CMD_GATE, in(HS_DRAINED), OP, 0, &d) == PLAN_CMD_DRAINING);
    CHECK(ask(PLAN_CMD_GATE, in(HS_DRAINING), OP, 0, &d) == PLAN_CMD_DRAINING);
    CHECK(ask(PLAN_CMD_GATE, in(HS_STOPPED), OP, 0, &d) == PLAN_CMD_STOPPED);
    CHECK(ask(PLAN_CMD_GATE, in(HS_PROVISIONING), OP, 0, &d) == PLAN_CMD_BUSY);
    struct plan_host_facts q = in(HS_QUARANTINED);
    q.held = 1;
    CHECK(ask(PLAN_CMD_GATE, q, OP, 0, &d) == PLAN_CMD_QUARANTINED);
    struct plan_host_facts bare = in(HS_REGISTERED);
    bare.has_stack = 0;
    CHECK(ask(PLAN_CMD_GATE, bare, OP, 0, &d) == PLAN_CMD_NOT_PROVISIONED);
    struct plan_host_facts busy = ready();
    busy.active_job = 1;
    CHECK(ask(PLAN_CMD_GATE, busy, OP, 0, &d) == PLAN_CMD_BUSY);
    /* diagnostics: drained hosts, and quarantined ones (the evidence informs a release) */
    CHECK(ask(PLAN_CMD_DIAGNOSTICS, ready(), OP, 0, &d) == PLAN_CMD_NOT_DRAINED);
    CHECK(ask(PLAN_CMD_DIAGNOSTICS, in(HS_DRAINED), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_DIAGNOSTICS_REQUESTED && !strcmp(d.job_kind, "diagnostics"));
    CHECK(ask(PLAN_CMD_DIAGNOSTICS, q, OP, 0, &d) == PLAN_CMD_OK);
    CHECK(ask(PLAN_CMD_DIAGNOSTICS, in(HS_STOPPED), OP, 0, &d) == PLAN_CMD_STOPPED);
}

/* a restore drill: drained hosts only (never one doing work, nor a quarantined one), the
 * system actor (the scheduler) too; it runs through the diagnostics events */
static void drill(void)
{
    struct plan_cmd_decision d;
    static const enum plan_host_state not_drained[] = {HS_READY,  HS_DRAINING,      HS_PROVISIONED,
                                                       HS_GATING, HS_INVESTIGATING, HS_DIAGNOSING};
    for (size_t i = 0; i < sizeof not_drained / sizeof not_drained[0]; i++)
        CHECK(ask(PLAN_CMD_DRILL, in(not_drained[i]), SY, 0, &d) == PLAN_CMD_NOT_DRAINED);
    struct plan_host_facts q = in(HS_QUARANTINED);
    q.held = 1;
    CHECK(ask(PLAN_CMD_DRILL, q, OP, 0, &d) == PLAN_CMD_QUARANTINED);
    CHECK(ask(PLAN_CMD_DRILL, in(HS_STOPPED), OP, 0, &d) == PLAN_CMD_STOPPED);
    struct plan_host_facts busy = in(HS_DRAINED);
    busy.active_job = 1;
    CHECK(ask(PLAN_CMD_DRILL, busy, OP, 0, &d) == PLAN_CMD_BUSY);
    CHECK(ask(PLAN_CMD_DRILL, in(HS_DRAINED), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_DIAGNOSTICS_REQUESTED && !strcmp(d.job_kind, "drill"));
    CHECK(ask(PLAN_CMD_DRILL, in(HS_DRAINED), SY, 0, &d) == PLAN_CMD_OK);
}

static void drain_resume_release(void)
{
    struct plan_cmd_decision d;
    CHECK(ask(PLAN_CMD_DRAIN, ready(), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_DRAIN && d.then_drained == 1);
    struct plan_host_facts busy = ready();
    busy.active_job = 1;
    CHECK(ask(PLAN_CMD_DRAIN, busy, OP, 0, &d) == PLAN_CMD_OK && d.then_drained == 0);
    CHECK(ask(PLAN_CMD_DRAIN, in(HS_DRAINED), OP, 0, &d) == PLAN_CMD_OK && d.ev == HE__COUNT);
    CHECK(ask(PLAN_CMD_DRAIN, in(HS_DRAINING), OP, 0, &d) == PLAN_CMD_OK && d.ev == HE__COUNT);
    CHECK(ask(PLAN_CMD_DRAIN, in(HS_STOPPING), OP, 0, &d) == PLAN_CMD_STOPPED);
    struct plan_host_facts q = in(HS_QUARANTINED);
    q.held = 1;
    CHECK(ask(PLAN_CMD_DRAIN, q, OP, 0, &d) == PLAN_CMD_QUARANTINED);
    /* resume: drained (or ready) with an accepted gate that covers the stack */
    CHECK(ask(PLAN_CMD_RESUME, in(HS_DRAINED), OP, 0, &d) == PLAN_CMD_OK && d.ev == HE_RESUME);
    struct plan_host_facts nogate = in(HS_DRAINED);
    nogate.gate_covers_stack = 0;
    CHECK(ask(PLAN_CMD_RESUME, nogate, OP, 0, &d) == PLAN_CMD_NO_GATE);
    CHECK(ask(PLAN_CMD_RESUME, in(HS_PROVISIONED), OP, 0, &d) == PLAN_CMD_NOT_DRAINED);
    CHECK(ask(PLAN_CMD_RESUME, q, OP, 0, &d) == PLAN_CMD_QUARANTINED);
    /* release: admins, held hosts only; back to provisioned, or registered without a stack */
    CHECK(ask(PLAN_CMD_RELEASE, ready(), AD, 0, &d) == PLAN_CMD_NOT_QUARANTINED);
    CHECK(ask(PLAN_CMD_RELEASE, q, OP, 0, &d) == PLAN_CMD_FORBIDDEN);
    CHECK(ask(PLAN_CMD_RELEASE, q, AD, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_RELEASE && d.hint == HS_PROVISIONED && d.repin);
    q.has_stack = 0;
    CHECK(ask(PLAN_CMD_RELEASE, q, AD, 0, &d) == PLAN_CMD_OK && d.hint == HS_REGISTERED);
    struct plan_host_facts held_stopped = in(HS_STOPPED);
    held_stopped.held = 1;
    CHECK(ask(PLAN_CMD_RELEASE, held_stopped, AD, 0, &d) == PLAN_CMD_OK);
}

static void stop_delete_provision(void)
{
    struct plan_cmd_decision d;
    struct plan_host_facts busy = ready();
    busy.active_job = 1;
    CHECK(ask(PLAN_CMD_STOP, ready(), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_STOP_REQUESTED && !strcmp(d.job_kind, "stop") && !d.supersede);
    CHECK(ask(PLAN_CMD_STOP, ready(), SY, 0, &d) == PLAN_CMD_OK); /* the idle policy */
    CHECK(ask(PLAN_CMD_STOP, busy, OP, 0, &d) == PLAN_CMD_BUSY);
    CHECK(ask(PLAN_CMD_STOP, busy, OP, 1, &d) == PLAN_CMD_FORBIDDEN);
    CHECK(ask(PLAN_CMD_STOP, busy, AD, 1, &d) == PLAN_CMD_OK && d.supersede);
    struct plan_host_facts nocmd = ready();
    nocmd.stop_command_ok = 0;
    CHECK(ask(PLAN_CMD_STOP, nocmd, AD, 0, &d) == PLAN_CMD_NO_STOP_COMMAND);
    CHECK(ask(PLAN_CMD_STOP, in(HS_STOPPED), OP, 0, &d) == PLAN_CMD_STOPPED);
    CHECK(ask(PLAN_CMD_STOP, in(HS_STOPPING), OP, 0, &d) == PLAN_CMD_BUSY);
    /* delete: admins; never while a job runs or in a job's state */
    CHECK(ask(PLAN_CMD_DELETE, ready(), AD, 0, &d) == PLAN_CMD_OK && d.ev == HE_DELETED);
    CHECK(ask(PLAN_CMD_DELETE, ready(), OP, 0, &d) == PLAN_CMD_FORBIDDEN);
    struct plan_host_facts running = ready();
    running.running_job = running.active_job = 1;
    CHECK(ask(PLAN_CMD_DELETE, running, AD, 0, &d) == PLAN_CMD_BUSY);
    CHECK(ask(PLAN_CMD_DELETE, in(HS_PROVISIONING), AD, 0, &d) == PLAN_CMD_BUSY);
    /* provision: anything but a job's state or the hold */
    CHECK(ask(PLAN_CMD_PROVISION, in(HS_STOPPED), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE_PROVISION_REQUESTED && !strcmp(d.job_kind, "provision"));
    CHECK(ask(PLAN_CMD_PROVISION, in(HS_GATING), OP, 0, &d) == PLAN_CMD_BUSY);
    CHECK(ask(PLAN_CMD_PROVISION, busy, OP, 0, &d) == PLAN_CMD_BUSY);
    struct plan_host_facts q = in(HS_QUARANTINED);
    q.held = 1;
    CHECK(ask(PLAN_CMD_PROVISION, q, OP, 0, &d) == PLAN_CMD_QUARANTINED);
    /* an unknown stored state is refused, never guessed */
    struct plan_host_facts unknown = ready();
    unknown.state = -1;
    CHECK(ask(PLAN_CMD_RESUME, unknown, OP, 0, &d) != PLAN_CMD_OK);
    CHECK(ask(PLAN_CMD_GATE, unknown, OP, 0, &d) != PLAN_CMD_OK);
    CHECK(ask(PLAN_CMD_DELETE, unknown, AD, 0, &d) != PLAN_CMD_OK);
}

/* Over every command, state, hold and fact: an accepted decision names an event the state
 * machine allows from that state for that actor (the database would apply it), and a job
 * is only queued for a host without an active job. */
static void every_decision_is_a_transition(void)
{
    static const enum plan_host_actor actors[] = {OP, AD, SY};
    int accepted = 0, refused = 0;
    for (int cmd = 0; cmd < PLAN_CMD__COUNT; cmd++)
        for (int s = 0; s < HS__COUNT; s++)
            for (int bits = 0; bits < 512; bits++)
                for (size_t a = 0; a < 3; a++)
                    for (int force = 0; force <= 1; force++) {
                        struct plan_host_facts f = {s,
                                                    bits & 1,
                                                    (bits >> 1) & 1,
                                                    (bits >> 2) & 1,
                                                    (bits >> 3) & 1,
                                                    (bits >> 4) & 1,
                                                    (bits >> 5) & 1,
                                                    (bits >> 6) & 1,
                                                    (bits >> 7) & 1,
                                                    (bits >> 8) & 1};
                        if (f.running_job && !f.active_job)
                            continue; /* a running job is an active one */
                        struct plan_cmd_decision d;
                        enum plan_cmd_refusal r =
                            plan_host_command((enum plan_cmd)cmd, &f, actors[a], force, &d);
                        if (r != PLAN_CMD_OK) {
                            refused++;
                            CHECK(r > PLAN_CMD_NOT_FOUND && r < PLAN_CMD__REFUSALS);
                            continue;
                        }
                        accepted++;
                        if (d.job_kind != NULL && !d.supersede)
                            CHECK(!f.active_job);
                        if (d.ev == HE__COUNT)
                            continue;
                        enum plan_host_state to;
                        unsigned fx;
                        CHECK(plan_host_next((enum plan_host_state)s, f.held, d.ev, d.hint,
                                             actors[a], &to, &fx) == PLAN_HOST_OK);
                    }
    CHECK(accepted > 1000 && refused > 1000);
}

/* A pool move: labels or a credential alone change nothing; a move into any other pool
 * (like or not, this project's or another's) is pool_moved, which always clears the
 * accepted gate, only for a host that serves nothing (registered, drained, stopped), never
 * while a job acts on it. */
static void pool_move(void)
{
    struct plan_cmd_decision d;
    enum plan_host_state to;
    unsigned fx;
    CHECK(ask(PLAN_CMD_MOVE_POOL, ready(), OP, 0, &d) == PLAN_CMD_OK && d.ev == HE__COUNT);
    CHECK(ask(PLAN_CMD_MOVE_POOL, in(HS_PROVISIONING), OP, 0, &d) == PLAN_CMD_OK);
    CHECK(d.ev == HE__COUNT);
    /* a ready host, even into a like pool of its project: drain it first */
    struct plan_host_facts like = ready();
    like.move_changes_pool = 1;
    CHECK(ask(PLAN_CMD_MOVE_POOL, like, OP, 0, &d) == PLAN_CMD_NOT_DRAINED);
    CHECK(plan_host_next(HS_READY, 0, HE_POOL_MOVED, -1, OP, &to, &fx) != PLAN_HOST_OK);
    static const enum plan_host_state serving[] = {
        HS_PROVISIONED, HS_INVESTIGATING, HS_QUARANTINED, HS_FAILED,
        HS_UNREACHABLE, HS_PROVISIONING,  HS_GATING,      HS_DRAINING};
    for (size_t i = 0; i < sizeof serving / sizeof serving[0]; i++) {
        struct plan_host_facts f = in(serving[i]);
        f.move_changes_pool = 1;
        enum plan_cmd_refusal r = ask(PLAN_CMD_MOVE_POOL, f, AD, 0, &d);
        CHECK(r == PLAN_CMD_NOT_DRAINED);
        CHECK(plan_host_next(serving[i], 0, HE_POOL_MOVED, -1, AD, &to, &fx) != PLAN_HOST_OK);
    }
    static const enum plan_host_state rest[] = {HS_REGISTERED, HS_DRAINED, HS_STOPPED};
    for (size_t i = 0; i < 3; i++) {
        for (int other = 0; other < 2; other++) {
            struct plan_host_facts f = in(rest[i]);
            f.move_changes_pool = 1;
            f.move_other_project = other;
            CHECK(ask(PLAN_CMD_MOVE_POOL, f, AD, 0, &d) == PLAN_CMD_OK);
            CHECK(d.ev == HE_POOL_MOVED);
            CHECK(plan_host_next(rest[i], 0, HE_POOL_MOVED, d.hint, AD, &to, &fx) == PLAN_HOST_OK);
            CHECK(to == rest[i] && fx == PLAN_FX_CLEAR_GATE);
        }
    }
    struct plan_host_facts other = in(HS_STOPPED);
    other.move_changes_pool = 1;
    other.held = 1; /* a stopped host keeps its hold; the move keeps it too */
    CHECK(ask(PLAN_CMD_MOVE_POOL, other, AD, 0, &d) == PLAN_CMD_OK && d.ev == HE_POOL_MOVED);
    other.held = 0;
    other.state = HS_DRAINED;
    other.active_job = 1;
    CHECK(ask(PLAN_CMD_MOVE_POOL, other, AD, 0, &d) == PLAN_CMD_BUSY);
}

static void gate_covers_stack(void)
{
    const char *a = "0b7c1f44-1a55-4bde-9a86-0e8c0c7a1a11";
    const char *b = "6a0e2d0e-7c6e-4f1e-8e0a-3f1b9d1c2b22";
    CHECK(plan_gate_covers_stack(a, a) == 1);
    CHECK(plan_gate_covers_stack(a, b) == 0);
    CHECK(plan_gate_covers_stack(NULL, a) == 0);
    CHECK(plan_gate_covers_stack(a, NULL) == 0);
    CHECK(plan_gate_covers_stack("", "") == 0);
    CHECK(plan_gate_covers_stack(NULL, NULL) == 0);
}

static void monitor_consequences(void)
{
    struct plan_mon_step st[PLAN_MON_MAX_STEPS];
    CHECK(plan_mon_after_missed(HS_READY, 1, 2, st) == 0);
    CHECK(plan_mon_after_missed(HS_READY, 2, 2, st) == 1 && st[0].ev == HE_MONITOR_UNREACHABLE);
    CHECK(plan_mon_after_missed(HS_DRAINED, 5, 2, st) == 1);
    CHECK(plan_mon_after_missed(HS_QUARANTINED, 5, 2, st) == 0);
    CHECK(plan_mon_after_missed(HS_UNREACHABLE, 5, 2, st) == 0);
    CHECK(plan_mon_after_missed(-1, 5, 2, st) == 0);
    /* back from unreachable: to the serving state it had, else drained */
    CHECK(plan_mon_after_sample(HS_UNREACHABLE, HS_DRAINING, 0, st) == 1);
    CHECK(st[0].ev == HE_MONITOR_REACHABLE && st[0].hint == HS_DRAINING);
    CHECK(plan_mon_after_sample(HS_UNREACHABLE, HS_GATING, 0, st) == 1 && st[0].hint == HS_DRAINED);
    CHECK(plan_mon_after_sample(HS_UNREACHABLE, -1, 0, st) == 1 && st[0].hint == HS_DRAINED);
    CHECK(plan_mon_after_sample(HS_UNREACHABLE, HS_READY, 1, st) == 2);
    CHECK(st[0].hint == HS_READY && st[1].ev == HE_MONITOR_ISOLATED);
    CHECK(plan_mon_after_sample(HS_READY, -1, 1, st) == 1 && st[0].ev == HE_MONITOR_ISOLATED);
    CHECK(plan_mon_after_sample(HS_READY, -1, 0, st) == 0);
    CHECK(plan_mon_after_sample(HS_QUARANTINED, -1, 1, st) == 0);
    CHECK(plan_mon_after_sample(HS_PROVISIONING, -1, 1, st) == 0);
    CHECK(plan_mon_after_key_mismatch(HS_READY, st) == 1 && st[0].ev == HE_KEY_MISMATCH);
    CHECK(plan_mon_after_key_mismatch(HS_UNREACHABLE, st) == 1);
    CHECK(plan_mon_after_key_mismatch(HS_QUARANTINED, st) == 0);
    /* every step is a transition the state machine allows the monitor */
    for (int s = 0; s < HS__COUNT; s++)
        for (int back = -1; back < HS__COUNT; back++) {
            int n = plan_mon_after_sample(s, back, 1, st);
            int from = s;
            for (int i = 0; i < n; i++) {
                enum plan_host_state to;
                unsigned fx;
                CHECK(plan_host_next((enum plan_host_state)from, 0, st[i].ev, st[i].hint, SY, &to,
                                     &fx) == PLAN_HOST_OK);
                from = (int)to;
            }
        }
}

static void gpu_findings(void)
{
    struct plan_mon_finding f[PLAN_MON_MAX_FINDINGS];
    struct plan_mon_gpu g = {"GPU-1", 0, 0, 0, -1, -1, 0, 0, 0};
    CHECK(plan_mon_gpu_findings(&g, f) == 0);
    g.remap_failure = 1;
    g.remap_pending = 1; /* the failure is the one named */
    CHECK(plan_mon_gpu_findings(&g, f) == 1 && f[0].isolate && f[0].kind == PLAN_MON_REMAP);
    CHECK(!strcmp(f[0].message, "row remapping failed on GPU GPU-1"));
    g.remap_failure = -1; /* not read: the pending remap is recorded */
    CHECK(plan_mon_gpu_findings(&g, f) == 1 && !f[0].isolate);
    g.remap_pending = 0;
    g.ecc_uncorrected = 3;
    g.ecc_before = -1; /* a first reading is the baseline */
    CHECK(plan_mon_gpu_findings(&g, f) == 1 && !f[0].isolate && f[0].kind == PLAN_MON_ECC);
    CHECK(!strcmp(f[0].message, "GPU GPU-1 has 3 uncorrectable ECC errors (volatile)"));
    g.ecc_before = 2; /* grew since the last sample: isolate */
    CHECK(plan_mon_gpu_findings(&g, f) == 1 && f[0].isolate);
    CHECK(!strcmp(f[0].message, "uncorrectable ECC errors on GPU GPU-1 grew from 2 to 3"));
    g.ecc_before = 3;
    CHECK(plan_mon_gpu_findings(&g, f) == 0);
    g.ecc_uncorrected = -1; /* unread decides nothing */
    g.ecc_before = 0;
    CHECK(plan_mon_gpu_findings(&g, f) == 0);
    g.hw_thermal = 1;
    g.retired_pending = 1;
    CHECK(plan_mon_gpu_findings(&g, f) == 2 && f[1].kind == PLAN_MON_THERMAL && !f[1].isolate);
    CHECK(strstr(f[1].message, "HW thermal") != NULL);
    g.hw_thermal = -1;
    g.retired_pending = -1;
    CHECK(plan_mon_gpu_findings(&g, f) == 0);
}

/* plan_mon_next_due: the phase is kept within a tenth of the interval; a later start (the
 * connection came up late) anchors the next sample a whole interval after it, and a host
 * far behind takes no burst. */
static void next_due(void)
{
    const int64_t s = 10000000;                                         /* 10 s */
    CHECK(plan_mon_next_due(100, 100, s) == 100 + s);                   /* on time */
    CHECK(plan_mon_next_due(100, 100 + s / 10, s) == 100 + s);          /* a tenth late: phase */
    CHECK(plan_mon_next_due(100, 101 + s / 10, s) == 101 + s / 10 + s); /* later: anchored */
    CHECK(plan_mon_next_due(0, 2500000, s) == 2500000 + s); /* first sample 2.5 s late */
    CHECK(plan_mon_next_due(0, 5 * s, s) == 6 * s);         /* far behind: no burst */
    CHECK(plan_mon_next_due(100, 50, s) == 100 + s);        /* early wake-up: phase */
    /* Every start at or after its due: consecutive samples are at least 9/10 step apart. */
    int64_t due = 0, prev = -s;
    for (int i = 0; i < 1000; i++) {
        int64_t start = due + (i % 7 == 0 ? 3000000 : (i * 7919) % 900000);
        CHECK(start - prev >= s - s / 10);
        prev = start;
        due = plan_mon_next_due(due, start, s);
    }
}

UNIT_SUITE(host_command_tests) = {
    {"host commands: gate and diagnostics from typed facts", gate_and_diagnostics},
    {"host commands: drain, resume, release", drain_resume_release},
    {"host commands: stop (force), delete, provision; an unknown state is refused",
     stop_delete_provision},
    {"host commands: every accepted decision is a transition the state machine allows",
     every_decision_is_a_transition},
    {"host commands: an accepted gate covers a stack only when it ran on it", gate_covers_stack},
    {"host commands: a pool move clears the gate when it changes project or GPUs", pool_move},
    {"monitor policy: misses, returns, isolation and key mismatches", monitor_consequences},
    {"monitor policy: a GPU's readings (remap, ECC growth, page retirement, clocks)", gpu_findings},
    {"monitor policy: a late sample anchors the next one an interval later; on time keeps the "
     "phase",
     next_due},
    {"host commands: a restore drill only on a drained host", drill},
    UNIT_END,
};
