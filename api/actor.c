/* actor.c — the request's actor and its audit rows (the rows themselves: service/audit.c). */
#include <stdio.h>

#include "api/http.h"
#include "service/audit.h"

_Static_assert(ROLE_VIEWER == (int)ACTOR_ROLE_VIEWER && ROLE_OPERATOR == (int)ACTOR_ROLE_OPERATOR &&
                   ROLE_ADMIN == (int)ACTOR_ROLE_ADMIN && ROLE_REPORTER == (int)ACTOR_ROLE_REPORTER,
               "the API's roles are the actors' roles");

void api_actor(const struct api_req *r, struct actor *a)
{
    *a = (struct actor){
        .kind = r->principal.from_idp ? ACTOR_USER : ACTOR_TOKEN,
        .name = r->principal.sub,
        .role = r->roles,
        .method = r->method,
        .path = r->path,
        .request_id = r->request_id,
        .platform_admin = r->principal.platform_admin,
        .grants = r->grants,
        .ngrants = r->ngrants,
    };
}

enum db_status api_audit(struct db_conn *c, const struct api_req *r, const char *action,
                         const char *resource_type, const char *resource_id, unsigned status)
{
    return api_audit_reason(c, r, action, resource_type, resource_id, status, NULL);
}

enum db_status api_audit_reason(struct db_conn *c, const struct api_req *r, const char *action,
                                const char *resource_type, const char *resource_id, unsigned status,
                                const char *reason)
{
    struct actor who;
    api_actor(r, &who);
    return svc_audit(c, &who, action, resource_type, resource_id, (int)status, reason);
}
