/* audit.c — reading the audit trail. Writing happens in each mutating handler's
 * transaction through api_audit(). */
#include "api/audit.h"

#include <string.h>

#include "api/list.h"
#include "db/audit.h"

static const struct list_filter audit_filters[] = {
    {"principal", NULL, NULL},
    {"action", NULL, NULL},
    {"resource_type", NULL, NULL},
    {"resource_id", NULL, NULL},
    {"since", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"until", api_valid_rfc3339, "an RFC 3339 date-time"},
};
#define NFILTERS (int)(sizeof audit_filters / sizeof audit_filters[0])

struct list_arg {
    struct db_audit_filter f;
    json_t *items;
};

static enum db_status list_fn(struct db_conn *c, void *arg)
{
    struct list_arg *a = arg;
    return db_audit_list(c, &a->f, a->items);
}

static int valid_seq(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

enum MHD_Result api_audit_list(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, "audit", audit_filters, NFILTERS, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct list_arg a = {
        .f = {q.values[0], q.values[1], q.values[2], q.values[3], q.values[4], q.values[5],
              q.after, q.limit + 1},
        .items = json_array(),
    };
    enum db_status s = db_run(list_fn, &a);
    api_list_query_free(&q);
    if (s < 0) {
        json_decref(a.items);
        return api_reply_db(r, s);
    }
    return api_list_reply(r, a.items, a.f.limit - 1, "audit", "_key");
}

struct get_arg {
    const char *id;
    json_t *out;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return db_audit_get(c, a->id, &a->out);
}

enum MHD_Result api_audit_get(struct api_req *r)
{
    struct get_arg a = {api_param(r, 0), NULL};
    if (!api_valid_uuid(a.id))
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no audit event has this id");
    enum db_status s = db_run(get_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.out == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no audit event has this id");
    return api_reply_json(r, MHD_HTTP_OK, a.out, NULL);
}
