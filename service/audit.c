/* audit.c — see audit.h. */
#include "service/audit.h"

#include "common/util.h"
#include "db/audit.h"

enum db_status svc_audit(struct db_conn *c, const struct actor *who, const char *action,
                         const char *resource_type, const char *resource_id, int status,
                         const char *reason)
{
    return svc_audit_row(c, who, action, resource_type, resource_id, status, reason, NULL, NULL,
                         NULL);
}

enum db_status svc_audit_change(struct db_conn *c, const struct actor *who, const char *action,
                                const char *resource_type, const char *resource_id,
                                const char *project_id, int status, const char *before,
                                const char *after)
{
    return svc_audit_row(c, who, action, resource_type, resource_id, status, NULL, project_id,
                         before, after);
}

enum db_status svc_audit_row(struct db_conn *c, const struct actor *who, const char *action,
                             const char *resource_type, const char *resource_id, int status,
                             const char *reason, const char *project_id, const char *before,
                             const char *after)
{
    char fresh[UTIL_UUID_LEN + 1];
    const char *request_id = who->request_id;
    if (request_id == NULL) {
        util_uuid4(fresh);
        request_id = fresh;
    }
    struct db_audit_event ev = {
        .principal = who->name,
        .role = actor_role_name(who),
        .action = action,
        .resource_type = resource_type,
        .resource_id = resource_id,
        .method = who->method ? who->method : "WORKER",
        .path = who->path ? who->path : "",
        .status = status,
        .request_id = request_id,
        .reason = reason,
        .project_id = project_id,
        .before = before,
        .after = after,
    };
    return db_audit_insert(c, &ev);
}
