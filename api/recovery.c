/* recovery.c — see recovery.h. The recoveries are the workers' (service/recovery.c); the
 * API only reads them. */
#include "api/recovery.h"

#include <string.h>

#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/recovery.h"

static int valid_state(const char *v)
{
    return !strcmp(v, "running") || !strcmp(v, "succeeded") || !strcmp(v, "failed") ||
           !strcmp(v, "cancelled");
}

static const struct list_filter filters[] = {
    {"state", valid_state, "running, succeeded, failed or cancelled"},
};

enum MHD_Result api_hosts_recoveries(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, "recovery", filters, 1, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !api_valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct db_page page = {NULL};
    int found = 0;
    struct db_conn *c;
    enum db_status s;
    c = db_acquire(&s);
    if (c != NULL) {
        s = db_recovery_list(c, id, api_scope_read(r), q.values[0], q.after, q.limit + 1, &page,
                             &found);
        db_release(c);
    }
    long limit = q.limit;
    api_list_query_free(&q);
    if (s < 0) {
        db_page_clear(&page);
        return api_reply_db(r, s);
    }
    if (!found) {
        db_page_clear(&page);
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    }
    enum MHD_Result ret = api_page_reply(r, &page, limit, "recovery");
    db_page_clear(&page);
    return ret;
}
