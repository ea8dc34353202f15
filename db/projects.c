/* projects.c — see projects.h. */
#include "db/projects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

/* The Project document: settings, quotas and usage (GPUs held per model; the spend the
 * budget pass last computed). */
// clang-format off
#define PROJECT_DOC(p)                                                                          \
    "json_build_object('id', " p ".id, 'name', " p ".name, 'description', " p ".description,"  \
    " 'budget', json_build_object('monthly', " p ".budget_monthly, 'thresholds_pct', "          \
    p ".budget_thresholds, 'on_exhausted', " p ".on_exhausted),"                                \
    " 'quotas', json_build_object('gpus', coalesce((SELECT json_object_agg(q.gpu_model,"       \
    "   q.max_gpus ORDER BY q.gpu_model) FROM project_quotas q WHERE q.project_id = " p ".id),"  \
    "   '{}'::json)),"                                                                          \
    " 'usage', (SELECT json_build_object('gpus', coalesce(json_object_agg(u.gpu_model, u.n"     \
    "     ORDER BY u.gpu_model) FILTER (WHERE u.gpu_model IS NOT NULL), '{}'::json),"          \
    "   'over_quota', coalesce(json_agg(u.gpu_model ORDER BY u.gpu_model)"                      \
    "     FILTER (WHERE u.n > u.max_gpus), '[]'::json),"                                        \
    "   'month_to_date', s.spend, 'forecast', s.forecast, 'burn_per_hour', s.burn_per_hour,"     \
    "   'budget_used_pct', CASE WHEN " p ".budget_monthly > 0 THEN round(100 * s.spend / "     \
    p ".budget_monthly, 2) END, 'exhausted', coalesce(s.exhausted, false),"                     \
    "   'computed_at', " DB_TS("s.computed_at") ")"                                             \
    "   FROM (SELECT pl.gpu_model, sum(coalesce((pl.spec->>'gpu_count')::int, 0))::int AS n,"   \
    "          (SELECT q.max_gpus FROM project_quotas q WHERE q.project_id = " p ".id"           \
    "             AND q.gpu_model = pl.gpu_model) AS max_gpus"                                  \
    "          FROM hosts h JOIN pools pl ON pl.id = h.pool_id"                                \
    "          WHERE h.project_id = " p ".id AND h.state <> 'stopped' GROUP BY pl.gpu_model"    \
    "         UNION ALL SELECT NULL, 0, NULL) u"                                                 \
    "   LEFT JOIN project_spend s ON s.project_id = " p ".id AND s.month ="                     \
    "     date_trunc('month', now() AT TIME ZONE 'UTC')::date"                                  \
    "   GROUP BY s.spend, s.forecast, s.burn_per_hour, s.exhausted, s.computed_at),"           \
    " 'revision', " p ".revision, 'created_by', " p ".created_by, 'created_at', "              \
    DB_TS(p ".created_at") ", 'updated_at', " DB_TS(p ".updated_at") ")::text"
// clang-format on

#define SCOPED(col) "($2::uuid[] IS NULL OR " col " = ANY ($2::uuid[]))"
#define BY_REF(p)   "(" p ".name = $1 OR " p ".id::text = lower($1))"

const struct db_stmt db_project_stmts[] = {
    {"project_insert",
     "WITH p AS (INSERT INTO projects (name, description, budget_monthly, budget_thresholds,"
     "  on_exhausted, created_by) VALUES ($1, coalesce($2, ''), nullif($3, '')::numeric,"
     "  coalesce($4::int[], '{50,80,100}'), coalesce($5, 'notify'), $7) RETURNING id),"
     " q AS (INSERT INTO project_quotas (project_id, gpu_model, max_gpus)"
     "  SELECT p.id, j.key, j.value::int FROM p, json_each_text(coalesce($6::json, '{}')) j)"
     " SELECT id::text FROM p"},
    {"project_get", "SELECT " PROJECT_DOC("p") " AS doc FROM projects p WHERE " BY_REF(
                        "p") " AND " SCOPED("p.id")},
    {"project_settings",
     "SELECT json_build_object('description', p.description, 'budget', json_build_object("
     " 'monthly', p.budget_monthly, 'thresholds_pct', p.budget_thresholds, 'on_exhausted',"
     " p.on_exhausted), 'quotas', coalesce((SELECT json_object_agg(q.gpu_model, q.max_gpus"
     " ORDER BY q.gpu_model) FROM project_quotas q WHERE q.project_id = p.id), '{}'::json))::text"
     " AS doc FROM projects p WHERE p.id = $1::uuid FOR UPDATE"},
    {"project_update",
     "WITH u AS (UPDATE projects SET description = coalesce($2, description),"
     "  budget_monthly = CASE WHEN $3::text IS NULL THEN budget_monthly"
     "   ELSE nullif($3, '')::numeric END,"
     "  budget_thresholds = coalesce($4::int[], budget_thresholds),"
     "  on_exhausted = coalesce($5, on_exhausted), revision = revision + 1, updated_at = now()"
     "  WHERE id = $1::uuid RETURNING id),"
     /* the models left out go; the others are written (the CTE's delete is not seen by
      * the insert: a model kept is updated in place, never inserted twice) */
     " d AS (DELETE FROM project_quotas q USING u WHERE $6::json IS NOT NULL"
     "  AND q.project_id = u.id"
     "  AND q.gpu_model NOT IN (SELECT j.key FROM json_each_text($6::json) j))"
     " INSERT INTO project_quotas (project_id, gpu_model, max_gpus)"
     "  SELECT u.id, j.key, j.value::int FROM u, json_each_text($6::json) j"
     "  WHERE $6::json IS NOT NULL"
     " ON CONFLICT (project_id, gpu_model) DO UPDATE SET max_gpus = EXCLUDED.max_gpus"},
    {"project_delete", "DELETE FROM projects WHERE id = $1::uuid"},
    {"project_list",
     "SELECT " PROJECT_DOC("p") " AS doc, p.seq::text AS key FROM projects p"
                                " WHERE ($1::text IS NULL OR starts_with(p.name, $1)) AND " SCOPED(
                                    "p.id") " AND p.seq > coalesce($3::bigint, 0) ORDER BY p.seq"
                                            " LIMIT $4::int"},
    {"member_list",
     "SELECT json_build_object('subject', m.subject, 'role', m.role, 'created_by', m.created_by,"
     " 'created_at', " DB_TS("m.created_at") ")::text AS doc, m.subject AS key"
                                             " FROM project_members m WHERE m.project_id = "
                                             "$1::uuid AND m.subject > coalesce($2, '')"
                                             " ORDER BY m.subject LIMIT $3::int"},
    {"member_put",
     "WITH b AS (SELECT role FROM project_members WHERE project_id = $1::uuid AND subject = $2"
     "  FOR UPDATE),"
     " u AS (INSERT INTO project_members (project_id, subject, role, created_by)"
     "  VALUES ($1::uuid, $2, $3, $4) ON CONFLICT (project_id, subject)"
     "  DO UPDATE SET role = EXCLUDED.role RETURNING *)"
     " SELECT (SELECT role FROM b) AS before, json_build_object('subject', u.subject, 'role',"
     " u.role, 'created_by', u.created_by, 'created_at', " DB_TS(
         "u.created_at") ")::text AS doc FROM u"},
    {"member_delete", "DELETE FROM project_members WHERE project_id = $1::uuid AND subject = $2"
                      " RETURNING role"},
    {"project_refs", "SELECT id::text, name FROM projects ORDER BY name"},
    {"memberships", "SELECT project_id::text, role FROM project_members WHERE subject = $1"
                    " ORDER BY project_id LIMIT $2::int"},
    /* The lock, then the reads in a statement of their own: under READ COMMITTED a
     * statement's snapshot is taken when it starts, so counts read by the statement that
     * waited for the lock would miss the hosts the holder committed meanwhile. */
    {"project_quota_lock", "SELECT 1 FROM projects p WHERE p.id = $1::uuid FOR UPDATE OF p"},
    {"project_quota_read",
     "SELECT (SELECT q.max_gpus FROM project_quotas q WHERE q.project_id = $1::uuid"
     "   AND q.gpu_model = $2) AS max_gpus,"
     " (SELECT coalesce(sum(coalesce((pl.spec->>'gpu_count')::int, 0)), 0) FROM hosts h"
     "   JOIN pools pl ON pl.id = h.pool_id WHERE h.project_id = $1::uuid"
     "   AND pl.gpu_model = $2 AND h.state <> 'stopped' AND h.id IS DISTINCT FROM $3::uuid)"
     "   AS held"},
    {"resource_project", "SELECT audit_project($1, $2)::text AS project_id"},
};
const size_t db_project_nstmts = sizeof db_project_stmts / sizeof db_project_stmts[0];

enum db_status db_project_insert(struct db_conn *c, const struct db_project_in *in, char **doc,
                                 char id[37])
{
    const char *p[7] = {in->name,         in->description, in->budget_monthly, in->thresholds,
                        in->on_exhausted, in->quotas,      in->created_by};
    *doc = NULL;
    enum db_status s = db_exec_returning_id(c, "project_insert", 7, p, id);
    /* read back in a second statement: the CTE's quota rows are not visible to it */
    return s == DB_ONE_RESULT ? db_project_get(c, id, NULL, doc) : s;
}

enum db_status db_project_get(struct db_conn *c, const char *ref, const char *scope, char **doc)
{
    const char *p[2] = {ref, scope};
    return db_exec_doc(c, "project_get", 2, p, doc);
}

enum db_status db_project_settings(struct db_conn *c, const char *id, char **json)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "project_settings", 1, p, json);
}

enum db_status db_project_update(struct db_conn *c, const char *id, const struct db_project_in *in,
                                 char **doc)
{
    const char *p[6] = {
        id, in->description, in->budget_monthly, in->thresholds, in->on_exhausted, in->quotas};
    enum db_status s = db_exec_noresult(c, "project_update", 6, p);
    if (s < 0)
        return s;
    return db_project_get(c, id, NULL, doc);
}

enum db_status db_project_delete(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "project_delete", 1, p);
}

enum db_status db_project_list(struct db_conn *c, const struct db_project_filter *f,
                               struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->name_prefix, f->scope, f->after_seq, limit};
    return db_exec_page(c, "project_list", 4, p, page);
}

enum db_status db_member_list(struct db_conn *c, const char *project_id, const char *after,
                              long limit, struct db_page *page)
{
    char lim[24];
    snprintf(lim, sizeof lim, "%ld", limit);
    const char *p[3] = {project_id, after, lim};
    return db_exec_page(c, "member_list", 3, p, page);
}

enum db_status db_member_put(struct db_conn *c, const char *project_id, const char *subject,
                             const char *role, const char *by, char before[16], char **doc)
{
    const char *p[4] = {project_id, subject, role, by};
    PGresult *r;
    *doc = NULL;
    before[0] = '\0';
    enum db_status s = db_exec(c, "member_put", 4, p, &r);
    if (s < 0)
        return s;
    int oom = 0;
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "before", before, 16);
        *doc = db_dup(r, 0, "doc", &oom);
    }
    PQclear(r);
    return oom ? DB_HARD_ERROR : s;
}

enum db_status db_member_delete(struct db_conn *c, const char *project_id, const char *subject,
                                char before[16])
{
    const char *p[2] = {project_id, subject};
    PGresult *r;
    before[0] = '\0';
    enum db_status s = db_exec(c, "member_delete", 2, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "role", before, 16);
    PQclear(r);
    return s;
}

enum db_status db_project_refs(struct db_conn *c, struct db_project_ref **out, int *n)
{
    PGresult *r;
    *out = NULL;
    *n = 0;
    enum db_status s = db_exec(c, "project_refs", 0, NULL, &r);
    if (s < 0)
        return s;
    int rows = PQntuples(r);
    struct db_project_ref *refs = calloc(rows > 0 ? (size_t)rows : 1, sizeof *refs);
    if (refs == NULL) {
        PQclear(r);
        return DB_HARD_ERROR;
    }
    for (int i = 0; i < rows; i++) {
        db_copy(r, i, "id", refs[i].id, sizeof refs[i].id);
        db_copy(r, i, "name", refs[i].name, sizeof refs[i].name);
    }
    PQclear(r);
    *out = refs;
    *n = rows;
    return rows ? DB_MANY_RESULTS : DB_NO_RESULTS;
}

enum db_status db_memberships(struct db_conn *c, const char *subject, struct db_membership *out,
                              int max, int *n)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", max);
    const char *p[2] = {subject, lim};
    PGresult *r;
    *n = 0;
    enum db_status s = db_exec(c, "memberships", 2, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r) && i < max; i++) {
        db_copy(r, i, "project_id", out[i].project_id, sizeof out[i].project_id);
        db_copy(r, i, "role", out[i].role, sizeof out[i].role);
        (*n)++;
    }
    PQclear(r);
    return s;
}

enum db_status db_project_quota_lock(struct db_conn *c, const char *project_id,
                                     const char *gpu_model, const char *host_id, long *limit,
                                     long *held)
{
    const char *p[3] = {project_id, gpu_model, host_id};
    PGresult *r;
    *limit = -1;
    *held = 0;
    enum db_status s = db_exec_noresult(c, "project_quota_lock", 1, p);
    if (s != DB_ONE_RESULT)
        return s;
    s = db_exec(c, "project_quota_read", 3, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        *limit = db_isnull(r, 0, "max_gpus") ? -1 : db_long(r, 0, "max_gpus");
        *held = db_long(r, 0, "held");
    }
    PQclear(r);
    return s;
}

enum db_status db_resource_project(struct db_conn *c, const char *type, const char *id,
                                   char project_id[37])
{
    const char *p[2] = {type, id};
    enum db_status s = db_exec_returning_id(c, "resource_project", 2, p, project_id);
    return s == DB_ONE_RESULT && project_id[0] == '\0' ? DB_NO_RESULTS : s;
}
