/* test_host_state.c — the host state machine: every (state, event) pair, its invariants,
 * and the migration that loads it into PostgreSQL. */
#include <stdlib.h>
#include <string.h>

#include "db/migrate.h"
#include "planner/host_state.h"
#include "unit.h"

static int rows_from(enum plan_host_state from, enum plan_host_event ev)
{
    int n = 0;
    for (size_t i = 0; i < plan_host_nrules; i++)
        n += plan_host_rules[i].from == from && plan_host_rules[i].event == ev;
    return n;
}

/* Every (state, held, event) pair answers, and what it answers keeps the invariants:
 * quarantined ⇒ gate cleared and hold set; hold ⇒ quarantined, stopping or stopped; a
 * refused-when-held event never passes with the hold; only gate_accepted sets the gate. */
static void test_every_pair(void)
{
    int ok = 0, refused = 0;
    for (int s = 0; s < HS__COUNT; s++) {
        for (int held = 0; held <= 1; held++) {
            for (int e = 0; e < HE__COUNT; e++) {
                enum plan_host_state to;
                unsigned fx = 0;
                enum plan_host_actor actor = plan_host_events[e].actor;
                enum plan_host_answer a = plan_host_next(
                    (enum plan_host_state)s, held, (enum plan_host_event)e, -1, actor, &to, &fx);
                int n = rows_from((enum plan_host_state)s, (enum plan_host_event)e);
                if (a != PLAN_HOST_OK) {
                    refused++;
                    CHECK(a == PLAN_HOST_NOT_ALLOWED || a == PLAN_HOST_QUARANTINED ||
                          a == PLAN_HOST_AMBIGUOUS);
                    if (a == PLAN_HOST_NOT_ALLOWED)
                        CHECK(n == 0);
                    if (a == PLAN_HOST_AMBIGUOUS)
                        CHECK(n > 1);
                    continue;
                }
                ok++;
                CHECK(n >= 1);
                int held_after = (held || (fx & PLAN_FX_SET_HOLD)) && !(fx & PLAN_FX_CLEAR_HOLD);
                if (held_after)
                    CHECK(to == HS_QUARANTINED || to == HS_STOPPING || to == HS_STOPPED);
                if (to == HS_QUARANTINED && s != HS_QUARANTINED && s != HS_STOPPING)
                    CHECK((fx & PLAN_FX_CLEAR_GATE) && (fx & PLAN_FX_SET_HOLD));
                if (held)
                    CHECK(!plan_host_events[e].refused_when_held);
                if (fx & PLAN_FX_SET_GATE)
                    CHECK(e == HE_GATE_ACCEPTED);
                CHECK(!((fx & PLAN_FX_SET_GATE) && (fx & PLAN_FX_CLEAR_GATE)));
            }
        }
    }
    CHECK(ok > 100 && refused > 100);
}

static enum plan_host_answer next(enum plan_host_state from, int held, enum plan_host_event ev,
                                  int hint, enum plan_host_state *to)
{
    unsigned fx;
    return plan_host_next(from, held, ev, hint, plan_host_events[ev].actor, to, &fx);
}

/* The walks the issue names, one by one. */
static void test_lifecycle(void)
{
    enum plan_host_state to;
    CHECK(next(HS_REGISTERED, 0, HE_PROVISION_STARTED, -1, &to) == PLAN_HOST_OK &&
          to == HS_PROVISIONING);
    CHECK(next(HS_PROVISIONING, 0, HE_PROVISION_SUCCEEDED, -1, &to) == PLAN_HOST_OK &&
          to == HS_PROVISIONED);
    CHECK(next(HS_PROVISIONED, 0, HE_GATE_STARTED, -1, &to) == PLAN_HOST_OK && to == HS_GATING);
    CHECK(next(HS_GATING, 0, HE_GATE_ACCEPTED, -1, &to) == PLAN_HOST_OK && to == HS_READY);
    CHECK(next(HS_READY, 0, HE_DRAIN, -1, &to) == PLAN_HOST_OK && to == HS_DRAINING);
    CHECK(next(HS_DRAINING, 0, HE_DRAINED_WHEN_IDLE, -1, &to) == PLAN_HOST_OK && to == HS_DRAINED);
    CHECK(next(HS_DRAINED, 0, HE_DIAGNOSTICS_STARTED, -1, &to) == PLAN_HOST_OK &&
          to == HS_DIAGNOSING);
    CHECK(next(HS_DIAGNOSING, 0, HE_DIAGNOSTICS_FINISHED, -1, &to) == PLAN_HOST_OK &&
          to == HS_DRAINED);
    CHECK(next(HS_DRAINED, 0, HE_RESUME, -1, &to) == PLAN_HOST_OK && to == HS_READY);
    /* a job on a draining host keeps it draining and ends drained */
    CHECK(next(HS_DRAINING, 0, HE_GATE_STARTED, -1, &to) == PLAN_HOST_OK && to == HS_DRAINING);
    CHECK(next(HS_DRAINING, 0, HE_GATE_ACCEPTED, -1, &to) == PLAN_HOST_OK && to == HS_DRAINED);
    /* the gate refuses drained and stopped hosts */
    CHECK(next(HS_DRAINED, 0, HE_GATE_REQUESTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_STOPPED, 0, HE_GATE_REQUESTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_READY, 0, HE_DIAGNOSTICS_REQUESTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    /* a stopped host cannot be drained into a billed state */
    CHECK(next(HS_STOPPED, 0, HE_DRAIN, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    /* job expiry moves hosts out of job states */
    CHECK(next(HS_PROVISIONING, 0, HE_JOB_EXPIRED, -1, &to) == PLAN_HOST_OK && to == HS_FAILED);
    CHECK(next(HS_GATING, 0, HE_JOB_EXPIRED, -1, &to) == PLAN_HOST_OK && to == HS_INVESTIGATING);
    CHECK(next(HS_DIAGNOSING, 0, HE_JOB_EXPIRED, -1, &to) == PLAN_HOST_OK && to == HS_DRAINED);
    CHECK(next(HS_STOPPING, 0, HE_JOB_EXPIRED, -1, &to) == PLAN_HOST_AMBIGUOUS);
    CHECK(next(HS_STOPPING, 0, HE_JOB_EXPIRED, HS_FAILED, &to) == PLAN_HOST_OK && to == HS_FAILED);
    CHECK(next(HS_READY, 0, HE_JOB_EXPIRED, -1, &to) == PLAN_HOST_OK && to == HS_READY);
    /* a failed stop returns where it was; a hint that has no row falls back to the only row */
    CHECK(next(HS_STOPPING, 0, HE_STOP_FAILED, HS_READY, &to) == PLAN_HOST_OK && to == HS_READY);
    CHECK(next(HS_READY, 0, HE_STOP_FAILED, HS_FAILED, &to) == PLAN_HOST_OK && to == HS_READY);
    CHECK(next(HS_STOPPING, 0, HE_STOP_DONE, -1, &to) == PLAN_HOST_OK && to == HS_STOPPED);
}

/* Quarantine holds: nothing walks out of it but a release by an admin. */
static void test_quarantine_holds(void)
{
    enum plan_host_state to;
    unsigned fx;
    CHECK(plan_host_next(HS_READY, 0, HE_KEY_MISMATCH, -1, PLAN_ACTOR_SYSTEM, &to, &fx) ==
              PLAN_HOST_OK &&
          to == HS_QUARANTINED && (fx & PLAN_FX_CLEAR_GATE) && (fx & PLAN_FX_SET_HOLD));
    const enum plan_host_event refused[] = {
        HE_DRAIN,       HE_RESUME, HE_PROVISION_REQUESTED, HE_GATE_REQUESTED, HE_PROVISION_STARTED,
        HE_GATE_STARTED};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK(next(HS_QUARANTINED, 1, refused[i], -1, &to) == PLAN_HOST_QUARANTINED);
        CHECK(next(HS_STOPPED, 1, refused[i], -1, &to) == PLAN_HOST_QUARANTINED);
    }
    /* diagnostics run on a quarantined host, which stays quarantined */
    CHECK(next(HS_QUARANTINED, 1, HE_DIAGNOSTICS_REQUESTED, -1, &to) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
    CHECK(next(HS_QUARANTINED, 1, HE_DIAGNOSTICS_STARTED, -1, &to) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
    CHECK(next(HS_QUARANTINED, 1, HE_DIAGNOSTICS_FINISHED, -1, &to) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
    CHECK(next(HS_STOPPED, 1, HE_DIAGNOSTICS_REQUESTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    /* stopping a quarantined host is allowed (it still costs money), and it stays held */
    CHECK(next(HS_QUARANTINED, 1, HE_STOP_STARTED, -1, &to) == PLAN_HOST_OK && to == HS_STOPPING);
    CHECK(next(HS_STOPPING, 1, HE_STOP_DONE, -1, &to) == PLAN_HOST_OK && to == HS_STOPPED);
    CHECK(next(HS_STOPPING, 1, HE_STOP_FAILED, HS_READY, &to) == PLAN_HOST_QUARANTINED);
    CHECK(plan_host_stop_back("ready", 1) == HS_QUARANTINED);
    CHECK(plan_host_stop_back("ready", 0) == HS_READY);
    CHECK(plan_host_stop_back("gating", 0) == HS_FAILED);
    CHECK(plan_host_stop_back(NULL, 0) == HS_FAILED);
    /* release: admin only; to provisioned or registered; clears the hold */
    CHECK(plan_host_next(HS_QUARANTINED, 1, HE_RELEASE, HS_PROVISIONED, PLAN_ACTOR_OPERATOR, &to,
                         &fx) == PLAN_HOST_FORBIDDEN);
    CHECK(plan_host_next(HS_QUARANTINED, 1, HE_RELEASE, HS_PROVISIONED, PLAN_ACTOR_ADMIN, &to,
                         &fx) == PLAN_HOST_OK &&
          to == HS_PROVISIONED && (fx & PLAN_FX_CLEAR_HOLD));
    CHECK(next(HS_QUARANTINED, 1, HE_RELEASE, -1, &to) == PLAN_HOST_AMBIGUOUS);
    CHECK(next(HS_STOPPED, 1, HE_RELEASE, -1, &to) == PLAN_HOST_OK && to == HS_STOPPED);
    /* the worker may not cause an admin's event, nor an operator the worker's */
    CHECK(plan_host_next(HS_QUARANTINED, 1, HE_RELEASE, HS_PROVISIONED, PLAN_ACTOR_SYSTEM, &to,
                         &fx) == PLAN_HOST_FORBIDDEN);
    CHECK(plan_host_next(HS_READY, 0, HE_DRAIN, -1, PLAN_ACTOR_OPERATOR, &to, &fx) == PLAN_HOST_OK);
    CHECK(plan_host_next(HS_GATING, 0, HE_GATE_ACCEPTED, -1, PLAN_ACTOR_ADMIN, &to, &fx) ==
          PLAN_HOST_FORBIDDEN);
    /* verdict events */
    CHECK(plan_host_verdict_event(0, "accept") == HE_GATE_ACCEPTED);
    CHECK(plan_host_verdict_event(0, "isolate") == HE_GATE_ISOLATED);
    CHECK(plan_host_verdict_event(0, "investigate") == HE_GATE_INVESTIGATE);
    CHECK(plan_host_verdict_event(0, NULL) == HE_GATE_INVESTIGATE);
    CHECK(plan_host_verdict_event(1, "accept") == HE_DIAGNOSTICS_FINISHED);
    CHECK(plan_host_verdict_event(1, "isolate") == HE_DIAGNOSTICS_ISOLATED);
}

/* Names round-trip; every state can be left or is terminal by design. */
static void test_names(void)
{
    for (int s = 0; s < HS__COUNT; s++)
        CHECK(plan_host_state_parse(plan_host_state_names[s]) == s);
    for (int e = 0; e < HE__COUNT; e++)
        CHECK(plan_host_event_parse(plan_host_events[e].name) == e);
    CHECK(plan_host_state_parse("offline") == -1);
    CHECK(plan_host_state_parse(NULL) == -1);
    CHECK(plan_host_event_parse("teleport") == -1);
    /* no duplicate (event, from, to) rows */
    for (size_t i = 0; i < plan_host_nrules; i++)
        for (size_t k = i + 1; k < plan_host_nrules; k++)
            CHECK(!(plan_host_rules[i].event == plan_host_rules[k].event &&
                    plan_host_rules[i].from == plan_host_rules[k].from &&
                    plan_host_rules[i].to == plan_host_rules[k].to));
}

/* PostgreSQL holds the same table: the newest migration that loads it contains plan_host_sql()
 * verbatim (regenerate with `gpufleetd state-machine --sql`). */
static void test_migration_matches(void)
{
    char *sql = plan_host_sql();
    CHECK(sql != NULL);
    int found = 0; /* the newest migration that loads the table holds it verbatim */
    for (size_t i = 0; i < db_migrations_count; i++)
        if (strstr(db_migrations[i].sql, "-- BEGIN generated by planner/host_state.c"))
            found = strstr(db_migrations[i].sql, sql) != NULL;
    free(sql);
    CHECK(found);
    char *md = plan_host_markdown();
    CHECK(md != NULL &&
          strstr(md, "| `gate_isolated` | system | gating, draining → quarantined |"));
    free(md);
}

/* The monitor: missed samples make a watched host unreachable and it comes back to where
 * it was; a quarantined one stays quarantined; an isolating event quarantines; nothing
 * but a stop or a key mismatch leaves unreachable otherwise. */
static void test_monitor(void)
{
    enum plan_host_state to;
    unsigned fx;
    const enum plan_host_state watched[] = {HS_READY, HS_DRAINING, HS_DRAINED};
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) {
        CHECK(next(watched[i], 0, HE_MONITOR_UNREACHABLE, -1, &to) == PLAN_HOST_OK &&
              to == HS_UNREACHABLE);
        CHECK(next(HS_UNREACHABLE, 0, HE_MONITOR_REACHABLE, (int)watched[i], &to) == PLAN_HOST_OK &&
              to == watched[i]);
        CHECK(plan_host_next(watched[i], 0, HE_MONITOR_ISOLATED, -1, PLAN_ACTOR_SYSTEM, &to, &fx) ==
                  PLAN_HOST_OK &&
              to == HS_QUARANTINED && (fx & PLAN_FX_CLEAR_GATE) && (fx & PLAN_FX_SET_HOLD));
    }
    CHECK(next(HS_UNREACHABLE, 0, HE_MONITOR_REACHABLE, -1, &to) == PLAN_HOST_AMBIGUOUS);
    CHECK(next(HS_UNREACHABLE, 0, HE_MONITOR_REACHABLE, HS_GATING, &to) == PLAN_HOST_AMBIGUOUS);
    CHECK(next(HS_QUARANTINED, 1, HE_MONITOR_UNREACHABLE, -1, &to) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
    CHECK(next(HS_UNREACHABLE, 0, HE_MONITOR_ISOLATED, -1, &to) == PLAN_HOST_OK &&
          to == HS_QUARANTINED);
    /* hosts the monitor does not watch */
    const enum plan_host_state unwatched[] = {HS_REGISTERED, HS_PROVISIONING, HS_GATING,
                                              HS_DIAGNOSING, HS_STOPPING,     HS_STOPPED};
    for (size_t i = 0; i < sizeof unwatched / sizeof unwatched[0]; i++) {
        CHECK(next(unwatched[i], 0, HE_MONITOR_UNREACHABLE, -1, &to) == PLAN_HOST_NOT_ALLOWED);
        CHECK(next(unwatched[i], 0, HE_MONITOR_ISOLATED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    }
    /* an unreachable host serves nothing: no drain, resume, provision or gate */
    CHECK(next(HS_UNREACHABLE, 0, HE_DRAIN, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_UNREACHABLE, 0, HE_RESUME, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_UNREACHABLE, 0, HE_GATE_STARTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    CHECK(next(HS_UNREACHABLE, 0, HE_PROVISION_STARTED, -1, &to) == PLAN_HOST_NOT_ALLOWED);
    /* an operator may still stop it (it costs money), and a failed stop comes back */
    CHECK(next(HS_UNREACHABLE, 0, HE_STOP_STARTED, -1, &to) == PLAN_HOST_OK && to == HS_STOPPING);
    CHECK(next(HS_STOPPING, 0, HE_STOP_FAILED, HS_UNREACHABLE, &to) == PLAN_HOST_OK &&
          to == HS_UNREACHABLE);
    CHECK(plan_host_stop_back("unreachable", 0) == HS_UNREACHABLE);
    CHECK(plan_host_next(HS_READY, 0, HE_MONITOR_ISOLATED, -1, PLAN_ACTOR_OPERATOR, &to, &fx) ==
          PLAN_HOST_FORBIDDEN);
}

UNIT_SUITE(host_state_tests) = {
    {"host state: every (state, hold, event) pair keeps the invariants", test_every_pair},
    {"host state: the lifecycle walks", test_lifecycle},
    {"host state: quarantine holds until an admin releases it", test_quarantine_holds},
    {"host state: names and rows", test_names},
    {"host state: the monitor's unreachable and isolation", test_monitor},
    {"host state: the migration holds the same table", test_migration_matches},
    UNIT_END,
};
