/* baselines.c — see baselines.h. */
#include "api/baselines.h"

#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/baselines.h"
#include "service/baseline.h"

/* A GPU name as recorded: printable text of 1 to 400 bytes. */
static int valid_gpu_model(const char *v)
{
    size_t n = strlen(v);
    return n >= 1 && n <= 400 && spec_printable(v);
}

static const struct list_filter filters[] = {
    {"pool", api_valid_uuid, "a pool id (UUID)"},
    {"stack", api_valid_uuid, "a stack id (UUID)"},
    {"gpu_model", valid_gpu_model, "a GPU name as recorded (printable text)"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    const char *const *v = q->values;
    struct db_baseline_filter f = {v[0], v[1], v[2], q->after, q->limit + 1, q->scope, v[3]};
    return db_baseline_list(c, &f, page);
}

static const struct list_def baseline_list = {
    "baseline", filters, 4, api_valid_seq, NULL, NULL, list_page,
};

enum MHD_Result api_baselines_list(struct api_req *r)
{
    return api_list_serve(r, &baseline_list);
}

static const struct list_filter compare_filters[] = {
    {"stack", api_valid_uuid, "a stack id (UUID)"},
};

struct compare_arg {
    const char *gate_run_id, *stack_id, *scope;
    struct svc_baseline_cmp cmp;
};

static enum db_status compare_fn(struct db_conn *c, void *arg)
{
    struct compare_arg *a = arg;
    svc_baseline_cmp_free(&a->cmp);
    return svc_baseline_compare(c, a->gate_run_id, a->stack_id, a->scope, &a->cmp);
}

enum MHD_Result api_gate_runs_comparison(struct api_req *r)
{
    const char *id = api_path_id(r, "gate run");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, NULL, compare_filters, 1, &q) != 0)
        return MHD_YES;
    struct compare_arg a = {.gate_run_id = id, .stack_id = q.values[0], .scope = api_scope_read(r)};
    if (a.stack_id == NULL) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "stack",
                                 "stack is required: the stack whose baselines the run's is "
                                 "compared with");
    }
    enum db_status s = db_run(compare_fn, &a);
    api_list_query_free(&q);
    if (s < 0) {
        svc_baseline_cmp_free(&a.cmp);
        return api_reply_db(r, s);
    }
    if (s == DB_NO_RESULTS) {
        svc_baseline_cmp_free(&a.cmp);
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL,
                                 "no gate run has this id, or the run recorded no baseline (it "
                                 "was not accepted, or its pool's gate has no workload)");
    }
    json_t *doc = a.cmp.doc;
    a.cmp.doc = NULL;
    svc_baseline_cmp_free(&a.cmp);
    return api_reply_json(r, MHD_HTTP_OK, doc, NULL);
}

enum MHD_Result api_baselines_get(struct api_req *r)
{
    const char *id = api_path_id(r, "baseline");
    return id ? api_get_document_in(r, id, "baseline", db_baseline_get) : MHD_YES;
}
