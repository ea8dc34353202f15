/* gates.c — the acceptance gate and what depends on it. A host serves only while its
 * current stack has an accepted gate; the gate and diagnostics run as durable jobs. */
#include "api/gates.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hosts.h"
#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "db/gates.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"
#include "planner/readiness.h"

enum refusal {
    OK = 0,
    NO_HOST,
    BUSY,
    NOT_PROVISIONED,
    DRAINING,
    NOT_DRAINED,
    NO_GATE,
    QUARANTINED,
    STOPPED,
    NOT_QUARANTINED,
    CONFLICT,
};

struct action_arg {
    struct api_req *r;
    const char *id;
    const char *kind;              /* job kind, or NULL for state actions */
    const char *params;            /* job params JSON */
    const char *reason, *host_key; /* release */
    char *doc;
    char job_id[37];
    enum refusal refused;
    char state[32];
    int held; /* the quarantine hold is set */
};

/* Asks the state machine whether ev may happen now; on a refusal sets a->refused (the
 * not-allowed case as the event's own refusal) and returns -1. */
static int allowed(struct action_arg *a, enum plan_host_event ev, enum refusal not_allowed)
{
    enum plan_host_answer ans = plan_host_allows(
        a->state, a->held, ev,
        a->r->principal.role == ROLE_ADMIN ? PLAN_ACTOR_ADMIN : PLAN_ACTOR_OPERATOR);
    if (ans == PLAN_HOST_OK)
        return 0;
    int stopped = !strcmp(a->state, "stopped") || !strcmp(a->state, "stopping");
    a->refused = ans == PLAN_HOST_QUARANTINED ? QUARANTINED : stopped ? STOPPED : not_allowed;
    return -1;
}

/* Applies ev through the database's state machine; a refusal there (the state changed
 * since it was read) becomes a 409. */
static enum db_status apply(struct db_conn *c, struct action_arg *a, enum plan_host_event ev,
                            const char *hint, const char *reason)
{
    struct db_host_event e = {a->id, plan_host_events[ev].name, hint, reason,
                              NULL,  a->r->principal.sub,       NULL};
    enum db_host_refusal refused;
    enum db_status s = db_host_event(c, &e, NULL, &refused);
    if (refused != DB_HOST_OK)
        a->refused = refused == DB_HOST_QUARANTINED ? QUARANTINED : CONFLICT;
    return s;
}

/* Reads the host's state and whether its accepted gate still covers the current stack. */
static enum db_status host_state(struct db_conn *c, struct action_arg *a, int *gate_valid,
                                 int *has_stack)
{
    struct db_gate_context g;
    enum db_status s = db_gate_context(c, a->id, NULL, &g);
    if (s <= 0) {
        a->refused = NO_HOST;
        return s;
    }
    snprintf(a->state, sizeof a->state, "%s", g.state);
    a->held = g.held;
    *has_stack = g.current_stack_id != NULL;
    db_gate_context_free(&g);
    char *doc = NULL;
    s = db_host_readiness_facts(c, a->id, &doc);
    json_t *f = doc ? json_loads(doc, 0, NULL) : NULL;
    free(doc);
    const json_t *gate = json_object_get(f, "accepted_gate");
    const char *gstack = json_string_value(json_object_get(gate, "stack_id"));
    const char *cur =
        json_string_value(json_object_get(json_object_get(f, "host"), "current_stack_id"));
    *gate_valid = gate != NULL && gstack && cur && !strcmp(gstack, cur);
    json_decref(f);
    return s < 0 ? s : DB_ONE_RESULT;
}

/* Every action's start, in its transaction (which may be retried): no answer yet, and the
 * host's state, hold and gate read. */
static enum db_status begin(struct db_conn *c, struct action_arg *a, int *gate_valid,
                            int *has_stack)
{
    a->refused = OK;
    return host_state(c, a, gate_valid, has_stack);
}

static enum db_status job_fn(struct db_conn *c, void *arg)
{
    struct action_arg *a = arg;
    int valid, has_stack;
    enum db_status s = begin(c, a, &valid, &has_stack);
    if (s <= 0)
        return s;
    int diag = !strcmp(a->kind, "diagnostics");
    int draining = !strcmp(a->state, "draining") || !strcmp(a->state, "drained");
    if (allowed(a, diag ? HE_DIAGNOSTICS_REQUESTED : HE_GATE_REQUESTED,
                diag       ? NOT_DRAINED
                : draining ? DRAINING
                           : BUSY) != 0)
        return DB_NO_RESULTS;
    if (!diag && !has_stack) {
        a->refused = NOT_PROVISIONED;
        return DB_NO_RESULTS;
    }
    s = db_job_create(c, a->kind, a->id, NULL, a->params, a->r->principal.sub, &a->doc, a->job_id);
    if (s == DB_HARD_ERROR && db_conn_unique_violation(c)) {
        a->refused = BUSY;
        return s;
    }
    if (s < 0)
        return s;
    return api_audit(c, a->r, diag ? "host.diagnostics" : "host.gate", "host", a->id,
                     MHD_HTTP_ACCEPTED);
}

static enum MHD_Result refusal_reply(struct api_req *r, const struct action_arg *a)
{
    switch (a->refused) {
    case NO_HOST: return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    case BUSY:
        return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                                 "this host already has a queued or running job");
    case NOT_PROVISIONED:
        return api_reply_problem(r, API_ERR_NOT_PROVISIONED, NULL,
                                 "the host has no current stack; provision it first");
    case DRAINING:
        return api_reply_problem(r, API_ERR_HOST_DRAINED, NULL,
                                 "the host is %s; resume it (or run diagnostics) first", a->state);
    case NOT_DRAINED:
        if (a->kind == NULL) /* resume, the one state action that needs a drained host */
            return api_reply_problem(r, API_ERR_HOST_NOT_DRAINED, NULL,
                                     "only a drained host can be resumed (this one is %s)",
                                     a->state);
        return api_reply_problem(r, API_ERR_HOST_NOT_DRAINED, NULL,
                                 "active diagnostics are invasive and run only on a drained host "
                                 "(this one is %s); POST /v1/hosts/{id}/drain first",
                                 a->state);
    case NO_GATE:
        return api_reply_problem(r, API_ERR_GATE_REQUIRED, NULL,
                                 "the host has no accepted gate for its current stack; run the "
                                 "gate (POST /v1/hosts/{id}/gate)");
    case QUARANTINED:
        return api_reply_problem(r, API_ERR_HOST_QUARANTINED, NULL,
                                 "the host is quarantined (host key mismatch or hardware "
                                 "evidence); an admin must release it first "
                                 "(POST /v1/hosts/{id}/release)");
    case STOPPED:
        return api_reply_problem(r, API_ERR_HOST_STOPPED, NULL,
                                 "the host is %s; provision it again to bring it back", a->state);
    case NOT_QUARANTINED:
        return api_reply_problem(r, API_ERR_HOST_NOT_QUARANTINED, NULL,
                                 "the host is not quarantined (it is %s): nothing to release",
                                 a->state);
    case CONFLICT:
        return api_reply_problem(r, API_ERR_HOST_STATE_CONFLICT, NULL,
                                 "the host's state changed while the request ran; read it and "
                                 "retry");
    default: return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "unexpected refusal");
    }
}

/* Runs an action's transaction on a (its id from the path already checked) and answers:
 * the refusal, the failure, or status with the document (and for a job its location). */
static enum MHD_Result run_action(struct api_req *r, struct action_arg *a, db_tx_fn fn)
{
    enum db_status s = api_run_tx_doc(fn, a, &a->doc);
    if (a->refused) {
        free(a->doc); /* committed (a refused state change) or rolled back: not sent */
        return refusal_reply(r, a);
    }
    if (s < 0)
        return api_reply_db(r, s);
    if (a->kind == NULL)
        return api_reply_text(r, MHD_HTTP_OK, a->doc, NULL);
    char location[96];
    snprintf(location, sizeof location, "/v1/jobs/%s", a->job_id);
    return api_reply_text(r, MHD_HTTP_ACCEPTED, a->doc, location);
}

static enum MHD_Result queue_job(struct api_req *r, const char *kind, const char *params)
{
    struct action_arg a = {.r = r, .id = api_path_id(r, "host"), .kind = kind, .params = params};
    return a.id ? run_action(r, &a, job_fn) : MHD_YES;
}

enum MHD_Result api_hosts_gate(struct api_req *r)
{
    return queue_job(r, "gate", NULL);
}

struct diag_in {
    json_int_t level;
};
static const struct spec_field diag_spec[] = {
    {"level", SPEC_INTEGER, SPEC_REQUIRED, 1, 3, NULL, NULL, NULL, NULL,
     SPEC_TO(struct diag_in, level)},
    SPEC_END,
};

enum MHD_Result api_hosts_diagnostics(struct api_req *r)
{
    struct diag_in in;
    if (api_spec_parse(r, r->json, diag_spec, &in) != 0)
        return MHD_YES;
    char params[32];
    snprintf(params, sizeof params, "{\"level\":%d}", (int)in.level);
    return queue_job(r, "diagnostics", params);
}

/* A state action on the host named by the path. */
static enum MHD_Result host_action(struct api_req *r, db_tx_fn fn)
{
    struct action_arg a = {.r = r, .id = api_path_id(r, "host")};
    return a.id ? run_action(r, &a, fn) : MHD_YES;
}

/* ---- drain / resume ---- */

static enum db_status drain_fn(struct db_conn *c, void *arg)
{
    struct action_arg *a = arg;
    int valid, has_stack;
    enum db_status s = begin(c, a, &valid, &has_stack);
    if (s <= 0)
        return s;
    if (allowed(a, HE_DRAIN, CONFLICT) != 0)
        return DB_NO_RESULTS;
    if (strcmp(a->state, "draining") != 0 && strcmp(a->state, "drained") != 0) {
        char reason[200];
        snprintf(reason, sizeof reason, "drain requested by %s", a->r->principal.sub);
        s = apply(c, a, HE_DRAIN, NULL, reason);
        if (s < 0)
            return s;
        s = db_host_drained_if_idle(c, a->id, a->r->principal.sub);
        if (s < 0)
            return s;
        s = api_audit(c, a->r, "host.drain", "host", a->id, MHD_HTTP_OK);
        if (s < 0)
            return s;
    }
    return db_host_get(c, a->id, &a->doc);
}

enum MHD_Result api_hosts_drain(struct api_req *r)
{
    return host_action(r, drain_fn);
}

static enum db_status resume_fn(struct db_conn *c, void *arg)
{
    struct action_arg *a = arg;
    int valid, has_stack;
    enum db_status s = begin(c, a, &valid, &has_stack);
    if (s <= 0)
        return s;
    if (allowed(a, HE_RESUME, NOT_DRAINED) != 0)
        return DB_NO_RESULTS;
    if (!valid) {
        a->refused = NO_GATE;
        return DB_NO_RESULTS;
    }
    char reason[200];
    snprintf(reason, sizeof reason, "resumed by %s with an accepted gate for its stack",
             a->r->principal.sub);
    s = apply(c, a, HE_RESUME, NULL, reason);
    if (s < 0)
        return s;
    s = api_audit(c, a->r, "host.resume", "host", a->id, MHD_HTTP_OK);
    if (s < 0)
        return s;
    return db_host_get(c, a->id, &a->doc);
}

enum MHD_Result api_hosts_resume(struct api_req *r)
{
    return host_action(r, resume_fn);
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

static enum db_status release_fn(struct db_conn *c, void *arg)
{
    struct action_arg *a = arg;
    int valid, has_stack;
    enum db_status s = begin(c, a, &valid, &has_stack);
    if (s <= 0)
        return s;
    if (!a->held) {
        a->refused = NOT_QUARANTINED;
        return DB_NO_RESULTS;
    }
    const char *key = a->host_key, *why = a->reason;
    char reason[700];
    snprintf(reason, sizeof reason, "released from quarantine by %s (%s): %s", a->r->principal.sub,
             key ? "new host key pinned" : "host key recorded on next contact", why);
    s = apply(c, a, HE_RELEASE, has_stack ? "provisioned" : "registered", reason);
    if (s < 0)
        return s;
    s = db_host_repin(c, a->id, key);
    if (s < 0)
        return s;
    s = api_audit_reason(c, a->r, "host.release", "host", a->id, MHD_HTTP_OK, why);
    if (s < 0)
        return s;
    return db_host_get(c, a->id, &a->doc);
}

enum MHD_Result api_hosts_release(struct api_req *r)
{
    struct release_in in = {NULL, NULL, 0};
    struct action_arg a = {.r = r, .id = api_path_id(r, "host")};
    if (a.id == NULL || api_spec_parse(r, r->json, release_spec, &in) != 0)
        return MHD_YES;
    if ((in.host_key_sha256 != NULL) == in.repin)
        return api_reply_problem(r, API_ERR_INVALID_FIELD,
                                 in.host_key_sha256 ? "repin" : "host_key_sha256",
                                 "give either host_key_sha256 (the host's new key) or "
                                 "\"repin\": true (record the key on the next contact), not "
                                 "both");
    a.reason = in.reason;
    a.host_key = in.host_key_sha256;
    return run_action(r, &a, release_fn);
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
};

static enum db_status run_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_gate_filter f = {q->values[0], q->values[1], q->values[2], q->after, q->limit + 1};
    return db_gate_run_list(c, &f, page);
}

static const struct list_def run_list = {"gate_run", run_filters, 3,       api_valid_seq,
                                         NULL,       NULL,        run_page};

enum MHD_Result api_gate_runs_list(struct api_req *r)
{
    return api_list_serve(r, &run_list);
}

static const struct list_filter host_run_filters[] = {
    {"verdict", valid_verdict, "accept, isolate or investigate"},
    {"kind", valid_kind, "gate or diagnostics"},
};

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
    struct db_gate_filter f = {id, q.values[0], q.values[1], q.after, q.limit + 1};
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
    return id ? api_get_document(r, id, "gate run", db_gate_run_get) : MHD_YES;
}

/* ---- readiness ---- */

enum MHD_Result api_hosts_readiness(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    char *doc = id ? api_fetch_document(r, id, "host", db_host_readiness_facts) : NULL;
    if (doc == NULL)
        return MHD_YES;
    json_t *facts = json_loads(doc, 0, NULL);
    free(doc);
    if (facts == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    json_t *out = plan_readiness(facts);
    json_decref(facts);
    return api_reply_json(r, MHD_HTTP_OK, out, NULL);
}
