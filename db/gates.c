/* gates.c — gate runs. */
#include "db/gates.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

// clang-format off
#define RUN_DOC(g)                                                                          \
    "json_build_object('id', " g ".id, 'kind', " g ".kind, 'host_id', " g ".host_id,"       \
    " 'job_id', " g ".job_id, 'stack_id', " g ".stack_id, 'pool_id', " g ".pool_id,"        \
    " 'gate_version', " g ".gate_version, 'diag_level', " g ".diag_level," " 'verdict', " g \
    ".verdict, 'reason', " g ".reason, 'checks', " g ".checks," " 'connect_ms', " g         \
    ".connect_ms, 'started_at', " DB_TS(g ".started_at") "," " 'finished_at', "             \
    DB_TS(g ".finished_at") ")::text"
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
     " array_to_string(coalesce(m.nvidia_smi_na_fields, '{}'), ',') AS na_fields"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " LEFT JOIN gpu_models m ON m.key = p.gpu_model WHERE h.id = $1::uuid"},
    {"gate_run_insert",
     "INSERT INTO gate_runs (kind, host_id, job_id, stack_id, pool_id, gate_version,"
     " diag_level, verdict, reason, checks, connect_ms, inventory, started_at)"
     " VALUES ($1, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::int, $7::int, $8, $9,"
     " $10::jsonb, $11::float8, $12, $13::timestamptz) RETURNING id::text"},
    {"gate_run_get", "SELECT " RUN_DOC("g") " AS doc FROM gate_runs g WHERE g.id = $1::uuid"},
    {"gate_run_list",
     "SELECT " RUN_DOC(
         "g") " AS doc, g.seq::text AS key FROM gate_runs g"
              " WHERE ($1::uuid IS NULL OR g.host_id = $1) AND ($2::text IS NULL OR g.verdict = $2)"
              "   AND ($3::text IS NULL OR g.kind = $3) AND g.seq < coalesce($4::bigint,"
              "   9223372036854775807)"
              " ORDER BY g.seq DESC LIMIT $5::int"},
    {"host_readiness",
     "SELECT json_build_object("
     " 'host', json_build_object('id', h.id, 'state', h.state, 'host_key_sha256',"
     "   h.host_key_sha256, 'current_stack_id', h.current_stack_id, 'facts', h.facts,"
     "   'accepted_gate_run_id', h.accepted_gate_run_id),"
     " 'credential', (SELECT json_build_object('id', c.id, 'key_type', c.key_type)"
     "   FROM credentials c WHERE c.id = h.credential_id),"
     " 'pool', json_build_object('id', p.id, 'spec', p.spec),"
     " 'stack', (SELECT json_build_object('id', s.id, 'spec', s.spec, 'image_digest',"
     "   s.image_digest) FROM stacks s WHERE s.id = h.current_stack_id),"
     " 'accepted_gate', (SELECT json_build_object('id', g.id, 'stack_id', g.stack_id,"
     "   'checks', g.checks, 'finished_at', " DB_TS(
         "g.finished_at") ")"
                          "   FROM gate_runs g WHERE g.id = h.accepted_gate_run_id),"
                          " 'last_gate', (SELECT json_build_object('id', g.id, 'verdict', "
                          "g.verdict, 'checks',"
                          "   g.checks) FROM gate_runs g WHERE g.host_id = h.id AND g.kind = 'gate'"
                          "   ORDER BY g.seq DESC LIMIT 1),"
                          " 'accepted_gates', (SELECT count(*) FROM gate_runs g WHERE g.host_id = "
                          "h.id"
                          "   AND g.kind = 'gate' AND g.verdict = 'accept'),"
                          " 'provisionings', (SELECT count(*) FROM jobs j WHERE j.host_id = h.id"
                          "   AND j.kind = 'provision' AND j.state = 'succeeded')"
                          ")::text AS doc FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE h.id "
                          "= $1::uuid"},
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
    F(na_fields, "na_fields"),
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

enum db_status db_gate_run_get(struct db_conn *c, const char *id, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "gate_run_get", 1, p, doc);
}

enum db_status db_gate_run_list(struct db_conn *c, const struct db_gate_filter *f,
                                struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[5] = {f->host_id, f->verdict, f->kind, f->after_seq, limit};
    return db_exec_page(c, "gate_run_list", 5, p, page);
}

enum db_status db_host_readiness_facts(struct db_conn *c, const char *host_id, char **doc)
{
    const char *p[1] = {host_id};
    return db_exec_doc(c, "host_readiness", 1, p, doc);
}
