/* gates.c — gate runs. */
#include "db/gates.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/decode.h"
#include "db/scope_sql.h"

// clang-format off
#define RUN_DOC(g)                                                                          \
    "json_build_object('id', " g ".id, 'kind', " g ".kind, 'host_id', " g ".host_id,"       \
    " 'project', " DB_HOST_PROJECT_JSON(g ".host_id") ","                                    \
    " 'job_id', " g ".job_id, 'stack_id', " g ".stack_id, 'pool_id', " g ".pool_id,"        \
    " 'gate_version', " g ".gate_version, 'diag_level', " g ".diag_level," " 'verdict', " g \
    ".verdict, 'reason', " g ".reason, 'checks', " g ".checks," " 'connect_ms', " g         \
    ".connect_ms, 'started_at', " DB_TS(g ".started_at") "," " 'finished_at', "             \
    DB_TS(g ".finished_at") ")::text"
// clang-format on

/* The readiness row's pieces. SPEC_STR: a string member of a spec (json) as text, NULL
 * when absent or not a string. CHECK_OF: the first check named `name` of run `run`'s
 * checks, as the lateral row `alias` (status and message when strings, the values as JSON
 * text); all NULL without such a run or check. */
// clang-format off
#define SPEC_STR(t, key)                                                                  \
    "CASE WHEN json_typeof(" t ".spec->'" key "') = 'string' THEN " t ".spec->>'" key "'" \
    " END AS " key
#define CHECK_OF(run, name, alias)                                                             \
    " LEFT JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(x.c->'status') = 'string'"              \
    "   THEN x.c->>'status' END AS status, (x.c->'values')::text AS vals,"                     \
    "   CASE WHEN jsonb_typeof(x.c->'message') = 'string' THEN x.c->>'message' END AS message" \
    "   FROM jsonb_array_elements(" run ".checks) WITH ORDINALITY AS x(c, ord)"                \
    "   WHERE x.c->>'name' = '" name "' ORDER BY x.ord LIMIT 1) " alias " ON true"
#define READINESS_SQL                                                                        \
    "SELECT h.id::text AS host_id, h.state, h.host_key_sha256,"                              \
    " (" DB_PROJECT_JSON("h.project_id") ")::text AS project,"                               \
    " h.current_stack_id::text AS current_stack_id,"                                         \
    " CASE WHEN jsonb_typeof(h.facts->'filesystems') = 'string'"                             \
    "   THEN h.facts->>'filesystems' END AS filesystems,"                                    \
    " c.id::text AS credential_id, c.key_type, p.id::text AS pool_id,"                       \
    " " SPEC_STR("p", "durable_path") ", " SPEC_STR("p", "scratch_path") ","                 \
    " " SPEC_STR("p", "stop_command") ","                                                    \
    " coalesce((p.spec->'auto_stop')::text = 'true', false) AS auto_stop,"                   \
    " CASE WHEN json_typeof(p.spec->'idle_stop_after_seconds') = 'number'"                   \
    "   THEN (p.spec->>'idle_stop_after_seconds')::numeric::bigint END"                      \
    "   AS idle_stop_after_seconds,"                                                         \
    " s.id::text AS stack_id, s.image_digest, " SPEC_STR("s", "driver_version") ","          \
    " " SPEC_STR("s", "cuda_version") ","                                                    \
    " g.id::text AS gate_id, g.stack_id::text AS gate_stack_id,"                             \
    " gt.status AS topology_status, gt.vals AS topology_values,"                             \
    " gw.status AS workload_status, gw.vals AS workload_values,"                             \
    " l.id::text AS last_gate_id, lo.status AS observability_status,"                        \
    " lo.message AS observability_message,"                                                  \
    " (SELECT count(*) FROM gate_runs a WHERE a.host_id = h.id AND a.kind = 'gate'"          \
    "   AND a.verdict = 'accept') AS accepted_gate_runs,"                                    \
    " (SELECT count(*) FROM jobs j WHERE j.host_id = h.id AND j.kind = 'provision'"          \
    "   AND j.state = 'succeeded') AS successful_provisionings,"                             \
    " dr.id::text AS drill_id, dr.host_id::text AS drill_host_id, dr.verdict AS drill_verdict," \
    " dr.reason AS drill_reason, " DB_TS("dr.finished_at") " AS drill_finished_at,"           \
    " coalesce(dr.recovery_seconds, -1) AS drill_recovery_seconds,"                          \
    " coalesce(dr.max_recovery_seconds, -1) AS drill_max_recovery_seconds,"                  \
    " extract(epoch FROM now() - dr.finished_at) AS drill_age_seconds,"                      \
    " CASE WHEN json_typeof(p.spec->'drill'->'every_days') = 'number'"                       \
    "   THEN (p.spec->'drill'->>'every_days')::numeric::bigint ELSE 0 END AS drill_every_days" \
    " FROM hosts h JOIN pools p ON p.id = h.pool_id"                                         \
    " LEFT JOIN LATERAL (SELECT d.id, d.host_id, d.verdict, d.reason, d.finished_at,"        \
    "   d.recovery_seconds, d.max_recovery_seconds FROM drills d WHERE d.pool_id = h.pool_id" \
    "   ORDER BY d.seq DESC LIMIT 1) dr ON true"                                             \
    " LEFT JOIN credentials c ON c.id = h.credential_id"                                     \
    " LEFT JOIN stacks s ON s.id = h.current_stack_id"                                       \
    " LEFT JOIN gate_runs g ON g.id = h.accepted_gate_run_id"                                \
    CHECK_OF("g", "topology", "gt") CHECK_OF("g", "workload", "gw")                          \
    " LEFT JOIN LATERAL (SELECT r.id, r.checks FROM gate_runs r WHERE r.host_id = h.id"      \
    "   AND r.kind = 'gate' ORDER BY r.seq DESC LIMIT 1) l ON true"                          \
    CHECK_OF("l", "observability", "lo")                                                     \
    " WHERE h.id = $1::uuid AND ($2::uuid[] IS NULL OR h.project_id = ANY ($2::uuid[]))"
// clang-format on

const struct db_stmt db_gate_stmts[] = {
    {"gate_context",
     "SELECT h.state, coalesce(h.current_stack_id, h.desired_stack_id)::text AS current_stack_id,"
     " (SELECT s.spec::text FROM stacks s"
     "   WHERE s.id = coalesce(h.current_stack_id, h.desired_stack_id)) AS stack_doc,"
     " p.id::text AS pool_id, p.spec::text AS pool_spec, m.nvidia_smi_name,"
     " coalesce(m.nvidia_smi_memory_total_mib, 0) AS gpu_memory_mib,"
     " p.gate_version, coalesce((SELECT (j.params->>'level')::int FROM jobs j"
     "   WHERE j.id = $2::uuid), 0) AS diag_level,"
     " h.current_stack_id IS NOT NULL AS has_current_stack, h.quarantined_at IS NOT NULL AS held,"
     " array_to_string(coalesce(m.nvidia_smi_na_fields, '{}'), ',') AS na_fields,"
     " (SELECT (j.params->'tests')::text FROM jobs j WHERE j.id = $2::uuid"
     "   AND jsonb_typeof(j.params->'tests') = 'array') AS diag_tests,"
     " (SELECT json_object_agg(x.name, json_build_object('gate_run_id', x.id,"
     "   'finished_at', x.finished_at, 'stack_id', x.stack_id, 'values', x.vals))::text"
     "  FROM (SELECT DISTINCT ON (c->>'name') c->>'name' AS name, r.id, r.finished_at,"
     "   r.stack_id, c->'values' AS vals FROM gate_runs r, jsonb_array_elements(r.checks) c"
     "   WHERE r.host_id = h.id AND r.kind = 'gate' AND r.verdict = 'accept'"
     "   AND c->>'name' IN ('storage_throughput', 'bandwidth', 'workload')"
     "   AND jsonb_typeof(c->'values') = 'object'"
     "   AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $2::uuid AND j.params ? 'tests')"
     "   ORDER BY c->>'name', r.seq DESC) x) AS previous,"
     " (SELECT json_build_object('matched', count(*), 'metric', min(b.metric),"
     "   'reference', percentile_cont(0.5) WITHIN GROUP (ORDER BY b.value),"
     "   'baselines', json_agg(b.id ORDER BY b.seq DESC))::text"
     "  FROM (SELECT b.id, b.seq, b.metric, b.value FROM baselines b"
     "   WHERE b.pool_id = p.id AND b.source = 'gate'"
     "   AND b.workload_hash = workload_hash((p.spec->'gate'->'workload')::jsonb)"
     "   AND b.metric = p.spec->'gate'->'workload'->>'metric'"
     "   AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $2::uuid AND j.params ? 'tests')"
     "   ORDER BY b.seq DESC LIMIT 20) b HAVING count(*) > 0) AS pool_baselines"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " LEFT JOIN gpu_models m ON m.key = p.gpu_model WHERE h.id = $1::uuid"},
    {"gate_run_insert",
     "INSERT INTO gate_runs (kind, host_id, job_id, stack_id, pool_id, gate_version,"
     " diag_level, verdict, reason, checks, connect_ms, inventory, started_at)"
     " VALUES ($1, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::int, $7::int, $8, $9,"
     " $10::jsonb, $11::float8, $12, $13::timestamptz) RETURNING id::text"},
    {"gate_run_get", "SELECT " RUN_DOC("g") " AS doc FROM gate_runs g WHERE g.id = $1::uuid"
                                            " AND " DB_HOST_IN_SCOPE("g.host_id", "$2", "NULL")},
    {"gate_run_list",
     "SELECT " RUN_DOC(
         "g") " AS doc, g.seq::text AS key FROM gate_runs g"
              " WHERE ($1::uuid IS NULL OR g.host_id = $1) AND ($2::text IS NULL OR g.verdict = $2)"
              "   AND ($3::text IS NULL OR g.kind = $3) AND g.seq < coalesce($4::bigint,"
              "   9223372036854775807) AND " DB_HOST_IN_SCOPE(
                  "g.host_id", "$6", "$7") " ORDER BY g.seq DESC LIMIT $5::int"},
    /* The readiness evidence (db_readiness_facts): one row, one round trip. */
    {"readiness_facts", READINESS_SQL},
};
const size_t db_gate_nstmts = sizeof db_gate_stmts / sizeof db_gate_stmts[0];

/* The strings of a gate context and their columns. */
#define F(member, col)                                \
    {                                                 \
        col, offsetof(struct db_gate_context, member) \
    }
static const struct db_str_field context_strings[] = {
    F(state, "state"),         F(current_stack_id, "current_stack_id"),
    F(stack_doc, "stack_doc"), F(pool_id, "pool_id"),
    F(pool_spec, "pool_spec"), F(gpu_name, "nvidia_smi_name"),
    F(na_fields, "na_fields"), F(diag_tests, "diag_tests"),
    F(previous, "previous"),   F(pool_baselines, "pool_baselines"),
};
#undef F
#define NCONTEXT_STRINGS (sizeof context_strings / sizeof context_strings[0])

enum db_status db_gate_context(struct db_conn *c, const char *host_id, const char *job_id,
                               struct db_gate_context *g)
{
    const char *p[2] = {host_id, job_id};
    PGresult *r;
    memset(g, 0, sizeof *g);
    enum db_status s = db_exec(c, "gate_context", 2, p, &r);
    if (s == DB_ONE_RESULT && db_dup_fields(r, 0, context_strings, NCONTEXT_STRINGS, g) != 0)
        s = DB_HARD_ERROR;
    if (s == DB_ONE_RESULT) {
        g->gpu_memory_mib = db_long(r, 0, "gpu_memory_mib");
        g->gate_version = (int)db_long(r, 0, "gate_version");
        g->diag_level = (int)db_long(r, 0, "diag_level");
        g->has_current_stack = db_bool(r, 0, "has_current_stack");
        g->held = db_bool(r, 0, "held");
    }
    PQclear(r);
    return s;
}

void db_gate_context_free(struct db_gate_context *g)
{
    db_free_fields(context_strings, NCONTEXT_STRINGS, g);
    memset(g, 0, sizeof *g);
}

enum db_status db_gate_run_insert(struct db_conn *c, const struct db_gate_run_new *g, char id[37])
{
    char gv[16], dl[16], cm[32];
    snprintf(gv, sizeof gv, "%d", g->gate_version);
    snprintf(dl, sizeof dl, "%d", g->diag_level);
    snprintf(cm, sizeof cm, "%.3f", g->connect_ms);
    const char *p[13] = {g->kind,
                         g->host_id,
                         g->job_id,
                         g->stack_id,
                         g->pool_id,
                         g->gate_version ? gv : NULL,
                         g->diag_level ? dl : NULL,
                         g->verdict,
                         g->reason,
                         g->checks_json,
                         cm,
                         g->inventory,
                         g->started_at};
    PGresult *r;
    enum db_status s = db_exec(c, "gate_run_insert", 13, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "id", id, 37);
    PQclear(r);
    return s;
}

enum db_status db_gate_run_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "gate_run_get", 2, p, doc);
}

enum db_status db_gate_run_list(struct db_conn *c, const struct db_gate_filter *f,
                                struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->host_id, f->verdict, f->kind,      f->after_seq,
                        limit,      f->scope,   f->project_id};
    return db_exec_page(c, "gate_run_list", 7, p, page);
}

/* The strings of the readiness facts; each column is named as its member. */
// clang-format off
#define F(member) {#member, offsetof(struct db_readiness_facts, member)}
// clang-format on
static const struct db_str_field readiness_strings[] = {
    F(host_id),
    F(project),
    F(state),
    F(host_key_sha256),
    F(current_stack_id),
    F(filesystems),
    F(credential_id),
    F(key_type),
    F(pool_id),
    F(durable_path),
    F(scratch_path),
    F(stop_command),
    F(stack_id),
    F(image_digest),
    F(driver_version),
    F(cuda_version),
    F(gate_id),
    F(gate_stack_id),
    F(topology_status),
    F(topology_values),
    F(workload_status),
    F(workload_values),
    F(last_gate_id),
    F(observability_status),
    F(observability_message),
    F(drill_id),
    F(drill_host_id),
    F(drill_verdict),
    F(drill_reason),
    F(drill_finished_at),
};
#undef F
#define NREADINESS_STRINGS (sizeof readiness_strings / sizeof readiness_strings[0])

enum db_status db_readiness_facts_decode(const PGresult *r, struct db_readiness_facts *f)
{
    memset(f, 0, sizeof *f);
    if (db_dup_fields(r, 0, readiness_strings, NREADINESS_STRINGS, f) != 0)
        return DB_HARD_ERROR;
    f->auto_stop = db_bool(r, 0, "auto_stop");
    f->has_idle_stop_after = !db_isnull(r, 0, "idle_stop_after_seconds");
    f->idle_stop_after_seconds = db_long(r, 0, "idle_stop_after_seconds");
    f->accepted_gate_runs = db_long(r, 0, "accepted_gate_runs");
    f->successful_provisionings = db_long(r, 0, "successful_provisionings");
    f->drill_recovery_seconds = db_num(r, 0, "drill_recovery_seconds");
    f->drill_max_recovery_seconds = db_num(r, 0, "drill_max_recovery_seconds");
    f->drill_age_seconds =
        db_isnull(r, 0, "drill_age_seconds") ? 0 : db_num(r, 0, "drill_age_seconds");
    f->drill_every_days = db_long(r, 0, "drill_every_days");
    return DB_ONE_RESULT;
}

enum db_status db_readiness_facts(struct db_conn *c, const char *host_id, const char *scope,
                                  struct db_readiness_facts *f)
{
    const char *p[2] = {host_id, scope};
    PGresult *r;
    memset(f, 0, sizeof *f);
    enum db_status s = db_exec(c, "readiness_facts", 2, p, &r);
    if (s == DB_ONE_RESULT)
        s = db_readiness_facts_decode(r, f);
    PQclear(r);
    return s;
}

void db_readiness_facts_free(struct db_readiness_facts *f)
{
    db_free_fields(readiness_strings, NREADINESS_STRINGS, f);
    memset(f, 0, sizeof *f);
}
