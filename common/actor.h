/* actor.h — who causes a change, typed. Every host command, state history row and audit
 * row names one: a user signed in through the identity provider, the subject of a token
 * gpufleetd minted, or a system actor (a worker thread, the health monitor, recovery:<id>,
 * rollout:<id>, the idle policy). The API builds one per request; the background actors
 * build their own. Pure data: no layer above common/ is needed to fill or read it. */
#ifndef GPUFLEET_ACTOR_H
#define GPUFLEET_ACTOR_H

enum actor_kind {
    ACTOR_USER,   /* an OIDC token's subject */
    ACTOR_TOKEN,  /* a token minted by `gpufleetd token` (or a scoped reporter token) */
    ACTOR_SYSTEM, /* gpufleet itself: worker:…, monitor owner, recovery:<id>, rollout:<id>, … */
};

/* Roles as bits (the API's route table uses the same values). */
enum actor_role {
    ACTOR_ROLE_NONE = 0,
    ACTOR_ROLE_VIEWER = 1,
    ACTOR_ROLE_OPERATOR = 2,
    ACTOR_ROLE_ADMIN = 4,
    ACTOR_ROLE_REPORTER = 8,
};

/* A role in one project. */
struct actor_grant {
    char project_id[37];
    unsigned role; /* enum actor_role bits */
};

struct actor {
    enum actor_kind kind;
    const char *name; /* the subject or the system actor's name (borrowed) */
    unsigned role;    /* enum actor_role; a system actor acts with ACTOR_ROLE_ADMIN */
    /* The request that caused the act (borrowed), for the audit row: method, path and
     * request id. A system actor has no request: method NULL (audited as WORKER, with a
     * fresh request id) and path names the resource the act concerns. */
    const char *method, *path, *request_id;
    /* Projects: a platform admin acts in every project and on the platform's own objects
     * (projects, shared rows); anyone else holds roles per project (borrowed). A system
     * actor acts for the platform. */
    int platform_admin;
    const struct actor_grant *grants;
    int ngrants;
};

/* A system actor: name (e.g. recovery:<id>), the path of the resource its act concerns,
 * and the id that stands for a request (NULL: a fresh one per audit row). */
struct actor actor_system(const char *name, const char *path, const char *request_id);

/* "viewer", "operator", "admin", "reporter", or "system" for a system actor. */
const char *actor_role_name(const struct actor *a);

#endif
