/* readiness.c — see readiness.h. One function per question: each adds its answer with its
 * evidence to the list and returns 1 when the answer is yes. */
#include "planner/readiness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/host_command.h"

typedef const struct plan_readiness_facts facts_t;

static int is(const char *s, const char *want)
{
    return s != NULL && !strcmp(s, want);
}

/* Adds a question (evidence stolen; NULL: an empty object) and returns 1 when answered
 * yes. */
static int add(json_t *qs, const char *id, const char *question, const char *answer,
               json_t *evidence)
{
    json_array_append_new(qs, json_pack("{s:s, s:s, s:s, s:o}", "id", id, "question", question,
                                        "answer", answer, "evidence",
                                        evidence ? evidence : json_object()));
    return is(answer, "yes");
}

/* A check's values, recorded as JSON text, for the evidence: a new reference, JSON null
 * when there are none (or the text does not parse: evidence, never a reason). */
static json_t *values_of(const char *text)
{
    json_t *v = text ? json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL) : NULL;
    return v ? v : json_null();
}

/* The accepted gate counts only for the stack it ran on. */
static int gate_covers(facts_t *f)
{
    return f->accepted_gate.id != NULL &&
           plan_gate_covers_stack(f->accepted_gate.stack_id, f->host.current_stack_id);
}

/* The evidence of a question one check of the accepted gate answers: the run, whether it
 * covers the current stack (null without an accepted gate), the check's status under
 * status_key and its values. New reference. */
static json_t *gate_evidence(facts_t *f, const char *status_key,
                             const struct plan_readiness_check *c)
{
    const char *run = f->accepted_gate.id;
    return json_pack("{s:s?, s:s?, s:o, s:s?, s:o}", "gate_run_id", run, "gate_stack_id",
                     f->accepted_gate.stack_id, "gate_covers_current_stack",
                     run ? json_boolean(gate_covers(f)) : json_null(), status_key, c->status,
                     "values", values_of(c->values_json));
}

/* Filesystem of a path, from the df -P lines in facts: the line whose mount point is the
 * longest prefix of path. */
static const char *mount_of(const char *df, const char *path, char *dev, size_t n)
{
    size_t best = 0;
    dev[0] = '\0';
    if (df == NULL || path == NULL)
        return NULL;
    char *copy = strdup(df), *save = NULL;
    if (copy == NULL)
        return NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char fs[256], mnt[512];
        long a, b, c;
        char cap[16];
        if (sscanf(line, "%255s %ld %ld %ld %15s %511s", fs, &a, &b, &c, cap, mnt) != 6)
            continue;
        size_t ml = strlen(mnt);
        if (strncmp(path, mnt, ml) == 0 && (path[ml] == '/' || path[ml] == '\0' || ml == 1) &&
            ml >= best) {
            best = ml;
            snprintf(dev, n, "%s", fs);
        }
    }
    free(copy);
    return dev[0] ? dev : NULL;
}

/* 1. No brief is linked to a host yet. */
static int brief(json_t *qs, facts_t *f)
{
    (void)f;
    return add(qs, "brief",
               "Does the brief give the model, memory, concurrency and success metric?", "unknown",
               json_pack("{s:s}", "note",
                         "no brief is linked to this host or its pool yet; briefs are "
                         "sized on their own (GET /v1/briefs/{id}/sizing)"));
}

/* 2. The accepted gate's topology check passed (or was skipped: a single GPU), on the
 * current stack. */
static int topology(json_t *qs, facts_t *f)
{
    const char *ts = f->accepted_gate.topology.status;
    int yes = gate_covers(f) && (is(ts, "pass") || is(ts, "skip"));
    return add(qs, "topology", "Was the exact topology tested?", yes ? "yes" : "no",
               gate_evidence(f, "topology_status", &f->accepted_gate.topology));
}

/* 3. The current stack pins its image digest, driver and CUDA versions. */
static int stack_pinned(json_t *qs, facts_t *f)
{
    int yes = f->stack.id != NULL && f->stack.image_digest != NULL &&
              f->stack.driver_version != NULL && f->stack.cuda_version != NULL;
    return add(qs, "stack_pinned", "Is the stack pinned by version and digest?", yes ? "yes" : "no",
               json_pack("{s:s?, s:s?, s:s?, s:s?}", "stack_id", f->stack.id, "image_digest",
                         f->stack.image_digest, "driver_version", f->stack.driver_version,
                         "cuda_version", f->stack.cuda_version));
}

/* 4. The pool's durable and scratch paths lie on different filesystems (unknown until
 * both are found in the df facts). */
static int state_separation(json_t *qs, facts_t *f)
{
    const char *durable = f->pool.durable_path, *scratch = f->pool.scratch_path;
    char d1[256], d2[256];
    const char *fd = mount_of(f->host.filesystems, durable, d1, sizeof d1);
    const char *fs = mount_of(f->host.filesystems, scratch, d2, sizeof d2);
    const char *a = (fd && fs) ? (strcmp(fd, fs) != 0 ? "yes" : "no") : "unknown";
    return add(qs, "state_separation", "Is durable state kept apart from scratch?", a,
               json_pack("{s:s?, s:s?, s:s?, s:s?}", "durable_path", durable, "scratch_path",
                         scratch, "durable_filesystem", fd, "scratch_filesystem", fs));
}

/* 5. A pinned host key and a login key. */
static int access_restricted(json_t *qs, facts_t *f)
{
    int yes = f->host.host_key_sha256 != NULL && f->credential.id != NULL;
    return add(qs, "access", "Is access restricted, with a pinned host key and key-based login?",
               yes ? "yes" : "no",
               json_pack("{s:s?, s:s?, s:s?}", "host_key_sha256", f->host.host_key_sha256,
                         "credential_id", f->credential.id, "key_type", f->credential.key_type));
}

/* 6. The accepted gate's workload check passed, on the current stack. */
static int baseline(json_t *qs, facts_t *f)
{
    int yes = gate_covers(f) && is(f->accepted_gate.workload.status, "pass");
    return add(qs, "baseline", "Is there an application baseline?", yes ? "yes" : "no",
               gate_evidence(f, "workload_status", &f->accepted_gate.workload));
}

/* 7. The last gate's observability check (unknown when skipped or never run). */
static int observability(json_t *qs, facts_t *f)
{
    const struct plan_readiness_check *ob = &f->last_gate.observability;
    const char *a = ob->status == NULL || is(ob->status, "skip") ? "unknown"
                    : is(ob->status, "pass")                     ? "yes"
                                                                 : "no";
    return add(qs, "observability", "Are observability checks passing?", a,
               json_pack("{s:s?, s:s?, s:s?}", "gate_run_id", f->last_gate.id, "status", ob->status,
                         "message", ob->message));
}

/* 8. A restore drill of the host's pool passed: restored from durable storage onto a
 * fresh scratch, the stack started and its first unit of work accepted, in time. */
static int recovery(json_t *qs, facts_t *f)
{
    double age_days = f->drill.age_seconds / 86400.0;
    int stale =
        f->drill.id != NULL && f->drill.every_days > 0 && age_days > (double)f->drill.every_days;
    int yes = f->drill.id != NULL && is(f->drill.verdict, "pass") && !stale;
    json_t *num =
        f->drill.recovery_seconds >= 0 ? json_real(f->drill.recovery_seconds) : json_null();
    json_t *max =
        f->drill.max_recovery_seconds >= 0 ? json_real(f->drill.max_recovery_seconds) : json_null();
    json_t *age = f->drill.id != NULL ? json_real(age_days) : json_null();
    json_t *every =
        f->drill.every_days > 0 ? json_integer((json_int_t)f->drill.every_days) : json_null();
    return add(qs, "recovery", "Has a restart or replacement been tested?", yes ? "yes" : "no",
               json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:o, s:o, s:o, s:o, s:b, s:s}", "drill_id",
                         f->drill.id, "drill_host_id", f->drill.host_id, "verdict",
                         f->drill.verdict, "reason", f->drill.reason, "finished_at",
                         f->drill.finished_at, "recovery_seconds", num, "max_recovery_seconds", max,
                         "age_days", age, "every_days", every, "stale", stale, "rule",
                         "yes when the pool's newest restore drill passed (and is not older "
                         "than drill.every_days); no without one"));
}

/* 9. The pool stops idle hosts: auto_stop with a stop command. */
static int idle_stop(json_t *qs, facts_t *f)
{
    int yes = f->pool.auto_stop && f->pool.stop_command != NULL;
    json_t *after = f->pool.has_idle_stop_after
                        ? json_integer((json_int_t)f->pool.idle_stop_after_seconds)
                        : json_null();
    return add(qs, "idle_stop", "Does the host stop when idle?", yes ? "yes" : "no",
               json_pack("{s:b, s:o, s:s?, s:s?}", "auto_stop", f->pool.auto_stop != 0,
                         "idle_stop_after_seconds", after, "stop_command", f->pool.stop_command,
                         "pool_id", f->pool.id));
}

/* The questions, in the order the report lists them. */
static int (*const questions[])(json_t *, facts_t *) = {
    brief,    topology,      stack_pinned, state_separation, access_restricted,
    baseline, observability, recovery,     idle_stop};
#define NQUESTIONS ((int)(sizeof questions / sizeof questions[0]))

json_t *plan_readiness(const struct plan_readiness_facts *f)
{
    json_t *qs = json_array();
    int yes = 0;
    for (int i = 0; i < NQUESTIONS; i++)
        yes += questions[i](qs, f);
    return json_pack("{s:s?, s:s?, s:o, s:{s:i, s:i}}", "host_id", f->host.id, "state",
                     f->host.state, "questions", qs, "summary", "yes", yes, "of", NQUESTIONS);
}
