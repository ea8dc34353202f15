/* scope.h — who may do what where (pure logic). Every project-owned object (pools,
 * credentials, briefs, stacks, hosts and what hangs off them, webhooks, events, audit
 * rows) belongs to exactly one project; an actor holds a role per project
 * (common/actor.h). The API's route table checks at the door that the caller holds one of
 * the route's roles somewhere; this decides for one object:
 *   - a platform admin, or a system actor, may act anywhere;
 *   - one with one of the needed roles in the object's project may act;
 *   - one with another role there may see that the object exists: forbidden (403);
 *   - one with no role there may not even learn that it exists: hidden (404, as if there
 *     were no such object). */
#ifndef GPUFLEET_PLAN_SCOPE_H
#define GPUFLEET_PLAN_SCOPE_H

#include <stddef.h>

#include "common/actor.h"

enum plan_scope_answer {
    PLAN_SCOPE_OK = 0,
    PLAN_SCOPE_HIDDEN,    /* 404 */
    PLAN_SCOPE_FORBIDDEN, /* 403 */
};

/* The roles who holds in project_id (0 when none; every role for a platform admin or a
 * system actor). */
unsigned plan_scope_roles(const struct actor *who, const char *project_id);

/* May who act with one of need's roles on an object of project_id? */
enum plan_scope_answer plan_scope(const struct actor *who, const char *project_id, unsigned need);

/* The projects whose objects who may read (viewer, operator or admin there), as a
 * PostgreSQL uuid[] literal "{a,b}" into out (n bytes); "" (and returns 0) when who may
 * read every project (a platform admin or a system actor). Returns the number of
 * projects written, or -1 when out is too small. */
int plan_scope_readable(const struct actor *who, char *out, size_t n);

#endif
