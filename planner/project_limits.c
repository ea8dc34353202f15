/* project_limits.c — see project_limits.h. */
#include "planner/project_limits.h"

#include <string.h>

#include "common/netpolicy.h"

int plan_quota_allows(long limit, long held, long adding)
{
    if (adding <= 0 || limit < 0)
        return 1;
    return held + adding <= limit;
}

int plan_budget_refuses_new(const struct plan_budget_facts *f)
{
    if (!f->has_budget || !f->has_spend || !f->current_month || !f->exhausted ||
        f->on_exhausted == NULL)
        return 0;
    return !strcmp(f->on_exhausted, "refuse_new") || !strcmp(f->on_exhausted, "stop_idle");
}

/* 1 when name is one of the comma-separated items of list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && n > 0 && !strncmp(p, name, n))
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

enum plan_credential_answer plan_credential_allows(const struct plan_credential_facts *f,
                                                   const char *user, const char *address)
{
    if (f->credential_project == NULL || f->pool_project == NULL ||
        strcmp(f->credential_project, f->pool_project) != 0)
        return PLAN_CREDENTIAL_OTHER_PROJECT;
    if (f->allowed_users != NULL && (user == NULL || !listed(f->allowed_users, user)))
        return PLAN_CREDENTIAL_USER;
    if (f->allowed_cidrs != NULL && (address == NULL || f->allowed_cidrs[0] == '\0' ||
                                     net_cidr_match(address, f->allowed_cidrs) != 1))
        return PLAN_CREDENTIAL_ADDRESS;
    return PLAN_CREDENTIAL_OK;
}
