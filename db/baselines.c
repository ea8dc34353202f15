/* baselines.c — see baselines.h. The gate's baselines are recorded by a trigger
 * (migrations/0020_baselines.sql); the report's here, from the stored reports. For the
 * comparison (service/baseline.c) it reads the run's baseline and the previous stack's,
 * decoded by column name into common/baseline.h's struct. */
#include "db/baselines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/decode.h"
#include "db/scope_sql.h"

// clang-format off
#define BL_DOC                                                                                 \
    "json_build_object('id', b.id, 'source', b.source, 'gate_run_id', b.gate_run_id,"          \
    " 'work_report_id', b.work_report_id, 'window_start', " DB_TS("b.window_start") ","        \
    " 'window_end', " DB_TS("b.window_end") ", 'host_id', b.host_id, 'pool_id', b.pool_id,"    \
    " 'project', " DB_POOL_PROJECT_JSON("b.pool_id") ","                                       \
    " 'stack_id', b.stack_id, 'image_digest', b.image_digest, 'framework', b.framework,"       \
    " 'framework_version', b.framework_version, 'driver_version', b.driver_version,"           \
    " 'cuda_version', b.cuda_version, 'model_revision', b.model_revision,"                     \
    " 'gpu_model', b.gpu_model, 'gpu_count', b.gpu_count, 'workload_hash', b.workload_hash,"   \
    " 'input', b.input, 'concurrency', b.concurrency, 'cache', b.cache, 'metric', b.metric,"   \
    " 'value', b.value, 'measured_at', " DB_TS("b.measured_at") ","                            \
    " 'created_at', " DB_TS("b.created_at") ")::text"
// clang-format on
#define BL_CONDS                                                                 \
    "b.id::text AS id, b.framework, b.model_revision, b.gpu_model, b.gpu_count," \
    " b.workload_hash, b.metric, b.input, b.concurrency, b.cache, b.value,"      \
    " b.stack_id::text AS stack_id"
#define BL_REPORTS                                                                      \
    "json_to_recordset($1::json) AS r(idx int, host_id uuid, window_start timestamptz," \
    " window_end timestamptz, unit text, input text, concurrency int, cache text)"

const struct db_stmt db_baseline_stmts[] = {
    {"baseline_of_run", "SELECT " BL_CONDS " FROM baselines b WHERE b.gate_run_id = $1::uuid"
                        " AND " DB_POOL_IN_SCOPE("b.pool_id", "$2", "NULL")},
    {"baseline_candidates",
     "SELECT " BL_CONDS " FROM baselines b WHERE b.stack_id = $1::uuid AND b.id <> $2::uuid"
     " AND " DB_POOL_IN_SCOPE("b.pool_id", "$4", "NULL") " ORDER BY b.seq DESC LIMIT $3::int"},
    {"baseline_get", "SELECT " BL_DOC " AS doc FROM baselines b WHERE b.id = $1::uuid"
                     " AND " DB_POOL_IN_SCOPE("b.pool_id", "$2", "NULL")},
    {"baseline_list",
     "SELECT " BL_DOC " AS doc, b.seq::text AS key FROM baselines b"
     " WHERE ($1::uuid IS NULL OR b.pool_id = $1::uuid)"
     "   AND ($2::uuid IS NULL OR b.stack_id = $2::uuid)"
     "   AND ($3::text IS NULL OR b.gpu_model = $3::text)"
     "   AND b.seq < coalesce($4::bigint, 9223372036854775807)"
     "   AND " DB_POOL_IN_SCOPE("b.pool_id", "$6", "$7") " ORDER BY b.seq DESC LIMIT $5::int"},
    {"baseline_reports_unstacked",
     "SELECT r.idx, count(*) OVER ()::int AS n FROM " BL_REPORTS
     " JOIN hosts h ON h.id = r.host_id WHERE h.current_stack_id IS NULL ORDER BY r.idx LIMIT 1"},
    {"baseline_reports_insert",
     "WITH ins AS (INSERT INTO baselines (source, work_report_id, window_start, window_end,"
     " host_id, pool_id, stack_id, image_digest, framework, framework_version, driver_version,"
     " cuda_version, model_revision, gpu_model, gpu_count, workload_hash, input, concurrency,"
     " cache, metric, value, measured_at)"
     " SELECT 'work_report', w.id, w.window_start, w.window_end, h.id, h.pool_id, s.id,"
     " s.image_digest, s.framework, s.spec #>> '{framework,version}', s.spec ->> 'driver_version',"
     " s.spec ->> 'cuda_version', s.spec ->> 'model_revision',"
     " (SELECT nullif(left(string_agg(DISTINCT g ->> 'name', ', ' ORDER BY g ->> 'name'), 400),"
     "   '') FROM jsonb_array_elements(CASE WHEN jsonb_typeof(h.facts -> 'gpus') = 'array'"
     "   THEN h.facts -> 'gpus' ELSE '[]'::jsonb END) AS g),"
     " CASE WHEN jsonb_typeof(h.facts -> 'gpu_count') = 'number'"
     "   THEN (h.facts ->> 'gpu_count')::int END,"
     " NULL, r.input, r.concurrency, r.cache, w.unit || '_per_second',"
     " w.completed / extract(epoch FROM w.window_end - w.window_start)::float8, w.window_end"
     " FROM " BL_REPORTS " JOIN work_reports w ON w.host_id = r.host_id"
     "   AND w.window_start = r.window_start AND w.window_end = r.window_end AND w.unit = r.unit"
     " JOIN hosts h ON h.id = r.host_id JOIN stacks s ON s.id = h.current_stack_id"
     " WHERE NOT EXISTS (SELECT 1 FROM baselines x WHERE x.work_report_id = w.id)"
     " ORDER BY r.idx ON CONFLICT DO NOTHING RETURNING 1)"
     " SELECT count(*)::text AS count FROM ins"},
};
const size_t db_baseline_nstmts = sizeof db_baseline_stmts / sizeof db_baseline_stmts[0];

/* The conditions of row i (strings point into r, which must outlive b). */
static void decode(const PGresult *r, int i, const int *col, struct baseline *b)
{
    memset(b, 0, sizeof *b);
    b->id = db_val(r, i, col[0]);
    for (int k = 0; k < BL__COUNT; k++) {
        struct baseline_value *v = &b->cond[k];
        v->is_null = db_val_isnull(r, i, col[1 + k]);
        if (baseline_cond_is_int((enum baseline_cond)k))
            v->i = db_val_long(r, i, col[1 + k]);
        else
            v->s = db_val(r, i, col[1 + k]);
    }
    b->value = db_val_num(r, i, col[1 + BL__COUNT]);
}

enum db_status db_baselines_decode(PGresult *r, struct db_baselines *out)
{
    size_t n = (size_t)PQntuples(r);
    memset(out, 0, sizeof *out);
    out->res = r;
    out->rows = calloc(n + 1, sizeof *out->rows);
    if (out->rows == NULL) {
        db_baselines_free(out);
        return DB_HARD_ERROR;
    }
    if (n > 0) {
        const char *names[2 + BL__COUNT];
        int col[2 + BL__COUNT];
        names[0] = "id";
        for (int k = 0; k < BL__COUNT; k++)
            names[1 + k] = baseline_cond_names[k];
        names[1 + BL__COUNT] = "value";
        db_cols(r, names, 2 + BL__COUNT, col);
        for (size_t i = 0; i < n; i++)
            decode(r, (int)i, col, &out->rows[i]);
    }
    out->n = n;
    return n == 0 ? DB_NO_RESULTS : n == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

void db_baselines_free(struct db_baselines *b)
{
    free(b->rows);
    PQclear(b->res);
    memset(b, 0, sizeof *b);
}

/* Runs statement name and decodes its rows into *out (emptied first). */
static enum db_status read_baselines(struct db_conn *c, const char *name, int n,
                                     const char *const *p, struct db_baselines *out)
{
    PGresult *r = NULL;
    db_baselines_free(out);
    enum db_status s = db_exec(c, name, n, p, &r);
    return s < 0 ? s : db_baselines_decode(r, out);
}

enum db_status db_baseline_of_run(struct db_conn *c, const char *gate_run_id, const char *scope,
                                  struct db_baselines *out)
{
    const char *p[2] = {gate_run_id, scope};
    return read_baselines(c, "baseline_of_run", 2, p, out);
}

enum db_status db_baseline_candidates(struct db_conn *c, const char *stack_id,
                                      const char *except_id, const char *scope, int limit,
                                      struct db_baselines *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {stack_id, except_id, lim, scope};
    return read_baselines(c, "baseline_candidates", 4, p, out);
}

enum db_status db_baseline_reports_unstacked(struct db_conn *c, const char *records, int *first,
                                             int *count)
{
    PGresult *r;
    *first = -1;
    *count = 0;
    const char *p[1] = {records};
    enum db_status s = db_exec(c, "baseline_reports_unstacked", 1, p, &r);
    if (s < 0)
        return s;
    if (PQntuples(r) == 1) {
        *first = (int)db_long(r, 0, "idx");
        *count = (int)db_long(r, 0, "n");
    }
    PQclear(r);
    return s;
}

enum db_status db_baseline_reports_insert(struct db_conn *c, const char *records, long *inserted)
{
    PGresult *r;
    *inserted = 0;
    const char *p[1] = {records};
    enum db_status s = db_exec(c, "baseline_reports_insert", 1, p, &r);
    if (s < 0)
        return s;
    *inserted = PQntuples(r) == 1 ? db_long(r, 0, "count") : 0;
    PQclear(r);
    return s;
}

enum db_status db_baseline_list(struct db_conn *c, const struct db_baseline_filter *f,
                                struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->pool_id, f->stack_id, f->gpu_model, f->before_seq,
                        limit,      f->scope,    f->project_id};
    return db_exec_page(c, "baseline_list", 7, p, page);
}

enum db_status db_baseline_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "baseline_get", 2, p, doc);
}
