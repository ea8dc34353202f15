/* scope_sql.h — SQL fragments of project scope, for the statements of db/ (see
 * api/scope.h): a scope list is a uuid[] parameter, NULL for every project. */
#ifndef GPUFLEET_DB_SCOPE_SQL_H
#define GPUFLEET_DB_SCOPE_SQL_H

/* The row's project col lies in scope parameter n ("$3"): true for every row when NULL. */
#define DB_IN_SCOPE(col, n) "(" n "::uuid[] IS NULL OR " col " = ANY (" n "::uuid[]))"
/* A shared row (stacks, GPU models) lies in every scope. */
#define DB_IN_SCOPE_SHARED(alias, n) \
    "(" n "::uuid[] IS NULL OR " alias ".shared OR " alias ".project_id = ANY (" n "::uuid[]))"
/* The ?project= filter parameter n: only that project's rows, or every row when NULL. */
#define DB_OF_PROJECT(col, n) "(" n "::uuid IS NULL OR " col " = " n "::uuid)"
/* The document member "project": {"id": …, "name": …} of the row's project col, as json
 * (NULL when col is NULL: a catalog GPU model). */
#define DB_PROJECT_JSON(col)                                                       \
    "CASE WHEN " col " IS NOT NULL THEN json_build_object('id', " col ", 'name', " \
    "(SELECT pr.name FROM projects pr WHERE pr.id = " col ")) END"

/* The member "project" of a row that belongs to a project through its host (its id column
 * host_id) or its pool (pool_id): the host's (the pool's) current project, as json, the
 * same {"id", "name"} as DB_PROJECT_JSON; in the row's own statement (one round trip). */
#define DB_HOST_PROJECT_JSON(host_id)                                          \
    "(SELECT json_build_object('id', hpr.id, 'name', hpr.name) FROM hosts hph" \
    " JOIN projects hpr ON hpr.id = hph.project_id WHERE hph.id = " host_id ")"
#define DB_POOL_PROJECT_JSON(pool_id)                                          \
    "(SELECT json_build_object('id', ppr.id, 'name', ppr.name) FROM pools ppl" \
    " JOIN projects ppr ON ppr.id = ppl.project_id WHERE ppl.id = " pool_id ")"

/* Rows that belong to a project through their host or pool (jobs, gate runs, readiness,
 * health, GPUs, recoveries, work reports; rollouts, baselines): scope is the parameter
 * holding the readable projects (NULL: every project), project the one holding the
 * ?project= filter (NULL: none; "NULL" when the statement has no such filter). Both
 * filter in the statement, so a single read stays one round trip. */
/* The row's host (its id column host_id) is in scope and in the filtered project. */
#define DB_HOST_IN_SCOPE(host_id, scope, project)                                    \
    "((" scope "::uuid[] IS NULL AND " project "::uuid IS NULL) OR EXISTS (SELECT 1" \
    " FROM hosts sh WHERE sh.id = " host_id " AND (" scope                           \
    "::uuid[] IS NULL OR sh.project_id = ANY (" scope "::uuid[]))"                   \
    " AND (" project "::uuid IS NULL OR sh.project_id = " project "::uuid)))"

/* The same through the row's pool (its id column pool_id). */
#define DB_POOL_IN_SCOPE(pool_id, scope, project)                                    \
    "((" scope "::uuid[] IS NULL AND " project "::uuid IS NULL) OR EXISTS (SELECT 1" \
    " FROM pools sp WHERE sp.id = " pool_id " AND (" scope                           \
    "::uuid[] IS NULL OR sp.project_id = ANY (" scope "::uuid[]))"                   \
    " AND (" project "::uuid IS NULL OR sp.project_id = " project "::uuid)))"

#endif
