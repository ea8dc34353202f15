/* grants.h — who may do what where. A request's actor holds roles per project: those its
 * token names (by project name: gpufleetd tokens' "project" claim, the OIDC role map's
 * @project=NAME entries; a role without a project acts on the project named default) and
 * those stored for its subject (project_members). This resolves them to project ids,
 * reading through a small cache of the projects' names and of each subject's memberships
 * (entries live GRANTS_TTL_MS, and a change this process makes drops them at once), so a
 * request costs no extra round trip to PostgreSQL. */
#ifndef GPUFLEET_SVC_GRANTS_H
#define GPUFLEET_SVC_GRANTS_H

#include "common/actor.h"

#define GRANTS_TTL_MS 2000

/* A role a token names in a project, by the project's name. */
struct svc_claim {
    const char *project;
    unsigned role; /* enum actor_role bits */
};

/* Resolves the grants of subject: claims (a project that does not exist grants nothing)
 * and its stored memberships, merged by project into out (at most max). *roles gets the
 * union of their roles. Returns how many grants, or -1 when PostgreSQL cannot be read. */
int svc_grants_resolve(const char *subject, const struct svc_claim *claims, int nclaims,
                       struct actor_grant *out, int max, unsigned *roles);

/* A project named by its id or its name: 0 with id and name filled, 1 when none, -1 on a
 * database error. */
int svc_project_lookup(const char *ref, char id[37], char name[64]);

/* The name of a project id ("" when unknown). */
void svc_project_name(const char *id, char name[64]);

/* Drops the cached names and memberships (after a change of projects or members). */
void svc_grants_invalidate(void);

/* "viewer" → ACTOR_ROLE_VIEWER, …; 0 when unknown. */
unsigned svc_role_bits(const char *name);

#endif
