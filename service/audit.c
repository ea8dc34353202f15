/* audit.c — see audit.h. */
#include "service/audit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

/* 1 when name is one of the NULL-terminated list (NULL: none). */
static int listed(const char *const *list, const char *name)
{
    for (; list != NULL && *list != NULL; list++)
        if (strcmp(*list, name) == 0)
            return 1;
    return 0;
}

/* Adds to before/after the members of a and b that differ: objects member by member (one
 * level down per call), anything else whole; a listed secret member only as "(changed)". */
static int diff_into(const json_t *a, const json_t *b, const char *const *ignore,
                     const char *const *secret, json_t *before, json_t *after)
{
    const char *k;
    json_t *v;
    json_t *keys = json_object();
    if (keys == NULL)
        return -1;
    json_object_foreach((json_t *)a, k, v) json_object_set(keys, k, json_null());
    json_object_foreach((json_t *)b, k, v) json_object_set(keys, k, json_null());
    int rc = 0;
    json_object_foreach(keys, k, v)
    {
        const json_t *x = json_object_get(a, k), *y = json_object_get(b, k);
        if (listed(ignore, k) || json_equal((json_t *)x, (json_t *)y))
            continue;
        if (listed(secret, k)) { /* never the material: only that it changed */
            json_object_set_new(before, k, json_string(x ? "(set)" : "(absent)"));
            json_object_set_new(after, k, json_string(y ? "(changed)" : "(absent)"));
        } else if (json_is_object(x) && json_is_object(y)) {
            json_t *nb = json_object(), *na = json_object();
            if (nb == NULL || na == NULL || diff_into(x, y, NULL, secret, nb, na) != 0)
                rc = -1;
            json_object_set_new(before, k, nb);
            json_object_set_new(after, k, na);
        } else {
            json_object_set(before, k, x ? (json_t *)x : json_null());
            json_object_set(after, k, y ? (json_t *)y : json_null());
        }
    }
    json_decref(keys);
    return rc;
}

int svc_audit_diff(const char *before_doc, const char *after_doc, const char *const *ignore,
                   const char *const *secret, char **before, char **after)
{
    *before = *after = NULL;
    json_t *a = json_loads(before_doc ? before_doc : "{}", 0, NULL);
    json_t *b = json_loads(after_doc ? after_doc : "{}", 0, NULL);
    json_t *jb = json_object(), *ja = json_object();
    int rc = -1;
    if (json_is_object(a) && json_is_object(b) && jb != NULL && ja != NULL &&
        diff_into(a, b, ignore, secret, jb, ja) == 0) {
        *before = json_dumps(jb, JSON_COMPACT | JSON_SORT_KEYS);
        *after = json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS);
        rc = *before != NULL && *after != NULL ? 0 : -1;
    }
    if (rc != 0) {
        free(*before);
        free(*after);
        *before = *after = NULL;
    }
    json_decref(a);
    json_decref(b);
    json_decref(jb);
    json_decref(ja);
    return rc;
}
