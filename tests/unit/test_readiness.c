/* test_readiness.c — the nine-question readiness checklist (planner/readiness.c) over typed
 * facts: each question's yes, no and unknown, its evidence, and the rule that the accepted
 * gate answers topology and baseline only for the stack it ran on. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "planner/readiness.h"
#include "tests/unit/unit.h"

#define DF                                                                                 \
    "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/root 100 1 99 1% /\n" \
    "/dev/vda 100 1 99 1% /data\ntmpfs 100 0 100 0% /scratch\n"

/* A host that has everything: every answer yes but the brief's (unknown). */
static struct plan_readiness_facts full(void)
{
    return (struct plan_readiness_facts){
        .host = {.id = "h",
                 .state = "ready",
                 .host_key_sha256 = "SHA256:x",
                 .current_stack_id = "s",
                 .filesystems = DF},
        .credential = {.id = "c", .key_type = "ssh-ed25519"},
        .pool = {.id = "p",
                 .durable_path = "/data/models",
                 .scratch_path = "/scratch",
                 .stop_command = "shutdown -h now",
                 .auto_stop = 1,
                 .has_idle_stop_after = 1,
                 .idle_stop_after_seconds = 1800},
        .stack = {.id = "s",
                  .image_digest = "sha256:ab",
                  .driver_version = "550.127.05",
                  .cuda_version = "12.4"},
        .accepted_gate = {.id = "g",
                          .stack_id = "s",
                          .topology = {.status = "pass", .values_json = "{\"pairs\":28}"},
                          .workload = {.status = "pass",
                                       .values_json = "{\"metric\":\"tokens_per_second\","
                                                      "\"value\":2400,\"min\":1000}"}},
        .last_gate = {.id = "g2", .observability = {.status = "pass", .message = "ok"}},
        .accepted_gate_runs = 2,
        .successful_provisionings = 1,
        .drill = {.id = "d",
                  .host_id = "h",
                  .verdict = "pass",
                  .reason = "recovered in 61.5 s",
                  .finished_at = "2026-01-01T00:00:00.000000Z",
                  .recovery_seconds = 61.5,
                  .max_recovery_seconds = 900,
                  .age_seconds = 86400,
                  .every_days = 7},
    };
}

/* A registered host: nothing recorded but the pool and the credential. */
static struct plan_readiness_facts fresh(void)
{
    return (struct plan_readiness_facts){
        .host = {.id = "h", .state = "registered"},
        .credential = {.id = "c", .key_type = "ssh-ed25519"},
        .pool = {.id = "p", .durable_path = "/data/models", .scratch_path = "/scratch"},
    };
}

static const json_t *question(const json_t *r, const char *id)
{
    size_t i;
    const json_t *q;
    json_array_foreach(json_object_get(r, "questions"), i, q)
    {
        if (!strcmp(json_string_value(json_object_get(q, "id")), id))
            return q;
    }
    return NULL;
}

/* The answer to question id of the report on f (a static copy: the report is freed). */
static const char *answer(const struct plan_readiness_facts *f, const char *id)
{
    static char out[16];
    json_t *r = plan_readiness(f);
    const char *a = json_string_value(json_object_get(question(r, id), "answer"));
    snprintf(out, sizeof out, "%s", a ? a : "(none)");
    json_decref(r);
    return out;
}

/* The answer to id when member of full() is NULL (f: a scratch struct). */
#define WITHOUT(f, member, id) ((f) = full(), (f).member = NULL, answer(&(f), id))

static const json_t *evidence(const json_t *r, const char *id)
{
    return json_object_get(question(r, id), "evidence");
}

static const char *ev_str(const json_t *r, const char *id, const char *key)
{
    return json_string_value(json_object_get(evidence(r, id), key));
}

static void all_yes(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    static const char *const ids[] = {"brief",    "topology", "stack_pinned",  "state_separation",
                                      "access",   "baseline", "observability", "recovery",
                                      "idle_stop"};
    static const char *const want[] = {"unknown", "yes", "yes", "yes", "yes",
                                       "yes",     "yes", "yes", "yes"};
    const json_t *qs = json_object_get(r, "questions");
    CHECK(json_array_size(qs) == 9);
    for (size_t i = 0; i < 9; i++) {
        const json_t *q = json_array_get(qs, i);
        CHECK_STR(json_string_value(json_object_get(q, "id")), ids[i]);
        CHECK_STR(json_string_value(json_object_get(q, "answer")), want[i]);
        CHECK(strchr(json_string_value(json_object_get(q, "question")), '?') != NULL);
        CHECK(json_is_object(json_object_get(q, "evidence")));
    }
    CHECK_STR(json_string_value(json_object_get(r, "host_id")), "h");
    CHECK_STR(json_string_value(json_object_get(r, "state")), "ready");
    CHECK(json_integer_value(json_object_get(json_object_get(r, "summary"), "yes")) == 8);
    CHECK(json_integer_value(json_object_get(json_object_get(r, "summary"), "of")) == 9);
    json_decref(r);
}

/* A registered host: brief, state_separation (no df facts) and observability unknown,
 * the rest no; the evidence names what is missing with nulls. */
static void fresh_host(void)
{
    struct plan_readiness_facts f = fresh();
    json_t *r = plan_readiness(&f);
    static const char *const want[] = {"unknown", "no",      "no", "unknown", "no",
                                       "no",      "unknown", "no", "no"};
    const json_t *qs = json_object_get(r, "questions");
    for (size_t i = 0; i < 9; i++)
        CHECK_STR(json_string_value(json_object_get(json_array_get(qs, i), "answer")), want[i]);
    CHECK(json_integer_value(json_object_get(json_object_get(r, "summary"), "yes")) == 0);
    const json_t *topo = evidence(r, "topology");
    CHECK(json_is_null(json_object_get(topo, "gate_run_id")));
    CHECK(json_is_null(json_object_get(topo, "gate_covers_current_stack")));
    CHECK(json_is_null(json_object_get(topo, "topology_status")));
    CHECK(json_is_null(json_object_get(topo, "values")));
    CHECK(json_is_null(json_object_get(evidence(r, "baseline"), "workload_status")));
    CHECK(json_is_null(json_object_get(evidence(r, "stack_pinned"), "stack_id")));
    CHECK(json_is_null(json_object_get(evidence(r, "access"), "host_key_sha256")));
    CHECK_STR(ev_str(r, "access", "credential_id"), "c");
    CHECK(json_is_null(json_object_get(evidence(r, "observability"), "gate_run_id")));
    const json_t *idle = evidence(r, "idle_stop");
    CHECK(json_is_false(json_object_get(idle, "auto_stop")));
    CHECK(json_is_null(json_object_get(idle, "idle_stop_after_seconds")));
    CHECK(json_is_null(json_object_get(idle, "stop_command")));
    CHECK_STR(json_string_value(json_object_get(idle, "pool_id")), "p");
    CHECK(json_is_null(json_object_get(evidence(r, "recovery"), "drill_id")));
    json_decref(r);
}

/* 2: pass or skip (a single GPU) is yes; any other status, or none, is no. */
static void topology(void)
{
    struct plan_readiness_facts f = full();
    CHECK_STR(answer(&f, "topology"), "yes");
    f.accepted_gate.topology.status = "skip";
    CHECK_STR(answer(&f, "topology"), "yes");
    static const char *const no[] = {"fail", "warn", "timeout", NULL};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        f.accepted_gate.topology.status = no[i];
        CHECK_STR(answer(&f, "topology"), "no");
    }
    f = full();
    json_t *r = plan_readiness(&f);
    const json_t *e = evidence(r, "topology");
    CHECK_STR(ev_str(r, "topology", "gate_run_id"), "g");
    CHECK_STR(ev_str(r, "topology", "topology_status"), "pass");
    CHECK(json_is_true(json_object_get(e, "gate_covers_current_stack")));
    CHECK(json_integer_value(json_object_get(json_object_get(e, "values"), "pairs")) == 28);
    json_decref(r);
}

/* The accepted gate ran on another stack (or on none known): topology and baseline are
 * no, whatever its checks say, and the evidence says why. */
static void gate_on_another_stack(void)
{
    struct plan_readiness_facts f = full();
    f.accepted_gate.stack_id = "s-old";
    json_t *r = plan_readiness(&f);
    CHECK_STR(json_string_value(json_object_get(question(r, "topology"), "answer")), "no");
    CHECK_STR(json_string_value(json_object_get(question(r, "baseline"), "answer")), "no");
    for (int i = 0; i < 2; i++) {
        const char *id = i ? "baseline" : "topology";
        CHECK(json_is_false(json_object_get(evidence(r, id), "gate_covers_current_stack")));
        CHECK_STR(ev_str(r, id, "gate_run_id"), "g");
        CHECK_STR(ev_str(r, id, "gate_stack_id"), "s-old");
    }
    CHECK_STR(ev_str(r, "baseline", "workload_status"), "pass");
    CHECK(json_integer_value(json_object_get(json_object_get(r, "summary"), "yes")) == 6);
    json_decref(r);

    /* the run's stack unknown, no current stack, no accepted gate: no, whatever the checks */
    CHECK_STR(WITHOUT(f, accepted_gate.stack_id, "topology"), "no");
    CHECK_STR(answer(&f, "baseline"), "no");
    CHECK_STR(WITHOUT(f, host.current_stack_id, "topology"), "no");
    CHECK_STR(answer(&f, "baseline"), "no");
    CHECK_STR(WITHOUT(f, accepted_gate.id, "topology"), "no");
    CHECK_STR(answer(&f, "baseline"), "no");
}

/* 3: digest, driver and CUDA versions, on a current stack. */
static void stack_pinned(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    CHECK_STR(ev_str(r, "stack_pinned", "stack_id"), "s");
    CHECK_STR(ev_str(r, "stack_pinned", "image_digest"), "sha256:ab");
    CHECK_STR(ev_str(r, "stack_pinned", "driver_version"), "550.127.05");
    CHECK_STR(ev_str(r, "stack_pinned", "cuda_version"), "12.4");
    json_decref(r);
    f.stack.image_digest = NULL;
    CHECK_STR(answer(&f, "stack_pinned"), "no");
    CHECK_STR(WITHOUT(f, stack.driver_version, "stack_pinned"), "no");
    CHECK_STR(WITHOUT(f, stack.cuda_version, "stack_pinned"), "no");
    CHECK_STR(WITHOUT(f, stack.id, "stack_pinned"), "no");
}

/* 4: the longest mount point that is a whole-component prefix of each path. */
static void state_separation(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    CHECK_STR(ev_str(r, "state_separation", "durable_filesystem"), "/dev/vda");
    CHECK_STR(ev_str(r, "state_separation", "scratch_filesystem"), "tmpfs");
    CHECK_STR(ev_str(r, "state_separation", "durable_path"), "/data/models");
    json_decref(r);
    f.pool.scratch_path = "/data/tmp"; /* the same filesystem */
    CHECK_STR(answer(&f, "state_separation"), "no");
    f.pool.scratch_path = "/database/tmp"; /* not under /data: the root filesystem */
    r = plan_readiness(&f);
    CHECK_STR(json_string_value(json_object_get(question(r, "state_separation"), "answer")), "yes");
    CHECK_STR(ev_str(r, "state_separation", "scratch_filesystem"), "/dev/root");
    json_decref(r);
    f.host.filesystems = NULL; /* never provisioned */
    CHECK_STR(answer(&f, "state_separation"), "unknown");
    f = full();
    f.host.filesystems = "tmpfs 100 0 100 0% /scratch\n"; /* durable on no listed mount */
    CHECK_STR(answer(&f, "state_separation"), "unknown");
    CHECK_STR(WITHOUT(f, pool.durable_path, "state_separation"), "unknown");
}

/* 5: a pinned host key and a login key. */
static void access_question(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    CHECK_STR(ev_str(r, "access", "host_key_sha256"), "SHA256:x");
    CHECK_STR(ev_str(r, "access", "key_type"), "ssh-ed25519");
    json_decref(r);
    f.host.host_key_sha256 = NULL;
    CHECK_STR(answer(&f, "access"), "no");
    CHECK_STR(WITHOUT(f, credential.id, "access"), "no");
}

/* 6: only a passed workload check is a baseline. */
static void baseline(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    const json_t *e = evidence(r, "baseline");
    CHECK_STR(ev_str(r, "baseline", "workload_status"), "pass");
    CHECK(json_integer_value(json_object_get(json_object_get(e, "values"), "value")) == 2400);
    CHECK(json_is_true(json_object_get(e, "gate_covers_current_stack")));
    json_decref(r);
    static const char *const no[] = {"skip", "fail", "warn", "timeout", NULL};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        f.accepted_gate.workload.status = no[i];
        CHECK_STR(answer(&f, "baseline"), "no");
    }
    /* values are evidence: text that does not parse shows as null and decides nothing */
    f = full();
    f.accepted_gate.workload.values_json = "{not json";
    r = plan_readiness(&f);
    CHECK_STR(json_string_value(json_object_get(question(r, "baseline"), "answer")), "yes");
    CHECK(json_is_null(json_object_get(evidence(r, "baseline"), "values")));
    json_decref(r);
    f.accepted_gate.workload.values_json = "null";
    r = plan_readiness(&f);
    CHECK(json_is_null(json_object_get(evidence(r, "baseline"), "values")));
    json_decref(r);
}

/* 7: the last gate's check: pass yes, skip or none unknown, anything else no. */
static void observability(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    CHECK_STR(ev_str(r, "observability", "gate_run_id"), "g2");
    CHECK_STR(ev_str(r, "observability", "status"), "pass");
    CHECK_STR(ev_str(r, "observability", "message"), "ok");
    json_decref(r);
    static const struct {
        const char *status, *answer;
    } cases[] = {
        {"skip", "unknown"}, {NULL, "unknown"}, {"fail", "no"}, {"warn", "no"}, {"timeout", "no"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f.last_gate.observability.status = cases[i].status;
        CHECK_STR(answer(&f, "observability"), cases[i].answer);
    }
}

/* 8: the pool's newest restore drill: a pass is yes (not when older than every_days); a
 * fail, or no drill (a second accepted gate is no longer a proxy), is no. */
static void recovery(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    const json_t *e = evidence(r, "recovery");
    CHECK_STR(json_string_value(json_object_get(e, "drill_id")), "d");
    CHECK_STR(json_string_value(json_object_get(e, "verdict")), "pass");
    CHECK(json_real_value(json_object_get(e, "recovery_seconds")) == 61.5);
    CHECK(json_real_value(json_object_get(e, "max_recovery_seconds")) == 900);
    CHECK(json_real_value(json_object_get(e, "age_days")) == 1.0);
    CHECK(json_is_false(json_object_get(e, "stale")));
    CHECK(json_string_value(json_object_get(e, "rule")) != NULL);
    json_decref(r);
    CHECK_STR(answer(&f, "recovery"), "yes");
    f.drill.verdict = "fail";
    CHECK_STR(answer(&f, "recovery"), "no");
    f.drill.verdict = "pass";
    f.drill.age_seconds = 8 * 86400.0; /* older than every_days 7 */
    CHECK_STR(answer(&f, "recovery"), "no");
    f.drill.every_days = 0; /* no schedule: a pass stays a pass */
    CHECK_STR(answer(&f, "recovery"), "yes");
    f.drill.id = NULL; /* no drill: no, whatever the gates */
    f.drill.verdict = NULL;
    f.accepted_gate_runs = 3;
    CHECK_STR(answer(&f, "recovery"), "no");
}

/* 9: auto_stop with a stop command. */
static void idle_stop(void)
{
    struct plan_readiness_facts f = full();
    json_t *r = plan_readiness(&f);
    const json_t *e = evidence(r, "idle_stop");
    CHECK(json_is_true(json_object_get(e, "auto_stop")));
    CHECK(json_integer_value(json_object_get(e, "idle_stop_after_seconds")) == 1800);
    CHECK_STR(json_string_value(json_object_get(e, "stop_command")), "shutdown -h now");
    CHECK_STR(json_string_value(json_object_get(e, "pool_id")), "p");
    json_decref(r);
    f.pool.stop_command = NULL;
    CHECK_STR(answer(&f, "idle_stop"), "no");
    f = full();
    f.pool.auto_stop = 0;
    CHECK_STR(answer(&f, "idle_stop"), "no");
}

UNIT_SUITE(readiness_tests) = {
    {"readiness: everything recorded answers yes but the brief", all_yes},
    {"readiness: a fresh host answers no or unknown, with null evidence", fresh_host},
    {"readiness: topology pass or skip on the accepted gate", topology},
    {"readiness: a gate on another stack answers topology and baseline no", gate_on_another_stack},
    {"readiness: stack pinned by digest, driver and CUDA", stack_pinned},
    {"readiness: durable and scratch on different filesystems", state_separation},
    {"readiness: access needs a pinned key and a login key", access_question},
    {"readiness: baseline from a passed workload check", baseline},
    {"readiness: observability from the last gate", observability},
    {"readiness: recovery from the newest restore drill", recovery},
    {"readiness: idle stop needs auto_stop and a stop command", idle_stop},
    UNIT_END,
};
