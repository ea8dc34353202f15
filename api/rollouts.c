/* rollouts.c — see rollouts.h. The body is declared in create_spec (max_unavailable, an
 * integer or a percentage string, is checked by api_rollout_max_unavailable); a malformed
 * member is a 422 invalid_rollout naming it, an unknown one a 400 unknown_field as on
 * every endpoint. svc_rollout_create (service/rollout_create.h) runs the rollout's checks
 * and makes its waves in the transaction that audits rollout.create; each of its refusals
 * is one problem type with the refusal's detail members (hosts, skipped, rollout_id,
 * state…) added to the problem document. Pause, resume and abort take an optional body {"reason"}.
 */
#include "api/rollouts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/rollouts_read.h"
#include "planner/scope.h"
#include "service/rollout_cost.h"
#include "service/rollout_create.h"
#include "service/rollups.h"

#define RO_DEFAULT_RATIO 0.95
#define RO_DEFAULT_SOAK  300
#define RO_MAX_HOSTS     1000000

int api_rollout_max_unavailable(const json_t *v, int *hosts, int *pct)
{
    *hosts = 0;
    *pct = 0;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 1 || n > RO_MAX_HOSTS)
            return -1;
        *hosts = (int)n;
        return 0;
    }
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v), digits = strspn(s, "0123456789");
    if (digits < 1 || digits > 3 || s[0] == '0' || len != digits + 1 || s[digits] != '%')
        return -1;
    int n = atoi(s);
    if (n < 1 || n > 100)
        return -1;
    *pct = n;
    return 0;
}

/* ---- problems with the refusal's members ---- */

/* A problem document like api_reply_problem's, with the members of extra (borrowed; may
 * be NULL) added where they do not overwrite its own. */
static enum MHD_Result reply_problem_with(struct api_req *r, enum api_error err, const char *field,
                                          const json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result reply_problem_with(struct api_req *r, enum api_error err, const char *field,
                                          const json_t *extra, const char *fmt, ...)
{
    char detail[512], type[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    const char *code = api_error_code(err);
    unsigned status = api_error_status(err);
    snprintf(type, sizeof type, "urn:gpufleet:problem:%s", code);
    json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title",
                          api_error_title(err), "status", (int)status, "detail", detail, "code",
                          code, "request_id", r->request_id);
    if (p == NULL) /* the detail quoted something that is not UTF-8 */
        return api_reply_problem(r, err, field, "%s", api_error_title(err));
    if (field != NULL)
        json_object_set_new(p, "field", json_string(field));
    if (extra != NULL)
        json_object_update_missing(p, (json_t *)extra);
    char *text = json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(p);
    if (text == NULL)
        return api_reply_problem(r, err, field, "%s", detail);
    r->error_code = code;
    enum MHD_Result ret = api_reply_raw(r, status, "application/problem+json", text, strlen(text));
    free(text);
    return ret;
}

/* The answer to a refusal of svc_rollout_create or svc_rollout_control. */
static enum MHD_Result reply_refusal(struct api_req *r, enum plan_ro_refusal why,
                                     const json_t *detail)
{
    switch (why) {
    case PLAN_RO_OK:
    case PLAN_RO__REFUSALS: break;
    case PLAN_RO_POOL_UNKNOWN:
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no pool has this id");
    case PLAN_RO_STACK_UNKNOWN:
        return api_reply_problem(r, API_ERR_NOT_FOUND, "stack_id", "no stack has this id");
    case PLAN_RO_NOT_FOUND:
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no rollout has this id");
    case PLAN_RO_ACTIVE:
        return reply_problem_with(r, API_ERR_ROLLOUT_ACTIVE, NULL, detail,
                                  "the pool already has an active rollout (running, paused or "
                                  "rolling back); let it end, or abort it, first");
    case PLAN_RO_NOTHING:
        return reply_problem_with(r, API_ERR_NOTHING_TO_ROLL_OUT, NULL, detail,
                                  "no host of the pool is ready on another stack than this one; "
                                  "`skipped` lists the hosts left out and why");
    case PLAN_RO_DRIVER_MISMATCH:
        return reply_problem_with(r, API_ERR_DRIVER_MISMATCH, "stack_id", detail,
                                  "the stack's driver_version differs from the driver these "
                                  "hosts report (`hosts`); drivers are installed out of band, so "
                                  "force does not skip this");
    case PLAN_RO_NO_WORKLOAD:
        return reply_problem_with(r, API_ERR_NO_WORKLOAD, "min_baseline_ratio", detail,
                                  "the pool's gate has no workload, so there is no throughput "
                                  "to compare; give the pool a gate.workload, or send "
                                  "min_baseline_ratio: null");
    case PLAN_RO_NO_BASELINE:
        return reply_problem_with(r, API_ERR_NO_BASELINE, NULL, detail,
                                  "no host in scope has a baseline on its current stack under "
                                  "the pool's workload, so a comparison cannot pass; gate a host "
                                  "first, or an admin may set force");
    case PLAN_RO_CANARY_TOO_BIG:
        return reply_problem_with(r, API_ERR_INVALID_ROLLOUT, "canary", detail,
                                  "canary is larger than the number of hosts in scope "
                                  "(`in_scope`)");
    case PLAN_RO_BAD_STATE:
        return reply_problem_with(r, API_ERR_ROLLOUT_STATE_CONFLICT, NULL, detail,
                                  "this action does not apply to the rollout in its state "
                                  "(`state`)");
    }
    return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "unknown refusal");
}

/* ---- the document ---- */

/* The document with its cost view (*out, caller frees; NULL on DB_NO_RESULTS, also for a
 * rollout of a pool outside scope: a uuid[] literal, NULL for every project). */
static enum db_status full_doc(struct db_conn *c, const char *id, const char *scope, char **out)
{
    char *text = NULL;
    json_t *cost = NULL;
    *out = NULL;
    enum db_status s = db_rollout_get(c, id, scope, &text);
    if (s != DB_ONE_RESULT)
        return s;
    s = svc_rollout_cost(c, id, &cost);
    json_t *doc = s == DB_ONE_RESULT ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (s != DB_ONE_RESULT) /* (deleted between the two reads: not there) */
        return s;
    if (doc == NULL) {
        json_decref(cost);
        return DB_HARD_ERROR;
    }
    json_object_set_new(doc, "cost", cost);
    *out = api_json_text(doc);
    json_decref(doc);
    return *out != NULL ? DB_ONE_RESULT : DB_HARD_ERROR;
}

struct get_arg {
    const char *id, *scope;
    char *doc;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    free(a->doc);
    a->doc = NULL;
    return full_doc(c, a->id, a->scope, &a->doc);
}

enum MHD_Result api_rollouts_get(struct api_req *r)
{
    const char *id = api_path_id(r, "rollout");
    if (id == NULL)
        return MHD_YES;
    struct get_arg a = {id, api_scope_read(r), NULL};
    enum db_status s = svc_rollups_run_tx(get_fn, &a); /* the cost view reads the rollups */
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    if (s == DB_NO_RESULTS || a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no rollout has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

/* ---- what a create or a control transaction leaves ---- */

struct outcome {
    enum plan_ro_refusal refusal;
    json_t *detail; /* the refusal's members (owned) */
    char *doc;      /* the document once applied (owned) */
};

/* At the start of each attempt (a retried transaction starts over). */
static void outcome_reset(struct outcome *o)
{
    json_decref(o->detail);
    o->detail = NULL;
    free(o->doc);
    o->doc = NULL;
    o->refusal = PLAN_RO_OK;
}

/* After the engine's call (status s): when it applied, the audit event (action, with
 * reason) and the document of rollout id, in the same transaction. */
static enum db_status outcome_applied(struct db_conn *c, enum db_status s, struct api_req *r,
                                      const char *action, const char *id, unsigned status,
                                      const char *reason, struct outcome *o)
{
    if (s < 0 || o->refusal != PLAN_RO_OK)
        return s;
    s = api_audit_reason(c, r, action, "rollout", id, status, reason);
    if (s < 0)
        return s;
    s = full_doc(c, id, NULL, &o->doc);
    return s == DB_NO_RESULTS ? DB_HARD_ERROR : s; /* there in this transaction */
}

/* The answer: the database problem, the refusal's problem, or status with the document. */
static enum MHD_Result outcome_reply(struct api_req *r, enum db_status s, unsigned status,
                                     const char *location, struct outcome *o)
{
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (o->refusal != PLAN_RO_OK)
        ret = reply_refusal(r, o->refusal, o->detail);
    else {
        ret = api_reply_text(r, status, o->doc, location);
        o->doc = NULL;
    }
    outcome_reset(o);
    return ret;
}

/* ---- list ---- */

static const char *const states[] = {"running",   "paused",      "rolling_back",
                                     "succeeded", "rolled_back", "aborted",
                                     "failed",    "active",      NULL};

static int valid_state(const char *v)
{
    for (const char *const *s = states; *s; s++)
        if (strcmp(*s, v) == 0)
            return 1;
    return 0;
}

static const struct list_filter filters[] = {
    {"pool", api_valid_uuid, "a pool id (UUID)"},
    {"state", valid_state,
     "running, paused, rolling_back, succeeded, rolled_back, aborted, failed or active"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_rollout_filter f = {q->values[0], q->values[1], q->after,
                                  q->limit + 1, q->scope,     q->values[2]};
    return db_rollout_list(c, &f, page);
}

static const struct list_def rollout_list = {"rollout", filters, 3,        api_valid_seq,
                                             NULL,      NULL,    list_page};

enum MHD_Result api_rollouts_list(struct api_req *r)
{
    return api_list_serve(r, &rollout_list);
}

/* ---- create ---- */

struct create_in {
    const char *stack_id;
    json_int_t canary, soak_seconds;
    double ratio;
    int pause_after_canary, force;
};

static const struct spec_field create_spec[] = {
    {"stack_id", SPEC_STRING, SPEC_REQUIRED, 36, 36, api_valid_uuid, "a stack id (UUID)", NULL,
     NULL, SPEC_TO(struct create_in, stack_id)},
    {"canary", SPEC_INTEGER, 0, 0, 100, NULL, NULL, NULL, NULL, SPEC_TO(struct create_in, canary)},
    {"min_baseline_ratio", SPEC_NUMBER, SPEC_NULLABLE | SPEC_EXCLUSIVE_MIN, 0, 10, NULL, NULL, NULL,
     NULL, SPEC_TO(struct create_in, ratio)},
    {"soak_seconds", SPEC_INTEGER, 0, 0, 86400, NULL, NULL, NULL, NULL,
     SPEC_TO(struct create_in, soak_seconds)},
    {"pause_after_canary", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL,
     SPEC_TO(struct create_in, pause_after_canary)},
    {"force", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_TO(struct create_in, force)},
    SPEC_END,
};

/* Validates the body into *out. Returns 0, or -1 after replying: 400 for an unknown or
 * missing member, 422 invalid_rollout naming a malformed one. */
static int parse_create(struct api_req *r, const char *pool_id, struct db_rollout_new *out)
{
    struct create_in in = {.canary = 1, .soak_seconds = RO_DEFAULT_SOAK, .ratio = RO_DEFAULT_RATIO};
    /* max_unavailable is an integer or a string: checked apart from the table. */
    json_t *rest = json_copy(r->json);
    if (rest == NULL) {
        api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        return -1;
    }
    json_object_del(rest, "max_unavailable");
    struct spec_error err;
    int bad = spec_parse(rest, create_spec, &in, &err);
    json_decref(rest); /* the strings stay borrowed from r->json */
    if (bad != 0) {
        api_reply_problem(r, err.code == API_ERR_INVALID_FIELD ? API_ERR_INVALID_ROLLOUT : err.code,
                          err.field, "%s", err.detail);
        return -1;
    }
    int hosts = 1, pct = 0;
    const json_t *mu = json_object_get(r->json, "max_unavailable");
    if (mu != NULL && api_rollout_max_unavailable(mu, &hosts, &pct) != 0) {
        api_reply_problem(r, API_ERR_INVALID_ROLLOUT, "max_unavailable",
                          "max_unavailable must be a whole number of hosts (at least 1) or a "
                          "percentage of the hosts in scope, \"1%%\" to \"100%%\"");
        return -1;
    }
    *out = (struct db_rollout_new){
        .pool_id = pool_id,
        .stack_id = in.stack_id,
        .canary = (int)in.canary,
        .max_unavailable = hosts,
        .max_unavailable_pct = pct,
        .ratio_set = !json_is_null(json_object_get(r->json, "min_baseline_ratio")),
        .min_baseline_ratio = in.ratio,
        .soak_seconds = (int)in.soak_seconds,
        .pause_after_canary = in.pause_after_canary,
        .force = in.force,
        .created_by = r->principal.sub,
    };
    return 0;
}

struct create_arg {
    struct api_req *r;
    struct db_rollout_new in;
    char id[37];
    struct outcome out;
    const struct api_violation *violation;
    int force_denied; /* force, by one who is not an admin of the pool's project */
};

/* Two creates at once: the pool's lock orders them and the second sees the first; the
 * partial unique index rollouts_one_active backs that, answered the same way. */
static const struct api_violation active_violation = {
    API_ERR_ROLLOUT_ACTIVE, NULL,
    "the pool already has an active rollout (running, paused or rolling back); let it end, "
    "or abort it, first"};

/* force is an admin's: of the pool's project (a pool the caller may not see is answered
 * by the create as one that does not exist). */
static enum db_status force_fn(struct db_conn *c, struct create_arg *a)
{
    char project[37];
    a->force_denied = 0;
    if (!a->in.force)
        return DB_ONE_RESULT;
    enum db_status s = db_rollout_pool_project(c, a->in.pool_id, project);
    if (s == DB_ONE_RESULT)
        a->force_denied = plan_scope(&a->r->actor, project, ROLE_ADMIN) == PLAN_SCOPE_FORBIDDEN;
    return s < 0 ? s : DB_ONE_RESULT;
}

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    outcome_reset(&a->out);
    enum db_status s = force_fn(c, a);
    if (s < 0 || a->force_denied)
        return s < 0 ? s : DB_NO_RESULTS;
    s = svc_rollout_create(c, &a->in, a->id, &a->out.refusal, &a->out.detail);
    a->violation = api_violation_of(c, s, &active_violation, NULL);
    char project[37];
    if (s >= 0 && a->out.refusal == PLAN_RO_POOL_UNKNOWN && a->in.scope != NULL &&
        (s = db_rollout_pool_project(c, a->in.pool_id, project)) == DB_ONE_RESULT)
        /* another project's pool: answered as unknown, audited */
        return api_audit(c, a->r, "rollout.denied", "pool", a->in.pool_id, MHD_HTTP_NOT_FOUND);
    return outcome_applied(c, s, a->r, "rollout.create", a->id, MHD_HTTP_CREATED, NULL, &a->out);
}

static enum db_status denied_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    return api_audit(c, a->r, "rollout.denied", "pool", a->in.pool_id, MHD_HTTP_FORBIDDEN);
}

enum MHD_Result api_pools_rollouts_create(struct api_req *r)
{
    const char *pool_id = api_path_id(r, "pool");
    if (pool_id == NULL)
        return MHD_YES;
    struct create_arg a = {.r = r};
    if (parse_create(r, pool_id, &a.in) != 0)
        return MHD_YES;
    a.in.scope = api_scope_route(r);
    enum db_status s = svc_rollups_run_tx(create_fn, &a); /* the answer's cost view */
    if (s >= 0 && a.force_denied) {
        enum MHD_Result ret = api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "force",
                                                "only an admin of the pool's project may force a "
                                                "rollout");
        db_run_tx(denied_fn, &a); /* denied attempts are audited too */
        return ret;
    }
    if (s < 0 && a.violation != NULL) {
        outcome_reset(&a.out);
        return api_reply_write_error(r, a.violation, s);
    }
    char location[64];
    snprintf(location, sizeof location, "/v1/rollouts/%s", a.id);
    return outcome_reply(r, s, MHD_HTTP_CREATED, location, &a.out);
}

/* ---- pause / resume / abort ---- */

struct control_in {
    const char *reason;
};
static const struct spec_field control_spec[] = {
    {"reason", SPEC_STRING, 0, 1, 500, NULL, NULL, NULL, NULL, SPEC_TO(struct control_in, reason)},
    SPEC_END,
};

/* The optional body: nothing, or a JSON object {"reason"}. Returns 0, or -1 after
 * replying 415 / 400. */
static int parse_control(struct api_req *r, struct control_in *in)
{
    if (r->body_len == 0)
        return 0;
    const char *ct = api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct == NULL || strncmp(ct, "application/json", 16) != 0 ||
        (ct[16] != '\0' && ct[16] != ';' && ct[16] != ' ')) {
        api_reply_problem(r, API_ERR_UNSUPPORTED_MEDIA_TYPE, NULL,
                          "send the body as Content-Type: application/json");
        return -1;
    }
    json_error_t jerr;
    r->json = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (r->json == NULL) {
        if (json_error_code(&jerr) == json_error_duplicate_key)
            api_reply_problem(r, API_ERR_DUPLICATE_KEY, NULL, "the body repeats a key");
        else
            api_reply_problem(r, API_ERR_INVALID_JSON, NULL,
                              "the body is not valid JSON (line %d, column %d)", jerr.line,
                              jerr.column);
        return -1;
    }
    if (!json_is_object(r->json)) {
        api_reply_problem(r, API_ERR_BODY_NOT_OBJECT, NULL, "the body must be a JSON object");
        return -1;
    }
    return api_spec_parse(r, r->json, control_spec, in);
}

struct control_arg {
    struct api_req *r;
    const char *id, *reason;
    enum plan_ro_ctl action;
    char audit_action[32];
    struct outcome out;
};

static enum db_status control_fn(struct db_conn *c, void *arg)
{
    struct control_arg *a = arg;
    outcome_reset(&a->out);
    const char *scope = api_scope_route(a->r);
    enum db_status s = svc_rollout_control(c, a->id, scope, a->action, a->r->principal.sub,
                                           a->reason, &a->out.refusal, &a->out.detail);
    if (s >= 0 && a->out.refusal == PLAN_RO_NOT_FOUND && scope != NULL &&
        (s = db_rollout_exists(c, a->id)) == DB_ONE_RESULT) /* another project's: audited */
        return api_audit_reason(c, a->r, "rollout.denied", "rollout", a->id, MHD_HTTP_NOT_FOUND,
                                plan_ro_ctl_names[a->action]);
    return outcome_applied(c, s, a->r, a->audit_action, a->id, MHD_HTTP_OK, a->reason, &a->out);
}

static enum MHD_Result control(struct api_req *r, enum plan_ro_ctl action)
{
    const char *id = api_path_id(r, "rollout");
    struct control_in in = {NULL};
    if (id == NULL || parse_control(r, &in) != 0)
        return MHD_YES;
    struct control_arg a = {.r = r, .id = id, .action = action, .reason = in.reason};
    snprintf(a.audit_action, sizeof a.audit_action, "rollout.%s", plan_ro_ctl_names[action]);
    enum db_status s = svc_rollups_run_tx(control_fn, &a); /* the answer's cost view */
    return outcome_reply(r, s, MHD_HTTP_OK, NULL, &a.out);
}

enum MHD_Result api_rollouts_pause(struct api_req *r)
{
    return control(r, PLAN_RO_CTL_PAUSE);
}

enum MHD_Result api_rollouts_resume(struct api_req *r)
{
    return control(r, PLAN_RO_CTL_RESUME);
}

enum MHD_Result api_rollouts_abort(struct api_req *r)
{
    return control(r, PLAN_RO_CTL_ABORT);
}
