/* projects.c — /v1/projects (platform admins create, change and delete them; a member sees
 * its own), /v1/projects/{id}/members (platform admins and the project's admins), and
 * /v1/me (who the caller is and what it may do where). A project is named by its id or
 * its name in the path; one the caller may not see answers 404, as one that does not
 * exist. Every change is audited with its before and after. */
#include "api/projects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/auth.h"
#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/projects.h"
#include "planner/scope.h"
#include "service/audit.h"
#include "service/grants.h"

static int valid_name(const char *s)
{
    return auth_project_name_ok(s);
}
static int valid_model_key(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

static const char *const exhausted_values[] = {"notify", "refuse_new", "stop_idle", NULL};

struct project_in {
    const char *name, *description, *on_exhausted;
    double monthly;
    int has_monthly, has_budget;
    const json_t *thresholds, *gpus, *budget, *quotas, *monthly_raw;
};
#define TO(m) SPEC_TO(struct project_in, m)
static const struct spec_field quota_count[] = {
    {"", SPEC_INTEGER, 0, 0, 1000000, NULL, NULL, NULL, NULL, SPEC_NONE},
};
static const struct spec_field quotas_spec[] = {
    {"gpus", SPEC_MAP, 0, 0, 64, valid_model_key, "GPU model keys of the catalog", NULL,
     quota_count, TO(gpus)},
    SPEC_END,
};
static const struct spec_field threshold_item[] = {
    {"", SPEC_INTEGER, 0, 1, 1000, NULL, NULL, NULL, NULL, SPEC_NONE},
};
static const struct spec_field budget_spec[] = {
    {"monthly", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e12, NULL, NULL, NULL, NULL,
     SPEC_TO_SEEN(struct project_in, monthly, has_monthly)},
    {"thresholds_pct", SPEC_ARRAY, 0, 1, 10, NULL, NULL, NULL, threshold_item, TO(thresholds)},
    {"on_exhausted", SPEC_ENUM, 0, 0, 0, NULL, NULL, exhausted_values, NULL, TO(on_exhausted)},
    SPEC_END,
};
#define SETTINGS                                                                     \
    {"description",                                                                  \
     SPEC_STRING,                                                                    \
     0,                                                                              \
     0,                                                                              \
     500,                                                                            \
     spec_printable,                                                                 \
     "text without control characters",                                              \
     NULL,                                                                           \
     NULL,                                                                           \
     TO(description)},                                                               \
        {"quotas", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, quotas_spec, TO(quotas)}, \
    {                                                                                \
        "budget", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, budget_spec, TO(budget)    \
    }
static const struct spec_field create_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 63, valid_name,
     "1-63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", NULL, NULL, TO(name)},
    SETTINGS,
    SPEC_END,
};
static const struct spec_field patch_spec[] = {
    SETTINGS,
    SPEC_END,
};
#undef TO

/* The stored forms of what the body gave (NULL: keep). Strings owned by the struct. */
struct project_write {
    struct db_project_in in;
    char monthly[40], thresholds[128];
    char *quotas;
};

/* Thresholds as an int[] literal, sorted and unique; -1 when a value repeats. */
static int thresholds_text(const json_t *a, char *out, size_t n)
{
    int v[10], k = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(a, i, x)
    {
        int t = (int)json_integer_value(x), j = k;
        while (j > 0 && v[j - 1] > t) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = t;
        k++;
    }
    size_t used = (size_t)snprintf(out, n, "{");
    for (int j = 0; j < k; j++) {
        if (j > 0 && v[j] == v[j - 1])
            return -1;
        used += (size_t)snprintf(out + used, n - used, "%s%d", j ? "," : "", v[j]);
    }
    snprintf(out + used, n - used, "}");
    return 0;
}

/* in → w; 0, or -1 after replying 400. */
static int project_write(struct api_req *r, const struct project_in *in, struct project_write *w)
{
    memset(w, 0, sizeof *w);
    w->in.name = in->name;
    w->in.description = in->description;
    w->in.on_exhausted = in->on_exhausted;
    w->in.created_by = r->principal.sub;
    if (in->has_monthly) {
        snprintf(w->monthly, sizeof w->monthly, "%.2f", in->monthly);
        w->in.budget_monthly = w->monthly;
    } else if (in->budget != NULL && json_is_null(json_object_get(in->budget, "monthly"))) {
        w->in.budget_monthly = ""; /* budget.monthly: null removes the budget */
    }
    if (in->thresholds != NULL) {
        if (thresholds_text(in->thresholds, w->thresholds, sizeof w->thresholds) != 0) {
            api_reply_problem(r, API_ERR_INVALID_FIELD, "budget.thresholds_pct",
                              "each threshold may be given once");
            return -1;
        }
        w->in.thresholds = w->thresholds;
    }
    if (in->quotas != NULL) {
        w->quotas = json_dumps(in->gpus ? in->gpus : json_object(), JSON_COMPACT);
        if (w->quotas == NULL) {
            api_reply_db(r, DB_HARD_ERROR);
            return -1;
        }
        w->in.quotas = w->quotas;
    }
    return 0;
}

static int platform_admin(struct api_req *r)
{
    if (r->actor.platform_admin)
        return 1;
    api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL,
                      "only a platform admin may create, change or delete projects");
    return 0;
}

/* An audit row of a project change, with its before and after (JSON texts or NULL). */
static enum db_status audit_change(struct db_conn *c, struct api_req *r, const char *action,
                                   const char *type, const char *id, const char *project_id,
                                   int status, const char *before, const char *after)
{
    struct actor who;
    api_actor(r, &who);
    return svc_audit_change(c, &who, action, type, id, project_id, status, before, after);
}

/* ---- create ---- */

struct create_arg {
    struct api_req *r;
    struct project_write w;
    char *doc;
    char id[37];
    int taken, unknown_model;
};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    a->taken = a->unknown_model = 0;
    enum db_status s = db_project_insert(c, &a->w.in, &a->doc, a->id);
    a->taken = s == DB_HARD_ERROR && db_conn_unique_violation(c);
    a->unknown_model = s == DB_HARD_ERROR && db_conn_fk_violation(c);
    if (s <= 0)
        return s;
    return audit_change(c, a->r, "project.create", "project", a->id, a->id, 201, NULL, a->doc);
}

enum MHD_Result api_projects_create(struct api_req *r)
{
    struct project_in in = {0};
    if (!platform_admin(r) || api_spec_parse(r, r->json, create_spec, &in) != 0)
        return MHD_YES;
    struct create_arg a = {.r = r};
    if (project_write(r, &in, &a.w) != 0)
        return MHD_YES;
    enum db_status s = api_run_tx_doc(create_fn, &a, &a.doc);
    free(a.w.quotas);
    if (a.taken)
        return api_reply_problem(r, API_ERR_ALREADY_EXISTS, "name",
                                 "a project with this name already exists");
    if (a.unknown_model)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "quotas.gpus",
                                 "each quota names a GPU model of the catalog");
    if (s < 0)
        return api_reply_db(r, s);
    svc_grants_invalidate();
    char location[96];
    snprintf(location, sizeof location, "/v1/projects/%s", a.id);
    return api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
}

/* ---- read ---- */

static enum db_status fetch_project(struct db_conn *c, const char *ref, const char *scope,
                                    char **doc)
{
    return db_project_get(c, ref, scope, doc);
}

/* The {id} parameter: a project's id or name (printable, at most 64 bytes). */
static const char *project_ref(struct api_req *r)
{
    const char *ref = api_param(r, 0);
    if (ref == NULL || strlen(ref) == 0 || strlen(ref) > 64 || !spec_printable(ref)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no project has this id or name");
        return NULL;
    }
    return ref;
}

enum MHD_Result api_projects_get(struct api_req *r)
{
    const char *ref = project_ref(r);
    return ref ? api_get_document_in(r, ref, "project", fetch_project) : MHD_YES;
}

static int valid_prefix(const char *v)
{
    return strlen(v) <= 63;
}
static const struct list_filter project_filters[] = {
    {"name_prefix", valid_prefix, "at most 63 characters"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_project_filter f = {q->scope, q->values[0], q->after, q->limit + 1};
    return db_project_list(c, &f, page);
}

static const struct list_def project_list = {"project", project_filters, 1, api_valid_seq, NULL,
                                             NULL,      list_page};

enum MHD_Result api_projects_list(struct api_req *r)
{
    return api_list_serve(r, &project_list);
}

/* ---- change / delete ---- */

struct change_arg {
    struct api_req *r;
    char id[37];
    struct project_write w;
    char *doc;
    int unknown_model, in_use;
};

static enum db_status patch_fn(struct db_conn *c, void *arg)
{
    struct change_arg *a = arg;
    a->unknown_model = 0;
    char *before = NULL;
    enum db_status s = db_project_settings(c, a->id, &before);
    if (s <= 0)
        return s;
    s = db_project_update(c, a->id, &a->w.in, &a->doc);
    a->unknown_model = s == DB_HARD_ERROR && db_conn_fk_violation(c);
    char *after = NULL;
    if (s > 0)
        s = db_project_settings(c, a->id, &after);
    if (s > 0)
        s = audit_change(c, a->r, "project.update", "project", a->id, a->id, 200, before, after);
    free(before);
    free(after);
    return s;
}

/* The path's project, which the caller must see (a platform admin sees all): 0 with id,
 * or -1 after replying 404. */
static int path_project(struct api_req *r, unsigned roles, char id[37])
{
    const char *ref = project_ref(r);
    char name[64];
    if (ref == NULL)
        return -1;
    int rc = svc_project_lookup(ref, id, name);
    if (rc < 0) {
        api_reply_db(r, DB_UNAVAILABLE);
        return -1;
    }
    enum plan_scope_answer ans = rc == 0 ? plan_scope(&r->actor, id, roles) : PLAN_SCOPE_HIDDEN;
    if (ans == PLAN_SCOPE_OK)
        return 0;
    if (ans == PLAN_SCOPE_FORBIDDEN)
        api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL,
                          "your role in this project may not %s %s", r->method, r->path);
    else
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no project has this id or name");
    return -1;
}

enum MHD_Result api_projects_patch(struct api_req *r)
{
    struct project_in in = {0};
    struct change_arg a = {.r = r};
    if (path_project(r, ROLE_ADMIN, a.id) != 0 || !platform_admin(r) ||
        api_spec_parse(r, r->json, patch_spec, &in) != 0 || project_write(r, &in, &a.w) != 0)
        return MHD_YES;
    enum db_status s = api_run_tx_doc(patch_fn, &a, &a.doc);
    free(a.w.quotas);
    if (a.unknown_model)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "quotas.gpus",
                                 "each quota names a GPU model of the catalog");
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no project has this id or name");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

static enum db_status delete_fn(struct db_conn *c, void *arg)
{
    struct change_arg *a = arg;
    char *before = NULL;
    enum db_status s = db_project_settings(c, a->id, &before);
    if (s > 0)
        s = db_project_delete(c, a->id);
    a->in_use = s == DB_HARD_ERROR && db_conn_fk_violation(c);
    if (s > 0)
        s = audit_change(c, a->r, "project.delete", "project", a->id, a->id, 204, before, NULL);
    free(before);
    return s;
}

enum MHD_Result api_projects_delete(struct api_req *r)
{
    struct change_arg a = {.r = r};
    if (path_project(r, ROLE_ADMIN, a.id) != 0 || !platform_admin(r))
        return MHD_YES;
    if (!strcmp(a.id, DB_DEFAULT_PROJECT_ID))
        return api_reply_problem(r, API_ERR_PROJECT_IN_USE, NULL,
                                 "the project named default cannot be deleted: tokens without "
                                 "a project act there");
    enum db_status s = db_run_tx(delete_fn, &a);
    if (a.in_use)
        return api_reply_problem(r, API_ERR_PROJECT_IN_USE, NULL,
                                 "the project still owns pools, credentials, briefs, stacks or "
                                 "webhooks; delete or move them first");
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no project has this id or name");
    svc_grants_invalidate();
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

/* ---- members ---- */

static int valid_subject(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e)
            return 0;
    return 1;
}

enum MHD_Result api_project_members_list(struct api_req *r)
{
    char id[37];
    if (path_project(r, ROLE_ADMIN, id) != 0)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, "member", NULL, 0, &q) != 0)
        return MHD_YES;
    struct db_page page = {NULL};
    enum db_status s = DB_UNAVAILABLE;
    struct db_conn *c = db_acquire(&s);
    if (c != NULL) {
        s = db_member_list(c, id, q.after, q.limit + 1, &page);
        db_release(c);
    }
    long limit = q.limit;
    api_list_query_free(&q);
    if (s < 0) {
        db_page_clear(&page);
        return api_reply_db(r, s);
    }
    enum MHD_Result ret = api_page_reply(r, &page, limit, "member");
    db_page_clear(&page);
    return ret;
}

struct member_arg {
    struct api_req *r;
    char id[37];
    const char *subject, *role;
    char before[16];
    char *doc;
};

static enum db_status member_put_fn(struct db_conn *c, void *arg)
{
    struct member_arg *a = arg;
    enum db_status s =
        db_member_put(c, a->id, a->subject, a->role, a->r->principal.sub, a->before, &a->doc);
    if (s <= 0)
        return s;
    char before[40], after[40];
    snprintf(before, sizeof before, "{\"role\":\"%s\"}", a->before);
    snprintf(after, sizeof after, "{\"role\":\"%s\"}", a->role);
    return audit_change(c, a->r, "project.member", "project", a->id, a->id, 200,
                        a->before[0] ? before : NULL, after);
}

static const char *const role_values[] = {"viewer", "operator", "admin", "reporter", NULL};
struct member_in {
    const char *role;
};
static const struct spec_field member_spec[] = {
    {"role", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, role_values, NULL,
     SPEC_TO(struct member_in, role)},
    SPEC_END,
};

/* The {subject} parameter (1-128 printable ASCII characters). */
static const char *member_subject(struct api_req *r)
{
    const char *sub = api_param(r, 1);
    if (sub == NULL || !valid_subject(sub)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL,
                          "a subject is 1-128 printable ASCII characters without spaces");
        return NULL;
    }
    return sub;
}

enum MHD_Result api_project_members_put(struct api_req *r)
{
    struct member_in in = {NULL};
    struct member_arg a = {.r = r};
    if (path_project(r, ROLE_ADMIN, a.id) != 0 || (a.subject = member_subject(r)) == NULL ||
        api_spec_parse(r, r->json, member_spec, &in) != 0)
        return MHD_YES;
    a.role = in.role;
    enum db_status s = api_run_tx_doc(member_put_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_db(r, s);
    svc_grants_invalidate();
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

static enum db_status member_delete_fn(struct db_conn *c, void *arg)
{
    struct member_arg *a = arg;
    enum db_status s = db_member_delete(c, a->id, a->subject, a->before);
    if (s <= 0)
        return s;
    char before[40];
    snprintf(before, sizeof before, "{\"role\":\"%s\"}", a->before);
    return audit_change(c, a->r, "project.member", "project", a->id, a->id, 204, before, NULL);
}

enum MHD_Result api_project_members_delete(struct api_req *r)
{
    struct member_arg a = {.r = r};
    if (path_project(r, ROLE_ADMIN, a.id) != 0 || (a.subject = member_subject(r)) == NULL)
        return MHD_YES;
    enum db_status s = db_run_tx(member_delete_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL,
                                 "this subject is not a member of the project");
    svc_grants_invalidate();
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

/* ---- who am I ---- */

static json_t *may(unsigned role)
{
    json_t *a = json_array();
    if (role & API_READ_ROLES)
        json_array_append_new(a, json_string("read"));
    if (role & API_WRITE_ROLES)
        json_array_append_new(a, json_string("write"));
    if (role & ROLE_ADMIN)
        json_array_append_new(a, json_string("administer"));
    if (role & ROLE_REPORTER)
        json_array_append_new(a, json_string("report"));
    return a;
}

static const char *highest(unsigned role)
{
    return role & ROLE_ADMIN      ? "admin"
           : role & ROLE_OPERATOR ? "operator"
           : role & ROLE_VIEWER   ? "viewer"
                                  : "reporter";
}

enum MHD_Result api_me(struct api_req *r)
{
    json_t *projects = json_array();
    for (int i = 0; i < r->ngrants; i++) {
        char name[64];
        svc_project_name(r->grants[i].project_id, name);
        json_array_append_new(
            projects, json_pack("{s:s, s:s, s:s, s:o}", "id", r->grants[i].project_id, "name", name,
                                "role", highest(r->grants[i].role), "may", may(r->grants[i].role)));
    }
    json_t *me =
        json_pack("{s:s, s:s, s:b, s:o, s:o}", "sub", r->principal.sub, "kind",
                  r->principal.from_idp ? "user" : "token", "platform_admin",
                  r->actor.platform_admin, "projects", projects, "may",
                  r->actor.platform_admin ? json_pack("[s,s,s]", "read", "write", "administer")
                                          : json_array());
    return me ? api_reply_json(r, MHD_HTTP_OK, me, NULL)
              : api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
}
