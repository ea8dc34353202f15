/* recommend.c — GET /v1/recommendations?action=&pool_id=&brief_id=&at=&project=: the
 * recommendations of service/recommend.c, filtered. Not paginated: the whole list is
 * returned with next_cursor null. The rules run over the whole fleet; a caller sees the
 * recommendations planner/recommend.h's plan_rec_visible lets it see (a platform admin:
 * all, a reuse lending a host to another project's brief included; anyone else: those
 * whose every target lies in one project it may read). */
#include "api/recommend.h"

#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "api/scope.h"
#include "common/util.h"
#include "planner/recommend.h"
#include "service/recommend.h"

static int valid_action(const char *v)
{
    return util_lookup(plan_rec_actions, v) >= 0;
}

static const struct list_filter rec_filters[] = {
    {"action", valid_action, "one of stop, scale_up, scale_down, reuse, investigate, rightsize"},
    {"pool_id", api_valid_uuid, "a UUID"},
    {"brief_id", api_valid_uuid, "a UUID"},
    {"at", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"project", NULL, "a project name or id"},
};

/* Whether r may see item, and it concerns project only (NULL: any): its targets' projects
 * (hosts, else pool; brief) as plan_rec_visible takes them. -1 when out of memory. */
static int in_scope(struct api_req *r, const json_t *item, const struct svc_recommendations *k,
                    const char *only)
{
    const json_t *t = json_object_get(item, "target");
    const json_t *hosts = json_object_get(t, "host_ids");
    const char *pool = json_string_value(json_object_get(t, "pool_id"));
    const char *brief = json_string_value(json_object_get(t, "brief_id"));
    /* A no_usage_data entry names its host and pool itself. */
    const char *host = json_string_value(json_object_get(item, "host_id"));
    size_t n = 0, cap = json_array_size(hosts) + 3;
    const char **projects = malloc(cap * sizeof *projects);
    if (projects == NULL)
        return -1;
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h) projects[n++] =
        svc_recommendations_project(k, json_string_value(h), NULL, NULL);
    if (host != NULL)
        projects[n++] = svc_recommendations_project(k, host, NULL, NULL);
    else if (n == 0 && pool != NULL)
        projects[n++] = svc_recommendations_project(k, NULL, pool, NULL);
    if (brief != NULL)
        projects[n++] = svc_recommendations_project(k, NULL, NULL, brief);
    int ok = plan_rec_visible(&r->actor, projects, n);
    if (ok && only != NULL) {
        ok = 0;
        for (size_t j = 0; j < n; j++)
            ok |= projects[j] != NULL && strcmp(projects[j], only) == 0;
    }
    free(projects);
    return ok;
}

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
    if (api_list_parse(r, NULL, rec_filters, 5, &q) != 0)
        return MHD_YES;
    char only[37];
    if (q.values[4] != NULL && api_filter_project(r, q.values[4], only) != 0)
        return MHD_YES;
    const char *project = q.values[4] != NULL ? only : NULL;
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
    int oom = 0;
    json_array_foreach(all, i, it)
    {
        int in = keep(it, &q, k) ? in_scope(r, it, k, project) : 0;
        oom |= in < 0;
        if (in > 0)
            json_array_append(items, it);
    }
    json_decref(all);
    json_t *nu = json_array();
    json_array_foreach(no_usage, i, it)
    {
        if (q.values[2] != NULL || (q.values[0] != NULL && strcmp(q.values[0], "stop") != 0))
            continue;
        if (q.values[1] && strcmp(json_string_value(json_object_get(it, "pool_id")), q.values[1]))
            continue;
        int in = in_scope(r, it, k, project);
        oom |= in < 0;
        if (in > 0)
            json_array_append(nu, it);
    }
    if (oom) {
        json_decref(nu);
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
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
