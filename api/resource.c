/* resource.c — see resource.h. */
#include "api/resource.h"

#include <stdlib.h>

struct delete_arg {
    struct api_req *r;
    const char *id;
    const struct api_delete_def *d;
    int in_use;
};

static enum db_status delete_fn(struct db_conn *c, void *arg)
{
    struct delete_arg *a = arg;
    enum db_status s = a->d->del(c, a->id);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        a->in_use = 1;
    if (s <= 0)
        return s;
    return api_audit(c, a->r, a->d->action, a->d->what, a->id, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result api_delete_resource(struct api_req *r, const char *id,
                                    const struct api_delete_def *d)
{
    struct delete_arg a = {r, id, d, 0};
    enum db_status s = db_run_tx(delete_fn, &a);
    if (a.in_use)
        return api_reply_problem(r, d->in_use, NULL, "%s", d->in_use_detail);
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", d->what);
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

struct get_arg {
    const char *id;
    api_doc_fetch fetch;
    char *doc;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return a->fetch(c, a->id, &a->doc);
}

enum MHD_Result api_get_document(struct api_req *r, const char *id, const char *what,
                                 api_doc_fetch fetch)
{
    struct get_arg a = {id, fetch, NULL};
    enum db_status s = db_run(get_fn, &a);
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", what);
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
