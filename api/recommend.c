/* recommend.c — GET /v1/recommendations?action=&pool_id=&brief_id=&at=: the
 * recommendations of service/recommend.c, filtered. Not paginated: the whole list is
 * returned with next_cursor null. */
#include "api/recommend.h"

#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "common/util.h"
#include "planner/recommend.h"
#include "service/recommend.h"

static int valid_action(const char *v)
{
    return util_lookup(plan_rec_actions, v) >= 0;
}

static const struct list_filter rec_filters[] = {
    {"action", valid_action, "one of stop, scale_up, scale_down, reuse, investigate"},
    {"pool_id", api_valid_uuid, "a UUID"},
    {"brief_id", api_valid_uuid, "a UUID"},
    {"at", api_valid_rfc3339, "an RFC 3339 date-time"},
};

/* Keeps the items matching the filters. */
static int keep(const json_t *item, const struct list_query *q, const struct svc_recommendations *k)
{
    if (q->values[0] &&
        strcmp(json_string_value(json_object_get(item, "action")), q->values[0]) != 0)
        return 0;
    const json_t *t = json_object_get(item, "target");
    if (q->values[2]) {
        const char *b = json_string_value(json_object_get(t, "brief_id"));
        if (b == NULL || strcmp(b, q->values[2]) != 0)
            return 0;
    }
    if (q->values[1]) {
        const char *p = json_string_value(json_object_get(t, "pool_id"));
        if (p != NULL)
            return strcmp(p, q->values[1]) == 0;
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(t, "host_ids"), i, h)
        {
            const char *pool = svc_recommendations_host_pool(k, json_string_value(h));
            if (pool != NULL && strcmp(pool, q->values[1]) == 0)
                return 1;
        }
        return 0;
    }
    return 1;
}

enum MHD_Result api_recommendations(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, NULL, rec_filters, 4, &q) != 0)
        return MHD_YES;
    int64_t at_us = util_now_us();
    if (q.values[3] != NULL)
        util_parse_rfc3339(q.values[3], &at_us);
    json_t *items = json_array(), *no_usage = json_array(), *all = json_array();
    enum db_status s = DB_HARD_ERROR;
    struct svc_recommendations *k =
        items && no_usage && all ? svc_recommend(at_us, all, no_usage, &s) : NULL;
    enum MHD_Result ret;
    if (k == NULL) {
        ret = s == DB_HARD_ERROR ? api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL,
                                                     "the recommendations could not be computed")
                                 : api_reply_db(r, s);
        json_decref(all);
        goto out;
    }
    size_t i;
    json_t *it;
    json_array_foreach(all, i, it) if (keep(it, &q, k)) json_array_append(items, it);
    json_decref(all);
    json_t *nu = json_array();
    json_array_foreach(no_usage, i, it)
    {
        if (q.values[2] != NULL || (q.values[0] != NULL && strcmp(q.values[0], "stop") != 0))
            continue;
        if (q.values[1] && strcmp(json_string_value(json_object_get(it, "pool_id")), q.values[1]))
            continue;
        json_array_append(nu, it);
    }
    json_t *body = json_pack("{s:s,s:O,s:n,s:o}", "at", svc_recommendations_at(k), "items", items,
                             "next_cursor", "no_usage_data", nu);
    ret = api_reply_json(r, MHD_HTTP_OK, body, NULL);
out:
    json_decref(items);
    json_decref(no_usage);
    svc_recommendations_free(k);
    api_list_query_free(&q);
    return ret;
}
