/* gates.c — the acceptance gate and what depends on it. A host serves only while its
 * current stack has an accepted gate; the gate and diagnostics run as durable jobs. */
#include "api/gates.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/host_command.h"
#include "api/hosts.h"
#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/gates.h"
#include "planner/readiness.h"

static enum MHD_Result host_command(struct api_req *r, struct svc_host_cmd *cmd)
{
    cmd->host_id = api_path_id(r, "host");
    return cmd->host_id ? api_host_command(r, cmd) : MHD_YES;
}

enum MHD_Result api_hosts_gate(struct api_req *r)
{
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_GATE};
    return host_command(r, &cmd);
}

/* {"level": 1-3} (dcgmi diag), or {"tests": ["storage", "bandwidth", "workload"]}: those
 * gate checks run again on the drained host and are compared with its accepted gate
 * (provisioner/jobs/gate_targeted.c). Not both. */
struct diag_in {
    json_int_t level;
    int has_level;
    const json_t *tests;
};
static const struct spec_field diag_spec[] = {
    {"level", SPEC_INTEGER, 0, 1, 3, NULL, NULL, NULL, NULL,
     SPEC_TO_SEEN(struct diag_in, level, has_level)},
    {"tests", SPEC_ARRAY, 0, 1, 3, NULL, NULL, NULL, NULL, SPEC_TO(struct diag_in, tests)},
    SPEC_END,
};
static const char *const diag_tests[] = {"storage", "bandwidth", "workload", NULL};

/* The tests as a JSON array text in out[n], or a 400 naming the bad item. */
static int diag_tests_text(struct api_req *r, const json_t *tests, char *out, size_t n)
{
    size_t i, used = 0;
    const json_t *t;
    char path[32];
    out[used++] = '[';
    json_array_foreach(tests, i, t)
    {
        snprintf(path, sizeof path, "tests[%zu]", i);
        const char *v = json_string_value(t);
        int k = 0;
        while (v && diag_tests[k] && strcmp(diag_tests[k], v))
            k++;
        if (v == NULL || diag_tests[k] == NULL) {
            int show = v && strlen(v) <= 40 && spec_printable(v);
            char msg[160];
            snprintf(msg, sizeof msg, "%s%s%s is not a test: storage, bandwidth or workload",
                     show ? "\"" : "", show ? v : "the item", show ? "\"" : "");
            api_reply_problem(r, API_ERR_INVALID_FIELD, path, "%s", msg);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(tests, j), t)) {
                char msg[96];
                snprintf(msg, sizeof msg, "\"%s\" is named twice", v);
                api_reply_problem(r, API_ERR_INVALID_FIELD, path, "%s", msg);
                return -1;
            }
        used += (size_t)snprintf(out + used, n - used, "%s\"%s\"", i ? "," : "", v);
    }
    snprintf(out + used, n - used, "]");
    return 0;
}

enum MHD_Result api_hosts_diagnostics(struct api_req *r)
{
    struct diag_in in = {0, 0, NULL};
    if (api_spec_parse(r, r->json, diag_spec, &in) != 0)
        return MHD_YES;
    if (!in.has_level && in.tests == NULL)
        return api_reply_problem(r, API_ERR_MISSING_FIELD, "level",
                                 "give level (dcgmi diag -r 1-3) or tests (storage, bandwidth, "
                                 "workload)");
    if (in.has_level && in.tests != NULL)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "tests",
                                 "give either level (dcgmi diag -r 1-3) or tests (storage, "
                                 "bandwidth, workload), not both");
    char tests[64];
    if (in.tests != NULL && diag_tests_text(r, in.tests, tests, sizeof tests) != 0)
        return MHD_YES;
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_DIAGNOSTICS,
                               .diag_level = in.tests ? 0 : (int)in.level,
                               .diag_tests = in.tests ? tests : NULL};
    return host_command(r, &cmd);
}

/* Drain and resume take no body, or {"reason": "..."} (audited); any other member, or a
 * body that is not an object, answers 400. */
static int valid_reason(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}
struct reason_in {
    const char *reason;
};
static const struct spec_field reason_spec[] = {
    {"reason", SPEC_STRING, 0, 1, 500, valid_reason, "1-500 characters without control characters",
     NULL, NULL, SPEC_TO(struct reason_in, reason)},
    SPEC_END,
};

static enum MHD_Result drain_or_resume(struct api_req *r, enum plan_cmd c)
{
    struct reason_in in = {NULL};
    if (r->json != NULL && api_spec_parse(r, r->json, reason_spec, &in) != 0)
        return MHD_YES;
    struct svc_host_cmd cmd = {.cmd = c, .reason = in.reason};
    return host_command(r, &cmd);
}

enum MHD_Result api_hosts_drain(struct api_req *r)
{
    return drain_or_resume(r, PLAN_CMD_DRAIN);
}

enum MHD_Result api_hosts_resume(struct api_req *r)
{
    return drain_or_resume(r, PLAN_CMD_RESUME);
}

/* ---- release from quarantine (admin) ----
 * {"reason": "...", "host_key_sha256": "SHA256:..."} or {"reason": "...", "repin": true}:
 * the quarantine hold is cleared (audited with the reason), the pin replaced or cleared
 * (recorded again on the next contact, with its own audit event), and the host goes to
 * provisioned (registered when it never had a stack): it must pass a gate again. */

struct release_in {
    const char *reason, *host_key_sha256;
    int repin;
};
static const struct spec_field release_spec[] = {
    {"reason", SPEC_STRING, SPEC_REQUIRED, 1, 500, NULL, NULL, NULL, NULL,
     SPEC_TO(struct release_in, reason)},
    {"host_key_sha256", SPEC_STRING, 0, 50, 50, api_valid_host_key,
     "SHA256:<43 base64 characters>, as ssh-keygen -l prints it", NULL, NULL,
     SPEC_TO(struct release_in, host_key_sha256)},
    {"repin", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_TO(struct release_in, repin)},
    SPEC_END,
};

enum MHD_Result api_hosts_release(struct api_req *r)
{
    struct release_in in = {NULL, NULL, 0};
    if (api_path_id(r, "host") == NULL || api_spec_parse(r, r->json, release_spec, &in) != 0)
        return MHD_YES;
    if ((in.host_key_sha256 != NULL) == in.repin)
        return api_reply_problem(r, API_ERR_INVALID_FIELD,
                                 in.host_key_sha256 ? "repin" : "host_key_sha256",
                                 "give either host_key_sha256 (the host's new key) or "
                                 "\"repin\": true (record the key on the next contact), not "
                                 "both");
    struct svc_host_cmd cmd = {
        .cmd = PLAN_CMD_RELEASE, .reason = in.reason, .host_key = in.host_key_sha256};
    return host_command(r, &cmd);
}

/* ---- gate runs ---- */

static int valid_verdict(const char *v)
{
    return !strcmp(v, "accept") || !strcmp(v, "isolate") || !strcmp(v, "investigate");
}
static int valid_kind(const char *v)
{
    return !strcmp(v, "gate") || !strcmp(v, "diagnostics");
}

static const struct list_filter run_filters[] = {
    {"host_id", api_valid_uuid, "a host id"},
    {"verdict", valid_verdict, "accept, isolate or investigate"},
    {"kind", valid_kind, "gate or diagnostics"},
    {"project", NULL, "a project name or id"},
};

static enum db_status run_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_gate_filter f = {q->values[0], q->values[1], q->values[2], q->after,
                               q->limit + 1, q->scope,     q->values[3]};
    return db_gate_run_list(c, &f, page);
}

static const struct list_def run_list = {"gate_run", run_filters, 4,       api_valid_seq,
                                         NULL,       NULL,        run_page};

enum MHD_Result api_gate_runs_list(struct api_req *r)
{
    return api_list_serve(r, &run_list);
}

static const struct list_filter host_run_filters[] = {
    {"verdict", valid_verdict, "accept, isolate or investigate"},
    {"kind", valid_kind, "gate or diagnostics"},
};

/* A host's runs: those of a host the caller may see (another project's host lists none,
 * as one that does not exist). */
enum MHD_Result api_hosts_gate_runs(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, "gate_run", host_run_filters, 2, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !api_valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct db_gate_filter f = {id,          q.values[0],       q.values[1], q.after,
                               q.limit + 1, api_scope_read(r), NULL};
    struct db_page page = {NULL};
    struct db_conn *c;
    enum db_status s;
    c = db_acquire(&s);
    if (c != NULL) {
        s = db_gate_run_list(c, &f, &page);
        db_release(c);
    }
    long limit = q.limit;
    api_list_query_free(&q);
    if (s < 0) {
        db_page_clear(&page);
        return api_reply_db(r, s);
    }
    enum MHD_Result ret = api_page_reply(r, &page, limit, "gate_run");
    db_page_clear(&page);
    return ret;
}

enum MHD_Result api_gate_runs_get(struct api_req *r)
{
    const char *id = api_path_id(r, "gate run");
    return id ? api_get_document_in(r, id, "gate run", db_gate_run_get) : MHD_YES;
}

/* ---- readiness ----
 * The typed facts from db/ (one statement), copied into the planner's view (borrowed
 * strings), answered by planner/readiness.c. */

struct readiness_arg {
    const char *id, *scope;
    struct db_readiness_facts f;
};

static enum db_status readiness_fn(struct db_conn *c, void *arg)
{
    struct readiness_arg *a = arg;
    return db_readiness_facts(c, a->id, a->scope, &a->f);
}

static struct plan_readiness_facts readiness_view(const struct db_readiness_facts *d)
{
    return (struct plan_readiness_facts){
        .host = {.id = d->host_id,
                 .state = d->state,
                 .host_key_sha256 = d->host_key_sha256,
                 .current_stack_id = d->current_stack_id,
                 .filesystems = d->filesystems},
        .credential = {.id = d->credential_id, .key_type = d->key_type},
        .pool = {.id = d->pool_id,
                 .durable_path = d->durable_path,
                 .scratch_path = d->scratch_path,
                 .stop_command = d->stop_command,
                 .auto_stop = d->auto_stop,
                 .has_idle_stop_after = d->has_idle_stop_after,
                 .idle_stop_after_seconds = d->idle_stop_after_seconds},
        .stack = {.id = d->stack_id,
                  .image_digest = d->image_digest,
                  .driver_version = d->driver_version,
                  .cuda_version = d->cuda_version},
        .accepted_gate = {.id = d->gate_id,
                          .stack_id = d->gate_stack_id,
                          .topology = {.status = d->topology_status,
                                       .values_json = d->topology_values},
                          .workload = {.status = d->workload_status,
                                       .values_json = d->workload_values}},
        .last_gate = {.id = d->last_gate_id,
                      .observability = {.status = d->observability_status,
                                        .message = d->observability_message}},
        .accepted_gate_runs = d->accepted_gate_runs,
        .successful_provisionings = d->successful_provisionings,
        .drill = {.id = d->drill_id,
                  .host_id = d->drill_host_id,
                  .verdict = d->drill_verdict,
                  .reason = d->drill_reason,
                  .finished_at = d->drill_finished_at,
                  .recovery_seconds = d->drill_recovery_seconds,
                  .max_recovery_seconds = d->drill_max_recovery_seconds,
                  .age_seconds = d->drill_age_seconds,
                  .every_days = d->drill_every_days},
    };
}

enum MHD_Result api_hosts_readiness(struct api_req *r)
{
    struct readiness_arg a = {api_path_id(r, "host"), api_scope_read(r), {0}};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(readiness_fn, &a);
    enum MHD_Result ret;
    if (s < 0) {
        ret = api_reply_db(r, s);
    } else if (s != DB_ONE_RESULT) {
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    } else {
        struct plan_readiness_facts f = readiness_view(&a.f);
        json_t *doc = plan_readiness(&f); /* and the host's project, read with the facts */
        json_t *project = doc && a.f.project ? json_loads(a.f.project, 0, NULL) : NULL;
        if (doc != NULL && json_object_set_new(doc, "project", project) != 0) {
            json_decref(doc); /* (set_new released project) */
            doc = NULL;
        }
        ret = doc ? api_reply_json(r, MHD_HTTP_OK, doc, NULL)
                  : api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
    }
    db_readiness_facts_free(&a.f);
    return ret;
}
