/* scope.c — see scope.h. */
#include "api/scope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/routes.h"
#include "db/projects.h"
#include "planner/scope.h"
#include "service/audit.h"
#include "service/grants.h"

/* r->scope_text holds up to four lists, each "ROLES|{…}". */
const char *api_scope(struct api_req *r, unsigned roles)
{
    if (r->actor.platform_admin || r->actor.kind == ACTOR_SYSTEM)
        return NULL;
    size_t nslots = sizeof r->scope_text / sizeof r->scope_text[0];
    char tag[16];
    int tl = snprintf(tag, sizeof tag, "%u|", roles);
    for (size_t i = 0; i < nslots && r->scope_text[i] != NULL; i++)
        if (!strncmp(r->scope_text[i], tag, (size_t)tl))
            return r->scope_text[i] + tl;
    struct actor who = r->actor;
    struct actor_grant keep[API_MAX_GRANTS];
    int n = 0;
    for (int i = 0; i < who.ngrants; i++)
        if (who.grants[i].role & roles)
            keep[n++] = who.grants[i];
    size_t cap = (size_t)tl + 3 + (size_t)n * 37;
    char *text = malloc(cap);
    if (text == NULL)
        return "{}"; /* out of memory: nothing is in scope (fail closed) */
    size_t used = (size_t)snprintf(text, cap, "%s{", tag);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, cap - used, "%s%s", i ? "," : "", keep[i].project_id);
    snprintf(text + used, cap - used, "}");
    size_t i = 0;
    while (i < nslots && r->scope_text[i] != NULL)
        i++;
    if (i == nslots) { /* every slot taken: replace the oldest */
        free(r->scope_text[0]);
        memmove(r->scope_text, r->scope_text + 1, (nslots - 1) * sizeof r->scope_text[0]);
        i = nslots - 1;
    }
    r->scope_text[i] = text;
    return text + tl;
}

const char *api_scope_read(struct api_req *r)
{
    return api_scope(r, API_READ_ROLES);
}

const char *api_scope_route(struct api_req *r)
{
    return api_scope(r, api_route_roles(r));
}

unsigned api_route_roles(const struct api_req *r)
{
    const struct api_route *route = r->route;
    return route ? route->roles : API_READ_ROLES;
}

void api_scope_free(struct api_req *r)
{
    for (size_t i = 0; i < sizeof r->scope_text / sizeof r->scope_text[0]; i++) {
        free(r->scope_text[i]);
        r->scope_text[i] = NULL;
    }
}

/* The one project where the actor holds one of roles, or -1 (none, or several). */
static int only_project(const struct actor *who, unsigned roles)
{
    int found = -1;
    for (int i = 0; i < who->ngrants; i++) {
        if (!(who->grants[i].role & roles))
            continue;
        if (found >= 0)
            return -1;
        found = i;
    }
    return found;
}

int api_create_project(struct api_req *r, unsigned roles, char id[37], char name[64])
{
    char nm[64];
    const json_t *v = json_object_get(r->json, "project");
    const char *ref = json_string_value(v);
    if (v != NULL && (ref == NULL || strlen(ref) == 0 || strlen(ref) > 64)) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "project",
                          "project must be a project's name or id");
        return -1;
    }
    if (ref == NULL) {
        int k = only_project(&r->actor, roles);
        if (r->actor.platform_admin)
            ref = "default";
        else if (k >= 0)
            ref = r->actor.grants[k].project_id;
        else {
            api_reply_problem(r, API_ERR_MISSING_FIELD, "project",
                              "name the project (its name or id): you hold this role in %s",
                              r->actor.ngrants ? "several projects" : "no project");
            return -1;
        }
    }
    int rc = svc_project_lookup(ref, id, name ? name : nm);
    if (rc < 0) {
        api_reply_db(r, DB_UNAVAILABLE);
        return -1;
    }
    enum plan_scope_answer ans = rc == 0 ? plan_scope(&r->actor, id, roles) : PLAN_SCOPE_HIDDEN;
    if (ans == PLAN_SCOPE_HIDDEN) {
        api_reply_problem(r, API_ERR_NOT_FOUND, "project", "no project has this name or id");
        return -1;
    }
    if (ans == PLAN_SCOPE_FORBIDDEN) {
        api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "project",
                          "your role in this project may not %s %s", r->method, r->path);
        return -1;
    }
    if (v != NULL)
        json_object_del(r->json, "project");
    return 0;
}

int api_filter_project(struct api_req *r, const char *value, char id[37])
{
    char name[64];
    int rc = svc_project_lookup(value, id, name);
    if (rc < 0) {
        api_reply_db(r, DB_UNAVAILABLE);
        return -1;
    }
    if (rc != 0 || plan_scope(&r->actor, id, API_READ_ROLES) != PLAN_SCOPE_OK) {
        api_reply_problem(r, API_ERR_INVALID_PARAMETER, "project",
                          "no project you may see has this name or id");
        return -1;
    }
    return 0;
}

struct refuse_arg {
    struct api_req *r;
    const char *type, *id;
    char project_id[37];
    enum plan_scope_answer ans;
};

static enum db_status refuse_fn(struct db_conn *c, void *arg)
{
    struct refuse_arg *a = arg;
    a->ans = PLAN_SCOPE_HIDDEN;
    enum db_status s = db_resource_project(c, a->type, a->id, a->project_id);
    if (s <= 0)
        return s;
    a->ans = plan_scope(&a->r->actor, a->project_id, api_route_roles(a->r));
    if (a->ans == PLAN_SCOPE_OK) /* changed meanwhile: answered as absent, not audited */
        return s;
    char action[64];
    snprintf(action, sizeof action, "%s.denied", a->type);
    struct actor who;
    api_actor(a->r, &who);
    return svc_audit_row(c, &who, action, a->type, a->id,
                         a->ans == PLAN_SCOPE_FORBIDDEN ? MHD_HTTP_FORBIDDEN : MHD_HTTP_NOT_FOUND,
                         NULL, a->project_id, NULL, NULL);
}

enum MHD_Result api_scope_refuse(struct api_req *r, const char *type, const char *id,
                                 const char *what)
{
    struct refuse_arg a = {.r = r, .type = type, .id = id, .ans = PLAN_SCOPE_HIDDEN};
    /* Best effort, like the door's refusals: when PostgreSQL cannot say whose the object
     * is, the answer is 404, which leaks nothing. */
    if (db_run_tx(refuse_fn, &a) >= 0 && a.ans == PLAN_SCOPE_FORBIDDEN)
        return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL,
                                 "your role in this %s's project may not %s %s", what, r->method,
                                 r->path);
    return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", what);
}

struct only_arg {
    struct api_req *r;
    const char *type, *id, *project_id;
};

static enum db_status only_fn(struct db_conn *c, void *arg)
{
    struct only_arg *a = arg;
    char action[64];
    snprintf(action, sizeof action, "%s.denied", a->type);
    struct actor who;
    api_actor(a->r, &who);
    return svc_audit_row(c, &who, action, a->type, a->id, MHD_HTTP_FORBIDDEN, NULL, a->project_id,
                         NULL, NULL);
}

int api_platform_admin_only(struct api_req *r, const char *type, const char *id,
                            const char *project_id, const char *detail)
{
    if (r->actor.platform_admin)
        return 1;
    struct only_arg a = {r, type, id, project_id};
    db_run_tx(only_fn, &a); /* best effort, like the door's refusals */
    api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL, "%s", detail);
    return 0;
}

struct share_in {
    int shared;
};
static const struct spec_field share_spec[] = {
    {"shared", SPEC_BOOL, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, NULL,
     SPEC_TO(struct share_in, shared)},
    SPEC_END,
};

int api_parse_shared(struct api_req *r, int *shared)
{
    struct share_in in = {0};
    if (api_spec_parse(r, r->json, share_spec, &in) != 0)
        return -1;
    *shared = in.shared;
    return 0;
}

const char *api_shared_json(int shared)
{
    return shared ? "{\"shared\":true}" : "{\"shared\":false}";
}
