/* rolemap.h — roles (and reporter scopes) for identity-provider tokens.
 *
 * GPUFLEET_JWT_ROLE_MAP is a comma-separated list of entries
 *
 *     GROUP:ROLE                     e.g. platform-admins:admin
 *     GROUP:ROLE@project=NAME        e.g. ml-serving-ops:operator@project=ml-serving
 *     GROUP:reporter@ITEM[+ITEM...]  e.g. gpu-reporters-a:reporter@pool-a+host=gpu-07
 *     GROUP:reporter@project=NAME+ITEM...
 *
 * GROUP is a value of the role claim (any characters but ',' and leading/trailing
 * spaces; it may hold ':' and '@': the role is the text after the last ':' before the
 * scope). ROLE is viewer, operator, admin or reporter. Only reporter entries take a scope.
 * An ITEM is a pool (its name or id), "pool=NAME_OR_ID", or "host=NAME_OR_ID"; names in
 * the map are limited to letters, digits and . _ - (a pool with other characters in its
 * name is named by its id).
 *
 * An entry with @project=NAME grants its role in that project only; an entry without one
 * grants it globally: admin makes a platform admin, the other roles act on the project
 * named default. A token whose claim matches several entries gets, globally and in each
 * project, the highest role (admin > operator > viewer > reporter); a reporter matching
 * several reporter entries gets the union of their scopes, and any unscoped reporter entry
 * makes it unscoped. */
#ifndef GPUFLEET_ROLEMAP_H
#define GPUFLEET_ROLEMAP_H

#include <jansson.h>
#include <stddef.h>

#include "api/http.h"

#define ROLEMAP_MAX_ENTRIES 256
#define ROLEMAP_MAX_ITEMS   256 /* pools + hosts of one entry, and of one scope */

struct auth_rolemap;

/* Parses spec. Returns 0 and *out (caller frees with auth_rolemap_free), or -1 with a
 * one-line reason naming the entry. */
int auth_rolemap_parse(const char *spec, struct auth_rolemap **out, char *err, size_t errlen);
void auth_rolemap_free(struct auth_rolemap *m);
size_t auth_rolemap_size(const struct auth_rolemap *m);

/* The global role for a claim value (a string, or an array whose string members count;
 * other values match nothing): ROLE_NONE when no entry without a project matches. The
 * project entries that match go to claims (at most max; *nclaims how many). When a
 * reporter entry matches, *scope gets a new {"pools": [...], "hosts": [...]} object
 * (caller decrefs), or NULL when a matching reporter entry is unscoped. */
enum api_role auth_rolemap_resolve(const struct auth_rolemap *m, const json_t *claim,
                                   json_t **scope, struct api_project_claim *claims, int max,
                                   int *nclaims);

#endif
