/* readiness.c — see readiness.h. */
#include "planner/readiness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *check_named(const json_t *checks, const char *name)
{
    size_t i;
    const json_t *c;
    json_array_foreach(checks, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, name))
            return c;
    }
    return NULL;
}

static const char *status_of(const json_t *check)
{
    return json_string_value(json_object_get(check, "status"));
}

static void add(json_t *qs, const char *id, const char *question, const char *answer,
                json_t *evidence)
{
    json_array_append_new(qs, json_pack("{s:s, s:s, s:s, s:o}", "id", id, "question", question,
                                        "answer", answer, "evidence",
                                        evidence ? evidence : json_object()));
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

json_t *plan_readiness(const json_t *f)
{
    const json_t *host = json_object_get(f, "host");
    const json_t *pool = json_object_get(json_object_get(f, "pool"), "spec");
    const json_t *stack = json_object_get(f, "stack");
    const json_t *gate = json_object_get(f, "accepted_gate");
    const json_t *last = json_object_get(f, "last_gate");
    const json_t *facts = json_object_get(host, "facts");
    const json_t *gchecks = json_object_get(gate, "checks");
    json_t *qs = json_array();
    int yes = 0;

    /* 1. brief */
    add(qs, "brief", "Does the brief give the model, memory, concurrency and success metric?",
        "unknown",
        json_pack("{s:s}", "note",
                  "no brief is linked to this host or its pool yet; briefs are "
                  "sized on their own (GET /v1/briefs/{id}/sizing)"));

    /* 2. topology tested */
    const json_t *topo = check_named(gchecks, "topology");
    const char *ts = status_of(topo);
    const char *a2 = gate == NULL                ? "no"
                     : ts && !strcmp(ts, "pass") ? "yes"
                     : ts && !strcmp(ts, "skip") ? "yes"
                                                 : "no";
    add(qs, "topology", "Was the exact topology tested?", a2,
        json_pack("{s:O?, s:s?, s:O?}", "gate_run_id", json_object_get(gate, "id"),
                  "topology_status", ts, "values", json_object_get(topo, "values")));
    yes += !strcmp(a2, "yes");

    /* 3. stack pinned */
    const json_t *spec = json_object_get(stack, "spec");
    int pinned = stack != NULL && json_string_value(json_object_get(stack, "image_digest")) &&
                 json_string_value(json_object_get(spec, "driver_version")) &&
                 json_string_value(json_object_get(spec, "cuda_version"));
    add(qs, "stack_pinned", "Is the stack pinned by version and digest?", pinned ? "yes" : "no",
        json_pack("{s:O?, s:O?, s:O?, s:O?}", "stack_id", json_object_get(stack, "id"),
                  "image_digest", json_object_get(stack, "image_digest"), "driver_version",
                  json_object_get(spec, "driver_version"), "cuda_version",
                  json_object_get(spec, "cuda_version")));
    yes += pinned;

    /* 4. durable apart from scratch */
    const char *durable = json_string_value(json_object_get(pool, "durable_path"));
    const char *scratch = json_string_value(json_object_get(pool, "scratch_path"));
    const char *df = json_string_value(json_object_get(facts, "filesystems"));
    char d1[256], d2[256];
    const char *fd = mount_of(df, durable, d1, sizeof d1);
    const char *fs = mount_of(df, scratch, d2, sizeof d2);
    const char *a4 = (fd && fs) ? (strcmp(fd, fs) != 0 ? "yes" : "no") : "unknown";
    add(qs, "state_separation", "Is durable state kept apart from scratch?", a4,
        json_pack("{s:s?, s:s?, s:s?, s:s?}", "durable_path", durable, "scratch_path", scratch,
                  "durable_filesystem", fd, "scratch_filesystem", fs));
    yes += !strcmp(a4, "yes");

    /* 5. access restricted */
    const char *key = json_string_value(json_object_get(host, "host_key_sha256"));
    const json_t *cred = json_object_get(f, "credential");
    int restricted = key != NULL && cred != NULL;
    add(qs, "access", "Is access restricted, with a pinned host key and key-based login?",
        restricted ? "yes" : "no",
        json_pack("{s:s?, s:O?, s:O?}", "host_key_sha256", key, "credential_id",
                  json_object_get(cred, "id"), "key_type", json_object_get(cred, "key_type")));
    yes += restricted;

    /* 6. application baseline */
    const json_t *wl = check_named(gchecks, "workload");
    const char *ws = status_of(wl);
    const char *a6 = ws == NULL            ? (gate ? "no" : "unknown")
                     : !strcmp(ws, "pass") ? "yes"
                     : !strcmp(ws, "skip") ? "no"
                                           : "no";
    add(qs, "baseline", "Is there an application baseline?", a6,
        json_pack("{s:O?, s:s?, s:O?}", "gate_run_id", json_object_get(gate, "id"),
                  "workload_status", ws, "values", json_object_get(wl, "values")));
    yes += !strcmp(a6, "yes");

    /* 7. observability */
    const json_t *ob = check_named(json_object_get(last, "checks"), "observability");
    const char *os = status_of(ob);
    const char *a7 = os == NULL            ? "unknown"
                     : !strcmp(os, "pass") ? "yes"
                     : !strcmp(os, "skip") ? "unknown"
                                           : "no";
    add(qs, "observability", "Are observability checks passing?", a7,
        json_pack("{s:O?, s:s?, s:O?}", "gate_run_id", json_object_get(last, "id"), "status", os,
                  "message", json_object_get(ob, "message")));
    yes += !strcmp(a7, "yes");

    /* 8. restart or replacement tested */
    json_int_t accepted = json_integer_value(json_object_get(f, "accepted_gates"));
    json_int_t prov = json_integer_value(json_object_get(f, "provisionings"));
    const char *a8 = accepted >= 2 ? "yes" : "no";
    add(qs, "recovery", "Has a restart or replacement been tested?", a8,
        json_pack("{s:I, s:I, s:s}", "accepted_gate_runs", accepted, "successful_provisionings",
                  prov, "rule",
                  "yes once the host passed the gate again after a first acceptance"));
    yes += !strcmp(a8, "yes");

    /* 9. stops when idle */
    int auto_stop = json_is_true(json_object_get(pool, "auto_stop"));
    const json_t *idle = json_object_get(pool, "idle_stop_after_seconds");
    const char *stop_cmd = json_string_value(json_object_get(pool, "stop_command"));
    const char *a9 = auto_stop && stop_cmd ? "yes" : "no";
    add(qs, "idle_stop", "Does the host stop when idle?", a9,
        json_pack("{s:b, s:O?, s:s?, s:O?}", "auto_stop", auto_stop, "idle_stop_after_seconds",
                  idle, "stop_command", stop_cmd, "pool_id",
                  json_object_get(json_object_get(f, "pool"), "id")));
    yes += !strcmp(a9, "yes");

    return json_pack("{s:O?, s:O?, s:o, s:{s:i, s:i}}", "host_id", json_object_get(host, "id"),
                     "state", json_object_get(host, "state"), "questions", qs, "summary", "yes",
                     yes, "of", 9);
}
