/* scope.c — see scope.h. */
#include "planner/scope.h"

#include <stdio.h>
#include <string.h>

#define ALL_ROLES  (ACTOR_ROLE_VIEWER | ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN | ACTOR_ROLE_REPORTER)
#define READ_ROLES (ACTOR_ROLE_VIEWER | ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN)

static int everywhere(const struct actor *who)
{
    return who->kind == ACTOR_SYSTEM || who->platform_admin;
}

unsigned plan_scope_roles(const struct actor *who, const char *project_id)
{
    if (everywhere(who))
        return ALL_ROLES;
    unsigned roles = 0;
    for (int i = 0; project_id != NULL && i < who->ngrants; i++)
        if (!strcmp(who->grants[i].project_id, project_id))
            roles |= who->grants[i].role;
    return roles;
}

enum plan_scope_answer plan_scope(const struct actor *who, const char *project_id, unsigned need)
{
    unsigned roles = plan_scope_roles(who, project_id);
    if (roles & need)
        return PLAN_SCOPE_OK;
    return roles ? PLAN_SCOPE_FORBIDDEN : PLAN_SCOPE_HIDDEN;
}

int plan_scope_readable(const struct actor *who, char *out, size_t n)
{
    if (n == 0)
        return -1;
    out[0] = '\0';
    if (everywhere(who))
        return 0;
    size_t used = (size_t)snprintf(out, n, "{");
    int count = 0;
    for (int i = 0; i < who->ngrants; i++) {
        if (!(who->grants[i].role & READ_ROLES))
            continue;
        int w = snprintf(out + used, n - used, "%s%s", count ? "," : "", who->grants[i].project_id);
        if (w < 0 || (size_t)w >= n - used)
            return -1;
        used += (size_t)w;
        count++;
    }
    if (used + 2 > n)
        return -1;
    snprintf(out + used, n - used, "}");
    return count;
}
