/* scope.h — the API side of projects (planner/scope.h decides, service/grants.h resolves):
 * what a request's actor may read and write, the project a create acts in, and the
 * ?project= filter of the lists. Every project-owned read and write filters in SQL by a
 * scope list: a PostgreSQL uuid[] literal of project ids, or NULL for every project. */
#ifndef GPUFLEET_API_SCOPE_H
#define GPUFLEET_API_SCOPE_H

#include "api/http.h"

#define API_READ_ROLES  (ROLE_VIEWER | ROLE_OPERATOR | ROLE_ADMIN)
#define API_WRITE_ROLES (ROLE_OPERATOR | ROLE_ADMIN)

/* The projects where r's actor holds one of roles, as a uuid[] literal ("{}" when none),
 * or NULL for every project (a platform admin). Owned by r (freed with it). */
const char *api_scope(struct api_req *r, unsigned roles);
/* api_scope(r, API_READ_ROLES): what r may see. */
const char *api_scope_read(struct api_req *r);
/* api_scope(r, the route's roles): what r may change with this route. */
const char *api_scope_route(struct api_req *r);
/* The roles of r's route (what a create needs in its project, api_create_project). */
unsigned api_route_roles(const struct api_req *r);

/* The project a create acts in, into id (and name, may be NULL): the body's "project" (a
 * name or an id; the member is taken out of r->json, so the document stored never holds
 * it) or, when the body names none, the one project where the caller holds one of roles
 * (a platform admin: the project named default). Returns 0, or -1 after replying: 400
 * missing_field project when the caller holds such a role in several projects (or none),
 * 404 when the project does not exist or the caller may not see it, 403 when it may see
 * it but lacks the role there, 503 when PostgreSQL cannot be read. */
int api_create_project(struct api_req *r, unsigned roles, char id[37], char name[64]);

/* The ?project= filter value (a name or an id) as a project id the caller may see: 0 with
 * id filled, or -1 after replying 400 invalid_parameter (the same answer for a project
 * that does not exist and one the caller may not see). */
int api_filter_project(struct api_req *r, const char *value, char id[37]);

/* The answer to a write (PUT, PATCH, DELETE, an action) whose statement, filtered by
 * api_scope_route(r), found no row of type (as audit rows name it: pool, credential,
 * brief, stack, webhook, host, job, rollout) with this id: 403 insufficient_role when the
 * object exists and the caller may see it (its role there is too low for the route), else
 * 404 "no <what> has this id" (none, or one of a project the caller may not see: the same
 * answer). A refusal of an object that exists is audited as "<type>.denied" (status 403
 * or 404) with the object's project. Reads (GET) answer 404 without this. */
enum MHD_Result api_scope_refuse(struct api_req *r, const char *type, const char *id,
                                 const char *what);

/* For a change only platform admins make (sharing a stack or a GPU model), once the
 * caller has been shown to see the object: 1 when the caller is a platform admin (go on);
 * else 0 after replying 403 insufficient_role (detail says who may), audited as
 * "<type>.denied" with project_id (NULL: the resource's, from its type and id). */
int api_platform_admin_only(struct api_req *r, const char *type, const char *id,
                            const char *project_id, const char *detail);

/* The body of a sharing change, {"shared": true|false}: 0 with *shared set, or -1 after
 * replying 400. */
int api_parse_shared(struct api_req *r, int *shared);
/* The audit's before or after of a sharing change: {"shared":true} or {"shared":false}. */
const char *api_shared_json(int shared);

/* Frees what api_scope kept (http.c, when the request ends). */
void api_scope_free(struct api_req *r);

#endif
