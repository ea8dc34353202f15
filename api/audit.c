/* audit.c — reading the audit trail. Writing happens in each mutating handler's
 * transaction through api_audit(). */
#include "api/audit.h"

#include <string.h>

#include "api/list.h"
#include "api/scope.h"
#include "db/audit.h"

/* The audit trail is an admin's: a project's admins read its rows, a platform admin reads
 * every row (the platform's own too). */

static const struct list_filter audit_filters[] = {
    {"principal", NULL, NULL},
    {"action", NULL, NULL},
    {"resource_type", NULL, NULL},
    {"resource_id", NULL, NULL},
    {"since", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"until", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"project", NULL, "a project name or id"},
};
#define NFILTERS (int)(sizeof audit_filters / sizeof audit_filters[0])

static enum db_status list_page(struct db_conn *c, const struct list_query *q, json_t *items)
{
    const char *const *v = q->values;
    struct db_audit_filter f = {v[0], v[1],     v[2],         v[3],     v[4],
                                v[5], q->after, q->limit + 1, q->scope, v[6]};
    return db_audit_list(c, &f, items);
}

static const struct list_def audit_list = {"audit", audit_filters, NFILTERS, api_valid_seq,
                                           "_key",  list_page,     NULL};

enum MHD_Result api_audit_list(struct api_req *r)
{
    return api_list_serve(r, &audit_list); /* the route's scope: admin */
}

struct get_arg {
    const char *id, *scope;
    json_t *out;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return db_audit_get(c, a->id, a->scope, &a->out);
}

enum MHD_Result api_audit_get(struct api_req *r)
{
    struct get_arg a = {api_param(r, 0), api_scope(r, ROLE_ADMIN), NULL};
    if (!api_valid_uuid(a.id))
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no audit event has this id");
    enum db_status s = db_run(get_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.out == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no audit event has this id");
    return api_reply_json(r, MHD_HTTP_OK, a.out, NULL);
}
