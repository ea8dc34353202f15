/* placement.c — GET /v1/briefs/{id}/placement?from=&to=: the brief (scoped as a brief
 * read), then service/placement.h reads and prices every option in one transaction. */
#include "api/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "api/resource.h"
#include "common/util.h"
#include "db/briefs.h"
#include "service/placement.h"
#include "service/rollups.h"

#define PLACE_MAX_WINDOW_S (366 * 86400.0)

static const struct list_filter place_params[] = {
    {"from", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"to", api_valid_rfc3339, "an RFC 3339 date-time"},
};

static enum db_status fetch_brief(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    return db_brief_get(c, id, scope, 0, doc);
}

struct place_arg {
    const json_t *brief;
    const char *from, *to;
    json_t *doc;
};

static enum db_status place_fn(struct db_conn *c, void *arg)
{
    struct place_arg *a = arg;
    enum db_status s;
    json_decref(a->doc);
    a->doc = svc_placement(c, a->brief, a->from, a->to, &s);
    return s;
}

enum MHD_Result api_briefs_placement(struct api_req *r)
{
    const char *id = api_path_id(r, "brief");
    struct list_query q;
    if (id == NULL || api_list_parse(r, NULL, place_params, 2, &q) != 0)
        return MHD_YES;
    int64_t from_us, to_us = util_now_us();
    if (q.values[1] != NULL)
        util_parse_rfc3339(q.values[1], &to_us);
    from_us = to_us - (int64_t)(SVC_PLACE_DEFAULT_WINDOW_S * 1e6);
    if (q.values[0] != NULL)
        util_parse_rfc3339(q.values[0], &from_us);
    api_list_query_free(&q);
    if (to_us <= from_us)
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "to", "to must be after from");
    if (to_us - from_us > (int64_t)(PLACE_MAX_WINDOW_S * 1e6))
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "to",
                                 "the window from..to must be at most 366 days");
    char *text = api_fetch_document_in(r, id, "brief", fetch_brief);
    if (text == NULL)
        return MHD_YES;
    json_t *brief = json_loads(text, 0, NULL);
    free(text);
    if (brief == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "unreadable brief");
    char from[40], to[40];
    util_rfc3339(from_us, from, sizeof from);
    util_rfc3339(to_us, to, sizeof to);
    struct place_arg a = {brief, from, to, NULL};
    enum db_status s = svc_rollups_run_tx(place_fn, &a);
    json_decref(brief);
    if (s < 0 || a.doc == NULL) {
        json_decref(a.doc);
        return api_reply_db(r, s < 0 ? s : DB_HARD_ERROR);
    }
    return api_reply_json(r, MHD_HTTP_OK, a.doc, NULL);
}
