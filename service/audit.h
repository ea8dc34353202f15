/* audit.h — the audit row of an act, naming its actor (common/actor.h). The API's requests
 * and the background actors write it the same way, in the transaction of the change it
 * records. */
#ifndef GPUFLEET_SVC_AUDIT_H
#define GPUFLEET_SVC_AUDIT_H

#include "common/actor.h"
#include "db/db.h"

/* One row: who (principal, role; a system actor's role is "system"), the request's method,
 * path and id (a system actor: WORKER, the actor's path, a fresh id unless it names one),
 * the action on the resource, the status answered, and an optional reason. */
enum db_status svc_audit(struct db_conn *c, const struct actor *who, const char *action,
                         const char *resource_type, const char *resource_id, int status,
                         const char *reason);

/* The audit row of a change of settings (a project, a membership, a quota, a budget, a
 * credential's binding): the values before and after as JSON texts (either may be NULL),
 * in project_id (NULL: from the resource). */
enum db_status svc_audit_change(struct db_conn *c, const struct actor *who, const char *action,
                                const char *resource_type, const char *resource_id,
                                const char *project_id, int status, const char *before,
                                const char *after);
/* Every member of the row. */
enum db_status svc_audit_row(struct db_conn *c, const struct actor *who, const char *action,
                             const char *resource_type, const char *resource_id, int status,
                             const char *reason, const char *project_id, const char *before,
                             const char *after);

/* The members that differ between two JSON object documents (a resource before and after
 * a change), as two JSON object texts for svc_audit_change (caller frees both): nested
 * objects member by member, anything else whole. ignore: top-level members left out
 * (revision, updated_at, …); secret: members whose values never appear, only "(set)" →
 * "(changed)". Both NULL-terminated lists or NULL. Returns 0, or -1 (unparsable, out of
 * memory: fail closed, nothing to record). */
int svc_audit_diff(const char *before_doc, const char *after_doc, const char *const *ignore,
                   const char *const *secret, char **before, char **after);

#endif
