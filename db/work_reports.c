/* work_reports.c — see work_reports.h. A batch travels as 25 array parameters and is
 * unnested by PostgreSQL: one INSERT … ON CONFLICT DO NOTHING per batch, never one
 * statement per record. */
#include "db/work_reports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

#define WR_INPUT                                                                          \
    "SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::timestamptz[],"  \
    " $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::float8[], $10::float8[]," \
    " $11::float8[], $12::bigint[], $13::float8[], $14::float8[], $15::float8[],"         \
    " $16::float8[], $17::float8[], $18::float8[], $19::float8[], $20::float8[],"         \
    " $21::float8[], $22::float8[], $23::float8[], $24::float8[], $25::float8[])"         \
    " WITH ORDINALITY AS t(host_id, brief_id, window_start, window_end, unit, completed," \
    " failed, retried, busy_seconds, p95_latency_ms, queue_delay_ms, bytes_moved,"        \
    " storage_gb," WR_PHASES "," WR_FAILURES ", idx)"
#define WR_PHASES                                                         \
    " phase_queue_seconds, phase_load_seconds, phase_preprocess_seconds," \
    " phase_compute_seconds, phase_communication_seconds, phase_write_seconds"
/* the failure classes (migrations/0035) */
#define WR_FAILURES                                                      \
    " failures_oom, failures_timeout, failures_data, failures_hardware," \
    " failures_preempted, failures_other"
#define WR_COLS                                                                         \
    "host_id, brief_id, window_start, window_end, unit, completed, failed, retried,"    \
    " busy_seconds, p95_latency_ms, queue_delay_ms, bytes_moved, storage_gb," WR_PHASES \
    "," WR_FAILURES

// clang-format off
/* phases: the given ones, or null when the report gave none */
#define WR_PHASES_DOC                                                                           \
    "CASE WHEN num_nonnulls(" WR_PHASES ") > 0 THEN json_strip_nulls(json_build_object("        \
    "'queue', phase_queue_seconds, 'load', phase_load_seconds,"                                 \
    " 'preprocess', phase_preprocess_seconds, 'compute', phase_compute_seconds,"                \
    " 'communication', phase_communication_seconds, 'write', phase_write_seconds)) END"
/* failures: the given classes, or null when the report gave none */
#define WR_FAILURES_DOC                                                                         \
    "CASE WHEN num_nonnulls(" WR_FAILURES ") > 0 THEN json_strip_nulls(json_build_object("      \
    "'oom', failures_oom, 'timeout', failures_timeout, 'data', failures_data,"                  \
    " 'hardware', failures_hardware, 'preempted', failures_preempted,"                          \
    " 'other', failures_other)) END"
#define WR_DOC                                                                                  \
    "json_build_object('id', id, 'host_id', host_id,"                                           \
    " 'project', " DB_HOST_PROJECT_JSON("work_reports.host_id") ","                             \
    " 'brief_id', brief_id, 'window_start', "                                                   \
    DB_TS("window_start") ", 'window_end', " DB_TS("window_end") ","                            \
    " 'unit', unit, 'completed', completed, 'failed', failed, 'retried', " "retried,"           \
    " 'busy_seconds', busy_seconds, 'p95_latency_ms', p95_latency_ms,"                          \
    " 'queue_delay_ms', queue_delay_ms, 'bytes_moved', bytes_moved, "                           \
    "'storage_gb', storage_gb, 'phases', " WR_PHASES_DOC ","                                       \
    " 'failures', " WR_FAILURES_DOC ","                                       \
    " 'reported_by', reported_by, 'received_at', "                                              \
    DB_TS("received_at") ")::text"
// clang-format on

const struct db_stmt db_work_report_stmts[] = {
    {"wr_check_refs",
     "SELECT (i.idx - 1)::int AS idx, (h.id IS NULL) AS bad_host"
     " FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS i(host_id, brief_id, idx)"
     " LEFT JOIN hosts h ON h.id = i.host_id LEFT JOIN briefs b ON b.id = i.brief_id"
     " WHERE h.id IS NULL OR (i.brief_id IS NOT NULL AND b.id IS NULL) ORDER BY i.idx"},
    /* A record is in scope when its host is named (id or name) in hosts, or its host's
     * pool is named (id or name) in pools. A host that does not exist is left to the
     * foreign key (400 invalid_field, as for any reporter). The scope is resolved once
     * per batch (s: the named hosts, the named pools' ids), not once per record: with
     * 50 pools in a token, the per-record expansion cost 37 ms a 1,000-record batch
     * (issue 28). */
    {"wr_out_of_scope",
     "WITH s AS (SELECT array(SELECT json_array_elements_text($2::json -> 'hosts')) AS hosts,"
     " array(SELECT p.id FROM pools p"
     " WHERE p.id::text IN (SELECT json_array_elements_text($2::json -> 'pools'))"
     " OR p.name IN (SELECT json_array_elements_text($2::json -> 'pools'))) AS pools),"
     " o AS (SELECT i.idx, i.host_id FROM unnest($1::uuid[]) WITH ORDINALITY AS i(host_id, idx)"
     " JOIN hosts h ON h.id = i.host_id CROSS JOIN s"
     " WHERE ($3::uuid[] IS NOT NULL AND NOT h.project_id = ANY ($3::uuid[]))"
     " OR ($2::json IS NOT NULL"
     " AND NOT (h.id::text = ANY (s.hosts) OR h.name = ANY (s.hosts)"
     " OR coalesce(h.pool_id = ANY (s.pools), false))))"
     " SELECT (idx - 1)::int AS idx, host_id::text AS host_id, (SELECT count(*) FROM o)::int AS n"
     " FROM o ORDER BY idx LIMIT 1"},
    {"wr_insert",
     "WITH i AS (" WR_INPUT "), ins AS (INSERT INTO work_reports (" WR_COLS ", reported_by)"
     " SELECT " WR_COLS ", $26 FROM i ORDER BY idx"
     " ON CONFLICT (host_id, window_start, window_end, unit) DO NOTHING RETURNING 1)"
     " SELECT count(*)::text FROM ins"},
    {"wr_rollups_settle", "SELECT settled, remaining FROM work_report_rollups_settle($1::bigint)"},
    {"wr_rollups_backlog", "SELECT coalesce(sum(upper(r) - lower(r)), 0),"
                           " coalesce(extract(epoch FROM now() - min(p.added_at)), 0)::float8"
                           " FROM work_report_rollup_pending p, unnest(p.seqs) AS r"},
    {"wr_conflicts",
     "SELECT (i.idx - 1)::int AS idx FROM (" WR_INPUT ") i JOIN work_reports w"
     " ON w.host_id = i.host_id AND w.window_start = i.window_start"
     " AND w.window_end = i.window_end AND w.unit = i.unit"
     " WHERE (w.brief_id, w.completed, w.failed, w.retried, w.busy_seconds, w.p95_latency_ms,"
     " w.queue_delay_ms, w.bytes_moved, w.storage_gb, w.phase_queue_seconds,"
     " w.phase_load_seconds, w.phase_preprocess_seconds, w.phase_compute_seconds,"
     " w.phase_communication_seconds, w.phase_write_seconds, w.failures_oom,"
     " w.failures_timeout, w.failures_data, w.failures_hardware, w.failures_preempted,"
     " w.failures_other) IS DISTINCT FROM (i.brief_id,"
     " i.completed, i.failed, i.retried, i.busy_seconds, i.p95_latency_ms, i.queue_delay_ms,"
     " i.bytes_moved, i.storage_gb, i.phase_queue_seconds, i.phase_load_seconds,"
     " i.phase_preprocess_seconds, i.phase_compute_seconds, i.phase_communication_seconds,"
     " i.phase_write_seconds, i.failures_oom, i.failures_timeout, i.failures_data,"
     " i.failures_hardware, i.failures_preempted, i.failures_other) ORDER BY i.idx"},
    /* The phases of a record add up to at most its window × its host's GPUs: the GPU
     * count the last provisioning found (facts.gpu_count), else the pool's, else 1. A
     * relative tolerance of 1e-9 (and 1 µs) absorbs float rounding. Unknown hosts are
     * left to the insert's foreign key. */
    {"wr_phase_excess",
     "WITH i AS (SELECT idx, host_id,"
     " extract(epoch FROM window_end - window_start)::float8 AS window_s,"
     " coalesce(q, 0) + coalesce(l, 0) + coalesce(pp, 0) + coalesce(c, 0) + coalesce(m, 0)"
     " + coalesce(w, 0) AS phase_s"
     " FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::float8[], $5::float8[],"
     " $6::float8[], $7::float8[], $8::float8[], $9::float8[]) WITH ORDINALITY"
     " AS t(host_id, window_start, window_end, q, l, pp, c, m, w, idx)"
     " WHERE num_nonnulls(q, l, pp, c, m, w) > 0),"
     " o AS (SELECT i.idx, i.phase_s, i.window_s, g.gpus FROM i JOIN hosts h ON h.id = i.host_id"
     " LEFT JOIN pools p ON p.id = h.pool_id CROSS JOIN LATERAL (SELECT greatest(1, coalesce("
     " CASE WHEN jsonb_typeof(h.facts -> 'gpu_count') = 'number'"
     " THEN (h.facts ->> 'gpu_count')::float8 END, (p.spec ->> 'gpu_count')::float8, 1)) AS gpus) g"
     " WHERE i.phase_s > i.window_s * g.gpus * (1 + 1e-9) + 1e-6)"
     " SELECT (idx - 1)::int AS idx, phase_s::text AS phase_s, window_s::text AS window_s,"
     " gpus::text AS gpus, (SELECT count(*) FROM o)::int AS n FROM o ORDER BY idx LIMIT 1"},
    {"wr_list", "SELECT " WR_DOC " AS doc, seq::text AS key FROM work_reports"
                " WHERE ($1::uuid IS NULL OR host_id = $1::uuid)"
                "   AND ($2::text IS NULL OR unit = $2)"
                "   AND ($3::timestamptz IS NULL OR window_start >= $3::timestamptz)"
                "   AND ($4::timestamptz IS NULL OR window_start < $4::timestamptz)"
                "   AND seq > coalesce($5::bigint, 0)"
                "   AND " DB_HOST_IN_SCOPE("host_id", "$7", "$8") " ORDER BY seq LIMIT $6::int"},
};
const size_t db_work_report_nstmts = sizeof db_work_report_stmts / sizeof db_work_report_stmts[0];

enum db_status db_wr_check_refs(struct db_conn *c, const struct db_wr_batch *b, int *first,
                                int *first_is_host, int *count)
{
    PGresult *r;
    *first = -1;
    *first_is_host = 0;
    *count = 0;
    enum db_status s = db_exec(c, "wr_check_refs", 2, b->col, &r);
    if (s < 0)
        return s;
    *count = PQntuples(r);
    if (*count > 0) {
        *first = (int)db_long(r, 0, "idx");
        *first_is_host = db_bool(r, 0, "bad_host");
    }
    PQclear(r);
    return s;
}

enum db_status db_wr_out_of_scope(struct db_conn *c, const struct db_wr_batch *b, const char *scope,
                                  const char *projects, int *first, char *host_id, int *count)
{
    PGresult *r;
    *first = -1;
    *count = 0;
    host_id[0] = '\0';
    const char *p[3] = {b->col[0], scope, projects};
    enum db_status s = db_exec(c, "wr_out_of_scope", 3, p, &r);
    if (s < 0)
        return s;
    if (PQntuples(r) == 1) {
        *first = (int)db_long(r, 0, "idx");
        *count = (int)db_long(r, 0, "n");
        snprintf(host_id, 37, "%s", db_str(r, 0, "host_id"));
    }
    PQclear(r);
    return s;
}

enum db_status db_wr_phase_excess(struct db_conn *c, const struct db_wr_batch *b,
                                  struct db_wr_phase_excess *out)
{
    memset(out, 0, sizeof *out);
    out->first = -1;
    const char *p[9] = {b->col[0], b->col[2], b->col[3]};
    for (int i = 0; i < DB_WR_PHASES; i++)
        p[3 + i] = b->col[DB_WR_FIRST_PHASE + i];
    PGresult *r;
    enum db_status s = db_exec(c, "wr_phase_excess", 9, p, &r);
    if (s < 0)
        return s;
    if (PQntuples(r) == 1) {
        out->first = (int)db_long(r, 0, "idx");
        out->count = (int)db_long(r, 0, "n");
        out->phase_seconds = strtod(db_str(r, 0, "phase_s"), NULL);
        out->window_seconds = strtod(db_str(r, 0, "window_s"), NULL);
        out->gpus = strtod(db_str(r, 0, "gpus"), NULL);
    }
    PQclear(r);
    return s;
}

enum db_status db_wr_insert(struct db_conn *c, const struct db_wr_batch *b, const char *reported_by,
                            long *inserted)
{
    const char *p[DB_WR_COLUMNS + 1];
    for (int i = 0; i < DB_WR_COLUMNS; i++)
        p[i] = b->col[i];
    p[DB_WR_COLUMNS] = reported_by;
    PGresult *r;
    enum db_status s = db_exec(c, "wr_insert", DB_WR_COLUMNS + 1, p, &r);
    if (s < 0)
        return s;
    *inserted = PQntuples(r) == 1 ? db_long(r, 0, "count") : 0;
    PQclear(r);
    return s;
}

enum db_status db_wr_conflicts(struct db_conn *c, const struct db_wr_batch *b, int *first,
                               int *count)
{
    PGresult *r;
    *first = -1;
    *count = 0;
    enum db_status s = db_exec(c, "wr_conflicts", DB_WR_COLUMNS, b->col, &r);
    if (s < 0)
        return s;
    *count = PQntuples(r);
    if (*count > 0)
        *first = (int)db_long(r, 0, "idx");
    PQclear(r);
    return s;
}

enum db_status db_wr_list(struct db_conn *c, const struct db_wr_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[8] = {f->host_id,   f->unit, f->since, f->until,
                        f->after_seq, limit,   f->scope, f->project_id};
    return db_exec_page(c, "wr_list", 8, p, page);
}

enum db_status db_wr_rollups_settle(struct db_conn *c, long max, long *settled, long *remaining)
{
    char m[24];
    snprintf(m, sizeof m, "%ld", max);
    const char *p[1] = {m};
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "wr_rollups_settle", 1, p, &r);
    if (s == DB_ONE_RESULT) {
        *settled = db_val_long(r, 0, 0);
        *remaining = db_val_long(r, 0, 1);
    } else if (s >= 0) {
        s = DB_HARD_ERROR; /* the function always answers one row */
    }
    PQclear(r);
    return s;
}

enum db_status db_wr_rollups_backlog(struct db_conn *c, long *reports, double *age_s)
{
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "wr_rollups_backlog", 0, NULL, &r);
    if (s == DB_ONE_RESULT) {
        *reports = db_val_long(r, 0, 0);
        *age_s = db_val_num(r, 0, 1);
    } else if (s >= 0) {
        s = DB_HARD_ERROR; /* an aggregate answers one row */
    }
    PQclear(r);
    return s;
}
