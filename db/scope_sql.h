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

#endif
