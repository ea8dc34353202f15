/* projects.h — projects (teams sharing the fleet), their members, GPU quotas, budgets and
 * spend (migrations/0022_projects.sql). The scope lists that filter every project-owned
 * read and write are PostgreSQL uuid[] literals ("{a,b}"), or NULL for every project (a
 * platform admin); see planner/scope.h. */
#ifndef GPUFLEET_DB_PROJECTS_H
#define GPUFLEET_DB_PROJECTS_H

#include "db/db.h"

#define DB_DEFAULT_PROJECT_ID "00000000-0000-4000-8000-000000000001"

/* A project as written: NULL members keep the stored value on an update. */
struct db_project_in {
    const char *name, *description;
    const char *budget_monthly; /* decimal text, "" for none (NULL keeps) */
    const char *thresholds;     /* int[] literal "{50,80,100}" (NULL keeps) */
    const char *on_exhausted;   /* notify, refuse_new, stop_idle (NULL keeps) */
    const char *quotas;         /* {"model": n, ...} as JSON text; replaces all (NULL keeps) */
    const char *created_by;
};
/* FK violation: a quota names no GPU model; unique violation: the name is taken. */
enum db_status db_project_insert(struct db_conn *c, const struct db_project_in *in, char **doc,
                                 char id[37]);
/* The Project document (with usage); ref is an id or a name; scope limits what may be
 * seen (NULL: all). */
enum db_status db_project_get(struct db_conn *c, const char *ref, const char *scope, char **doc);
/* The stored row, locked, as a JSON text of its settings (for the audit's before). */
enum db_status db_project_settings(struct db_conn *c, const char *id, char **json);
enum db_status db_project_update(struct db_conn *c, const char *id, const struct db_project_in *in,
                                 char **doc);
/* FK violation (DB_HARD_ERROR): the project still owns something. */
enum db_status db_project_delete(struct db_conn *c, const char *id);
struct db_project_filter {
    const char *scope, *name_prefix, *after_seq;
    long limit;
};
enum db_status db_project_list(struct db_conn *c, const struct db_project_filter *f,
                               struct db_page *page);

/* ---- members ---- */

enum db_status db_member_list(struct db_conn *c, const char *project_id, const char *after,
                              long limit, struct db_page *page);
/* Sets subject's role; before gets the role it had ("" when none). */
enum db_status db_member_put(struct db_conn *c, const char *project_id, const char *subject,
                             const char *role, const char *by, char before[16], char **doc);
/* Removes it; before gets the role it had (DB_NO_RESULTS when it had none). */
enum db_status db_member_delete(struct db_conn *c, const char *project_id, const char *subject,
                                char before[16]);

/* ---- what the request's actor resolution reads (service/grants.c) ---- */

struct db_project_ref {
    char id[37], name[64];
};
/* Every project's id and name, into *out (caller frees); *n how many. */
enum db_status db_project_refs(struct db_conn *c, struct db_project_ref **out, int *n);
struct db_membership {
    char project_id[37], role[16];
};
/* The memberships stored for subject (at most max). */
enum db_status db_memberships(struct db_conn *c, const char *subject, struct db_membership *out,
                              int max, int *n);

/* ---- quotas ---- */

/* Locks the project's row (quota checks of concurrent additions run one at a time) and
 * reads the quota of gpu_model (*limit -1: none) and the GPUs of that model its hosts hold
 * that are not stopped, leaving out host_id (NULL: none). DB_NO_RESULTS: no such
 * project. */
enum db_status db_project_quota_lock(struct db_conn *c, const char *project_id,
                                     const char *gpu_model, const char *host_id, long *limit,
                                     long *held);

/* ---- whose is it ---- */

/* The project of the resource (type as audit rows name it: pool, credential, brief, stack,
 * webhook, host, job, rollout; id its UUID), unscoped, into project_id: for the answer to
 * a write refused by scope (403 when the caller may see it, else 404) and its audit row.
 * DB_NO_RESULTS: no such resource. */
enum db_status db_resource_project(struct db_conn *c, const char *type, const char *id,
                                   char project_id[37]);

#endif
