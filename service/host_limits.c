/* host_limits.c — see host_limits.h. */
#include "service/host_limits.h"

#include <stdio.h>
#include <string.h>

#include "db/pools.h"
#include "db/projects.h"
#include "planner/project_limits.h"

enum plan_cmd_refusal svc_limit_credential(const struct db_host_refs *refs, const char *user,
                                           const char *address, struct svc_host_limit *out)
{
    struct plan_credential_facts f = {refs->credential_project, refs->pool_project,
                                      refs->allowed_users, refs->allowed_cidrs};
    out->credential = plan_credential_allows(&f, user, address);
    return out->credential == PLAN_CREDENTIAL_OK ? PLAN_CMD_OK : PLAN_CMD_CREDENTIAL_NOT_ALLOWED;
}

/* The planner's verdict on adding GPUs of gpu_model; a refusal names what it counted. */
static void quota_verdict(const char *gpu_model, long limit, long held, long adding,
                          enum plan_cmd_refusal *refused, struct svc_host_limit *out)
{
    if (plan_quota_allows(limit, held, adding))
        return;
    *refused = PLAN_CMD_QUOTA_EXCEEDED;
    snprintf(out->gpu_model, sizeof out->gpu_model, "%s", gpu_model);
    out->held = held;
    out->limit = limit;
    out->adding = adding;
}

enum db_status svc_limit_quota(struct db_conn *c, const char *project_id, const char *gpu_model,
                               const char *host_id, long extra, long adding,
                               enum plan_cmd_refusal *refused, struct svc_host_limit *out)
{
    long limit, held;
    *refused = PLAN_CMD_OK;
    if (adding <= 0)
        return DB_ONE_RESULT; /* nothing added: no lock needed */
    enum db_status s = db_project_quota_lock(c, project_id, gpu_model, host_id, &limit, &held);
    if (s <= 0)
        return s < 0 ? s : DB_HARD_ERROR; /* the pool's project exists (foreign key) */
    held += extra;
    quota_verdict(gpu_model, limit, held, adding, refused, out);
    return s;
}

enum db_status svc_limit_budget(struct db_conn *c, const char *project_id,
                                enum plan_cmd_refusal *refused, struct svc_host_limit *out)
{
    struct db_host_budget b;
    *refused = PLAN_CMD_OK;
    enum db_status s = db_host_budget(c, project_id, &b);
    if (s <= 0)
        return s < 0 ? s : DB_HARD_ERROR;
    struct plan_budget_facts f = {b.on_exhausted, b.has_budget, b.has_spend, b.current_month,
                                  b.exhausted};
    if (plan_budget_refuses_new(&f)) {
        *refused = PLAN_CMD_BUDGET_EXHAUSTED;
        snprintf(out->spend, sizeof out->spend, "%s", b.spend);
        snprintf(out->budget, sizeof out->budget, "%s", b.budget);
    }
    return s;
}

enum db_status svc_pool_quota(struct db_conn *c, const char *pool_id, const char *gpu_model,
                              long gpu_count, enum plan_cmd_refusal *refused,
                              struct svc_host_limit *out)
{
    struct db_pool_gpus g;
    *refused = PLAN_CMD_OK;
    enum db_status s = db_pool_gpus(c, pool_id, &g);
    if (s <= 0)
        return s;
    int same = !strcmp(g.gpu_model, gpu_model);
    if (g.hosts == 0 || (same && gpu_count <= g.gpu_count))
        return DB_ONE_RESULT; /* nothing added (hosts registered meanwhile meet the new spec) */
    long limit, held;
    s = db_project_quota_lock(c, g.project_id, gpu_model, NULL, &limit, &held);
    if (s <= 0)
        return s < 0 ? s : DB_HARD_ERROR;
    /* the hosts again, read after the lock: a registration that held it has committed */
    if ((s = db_pool_gpus(c, pool_id, &g)) <= 0)
        return s < 0 ? s : DB_HARD_ERROR;
    /* held counts the pool's hosts at their current count when the model stays */
    long adding = g.hosts * (same ? gpu_count - g.gpu_count : gpu_count);
    quota_verdict(gpu_model, limit, held, adding, refused, out);
    return DB_ONE_RESULT;
}
