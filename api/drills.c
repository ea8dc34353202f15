/* drills.c — restore drills: POST /v1/hosts/{id}/drills (operator; a drained host whose
 * pool declares durable_state and a gate workload) queues a drill job through the one
 * host-command path; GET /v1/hosts/{id}/drills and GET /v1/drills/{id} read the finished
 * drills, scoped as the host's other reads. */
#include "api/drills.h"

#include <stdio.h>
#include <string.h>

#include "api/host_command.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/drills.h"

struct ready_arg {
    const char *id, *scope;
    int durable, workload;
};

static enum db_status ready_fn(struct db_conn *c, void *arg)
{
    struct ready_arg *a = arg;
    return db_drill_pool_ready(c, a->id, a->scope, &a->durable, &a->workload);
}

enum MHD_Result api_hosts_drill(struct api_req *r)
{
    struct ready_arg a = {api_path_id(r, "host"), api_scope_read(r), 0, 0};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(ready_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    /* a host the caller may not see goes on to the command path, which answers 404 */
    if (s == DB_ONE_RESULT && !a.durable)
        return api_reply_problem(r, API_ERR_DRILL_NOT_CONFIGURED, NULL,
                                 "the host's pool declares no durable_state artifacts to "
                                 "restore; set durable_state (PUT /v1/pools/{id}) first");
    if (s == DB_ONE_RESULT && !a.workload)
        return api_reply_problem(r, API_ERR_DRILL_NOT_CONFIGURED, NULL,
                                 "the host's pool defines no gate workload, so a drill cannot "
                                 "measure the first unit of work; set gate.workload first");
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_DRILL, .host_id = a.id};
    return api_host_command(r, &cmd);
}

static int valid_verdict(const char *v)
{
    return !strcmp(v, "pass") || !strcmp(v, "fail");
}

static const struct list_filter host_drill_filters[] = {
    {"verdict", valid_verdict, "pass or fail"},
};

/* A host's drills, newest first: those of a host the caller may see (another project's
 * host lists none, as one that does not exist). */
enum MHD_Result api_hosts_drills(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, "drill", host_drill_filters, 1, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !api_valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct db_drill_filter f = {id,   q.values[0], q.after, q.limit + 1, api_scope_read(r),
                                NULL, NULL};
    struct db_page page = {NULL};
    enum db_status s;
    struct db_conn *c = db_acquire(&s);
    if (c != NULL) {
        s = db_drill_list(c, &f, &page);
        db_release(c);
    }
    long limit = q.limit;
    api_list_query_free(&q);
    if (s < 0) {
        db_page_clear(&page);
        return api_reply_db(r, s);
    }
    enum MHD_Result ret = api_page_reply(r, &page, limit, "drill");
    db_page_clear(&page);
    return ret;
}

/* Every drill the caller may see, newest first (the status page takes each pool's
 * newest). */
static const struct list_filter drill_filters[] = {
    {"host_id", api_valid_uuid, "a host id"},
    {"pool_id", api_valid_uuid, "a pool id"},
    {"verdict", valid_verdict, "pass or fail"},
    {"project", NULL, "a project name or id"},
};

static enum db_status drill_page(struct db_conn *c, const struct list_query *q,
                                 struct db_page *page)
{
    struct db_drill_filter f = {q->values[0], q->values[2], q->after,    q->limit + 1,
                                q->scope,     q->values[3], q->values[1]};
    return db_drill_list(c, &f, page);
}

static const struct list_def drill_list = {"drill", drill_filters, 4,         api_valid_seq,
                                           NULL,    NULL,          drill_page};

enum MHD_Result api_drills_list(struct api_req *r)
{
    return api_list_serve(r, &drill_list);
}

enum MHD_Result api_drills_get(struct api_req *r)
{
    const char *id = api_path_id(r, "drill");
    return id ? api_get_document_in(r, id, "drill", db_drill_get) : MHD_YES;
}
