/* role.h — the roles' names and ranks: what the role claim of a token (api/auth.h), an entry
 * of the OIDC role map (api/rolemap.h) and `gpufleetd token --role` are read as. */
#ifndef GPUFLEET_ROLE_H
#define GPUFLEET_ROLE_H

#include "api/http.h"

/* "viewer" → ROLE_VIEWER, …; ROLE_NONE when unknown (or NULL). */
enum api_role auth_role_parse(const char *s);
const char *auth_role_name(enum api_role r);

/* Role rank for "highest wins": admin 4, operator 3, viewer 2, reporter 1, none 0. */
int auth_role_rank(enum api_role r);

#endif
