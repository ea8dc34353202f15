/* actor.c — see actor.h. */
#include "common/actor.h"

const char *actor_role_name(const struct actor *a)
{
    if (a->kind == ACTOR_SYSTEM)
        return "system";
    if (a->role & ACTOR_ROLE_ADMIN)
        return "admin";
    if (a->role & ACTOR_ROLE_OPERATOR)
        return "operator";
    if (a->role & ACTOR_ROLE_REPORTER)
        return "reporter";
    if (a->role & ACTOR_ROLE_VIEWER)
        return "viewer";
    return "none";
}

struct actor actor_system(const char *name, const char *path, const char *request_id)
{
    return (struct actor){.kind = ACTOR_SYSTEM,
                          .name = name,
                          .role = ACTOR_ROLE_ADMIN,
                          .path = path,
                          .request_id = request_id,
                          .platform_admin = 1};
}
