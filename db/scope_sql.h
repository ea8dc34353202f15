/* scope_sql.h — SQL fragments that filter rows by the project of their host or pool, for
 * the rows that belong to a project through one (jobs, gate runs, readiness, health,
 * GPUs, recoveries, work reports; rollouts, baselines). scope is the parameter holding a
 * uuid[] literal of the projects that may be read (NULL: every project, db/projects.h),
 * project the one holding the ?project= filter (NULL: none; "NULL" when the statement has
 * no such filter). Both filter in the statement, so a single read stays one round trip
 * and a list never returns another project's row. */
#ifndef GPUFLEET_DB_SCOPE_SQL_H
#define GPUFLEET_DB_SCOPE_SQL_H

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
