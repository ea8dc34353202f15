/* recovery.c — see recovery.h. */
#include "db/recovery.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

/* A step's state in the document: passed before the current step; the recovery's own
 * state (running, passed, failed, cancelled) at it; pending (or skipped once it ended)
 * after it. */
// clang-format off
#define STEP_STATE(n)                                                                            \
    "CASE WHEN array_position(ARRAY['drain', 'diagnostics', 'gate'], r.step) > " n               \
    " THEN 'passed' WHEN array_position(ARRAY['drain', 'diagnostics', 'gate'], r.step) = " n     \
    " THEN CASE r.state WHEN 'succeeded' THEN 'passed' ELSE r.state END"                         \
    " WHEN r.state = 'running' THEN 'pending' ELSE 'skipped' END"
#define JOB_STEP(name, n, col)                                                                   \
    "json_build_object('name', '" name "', 'state', " STEP_STATE(n) ", 'job_id', r." col ","    \
    " 'job_state', (SELECT j.state FROM jobs j WHERE j.id = r." col "),"                        \
    " 'job_error', (SELECT j.error_class FROM jobs j WHERE j.id = r." col "),"                  \
    " 'run', (SELECT json_build_object('id', g.id, 'verdict', g.verdict, 'reason', g.reason)"   \
    "   FROM gate_runs g WHERE g.job_id = r." col " ORDER BY g.seq DESC LIMIT 1))"
#define RECOVERY_DOC                                                                             \
    "json_build_object('id', r.id, 'host_id', r.host_id, 'pool_id', r.pool_id,"                 \
    " 'project', " DB_HOST_PROJECT_JSON("r.host_id") ","                                         \
    " 'state', r.state, 'step', r.step, 'cause', r.cause, 'diagnostics_level', r.diag_level,"   \
    " 'error', r.error, 'steps', json_build_array("                                             \
    "  json_build_object('name', 'drain', 'state', " STEP_STATE("1") ","                         \
    "   'started_at', " DB_TS("r.drain_started_at") ", 'finished_at', " DB_TS("r.drained_at")    \
    "), " JOB_STEP("diagnostics", "2", "diagnostics_job_id") ", "                                \
    JOB_STEP("gate", "3", "gate_job_id") "),"                                                    \
    " 'created_at', " DB_TS("r.created_at") ", 'updated_at', " DB_TS("r.updated_at") ","        \
    " 'finished_at', " DB_TS("r.finished_at") ")::text"
// clang-format on

/* What an operator (or the idle policy) did to the host since the recovery began: the
 * audited host actions that change what runs on it. */
#define INTERVENTIONS                                                                           \
    "('host.drain', 'host.resume', 'host.release', 'host.stop', 'host.provision', 'host.gate'," \
    " 'host.diagnostics')"

const struct db_stmt db_recovery_stmts[] = {
    {"rec_due", "SELECT id::text FROM host_recoveries WHERE state = 'running'"
                " AND checked_at < now() - interval '1 second' ORDER BY checked_at LIMIT $1::int"},
    {"rec_facts",
     "SELECT r.id::text, r.host_id::text, r.step, r.diag_level,"
     " r.drain_started_at IS NOT NULL AS started, h.state AS host_state,"
     " h.quarantined_at IS NOT NULL AS held,"
     " coalesce(h.quarantined_at = r.hold_since, false) AS hold_is_ours,"
     " h.quarantine_reason AS hold_reason,"
     " (SELECT a.action || ' by ' || a.principal || ' (' || a.role || ')' FROM audit_events a"
     "   WHERE a.resource_type = 'host' AND a.resource_id = r.host_id::text"
     "   AND a.at >= r.created_at AND a.status BETWEEN 200 AND 299"
     "   AND a.action IN " INTERVENTIONS " AND a.principal NOT LIKE 'recovery:%'"
     "   ORDER BY a.seq LIMIT 1) AS intervention,"
     " (SELECT j.kind || ' job ' || j.id || ' queued by ' || j.created_by FROM jobs j"
     "   WHERE j.host_id = r.host_id AND j.state IN ('queued', 'running')"
     "   AND j.created_at >= r.created_at AND j.id IS DISTINCT FROM r.diagnostics_job_id"
     "   AND j.id IS DISTINCT FROM r.gate_job_id LIMIT 1) AS foreign_job,"
     " EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = r.host_id"
     "   AND j.state IN ('queued', 'running')) AS busy,"
     " sj.state AS job_state,"
     " CASE WHEN sj.error_class IS NULL THEN NULL"
     "   ELSE left(sj.error_class || ': ' || coalesce(sj.error, ''), 300) END AS job_error,"
     " run.verdict, left(run.reason, 300) AS verdict_reason,"
     " coalesce(run.id = h.accepted_gate_run_id, false) AS gate_is_run"
     " FROM host_recoveries r JOIN hosts h ON h.id = r.host_id"
     " LEFT JOIN jobs sj ON sj.id = CASE r.step WHEN 'diagnostics' THEN r.diagnostics_job_id"
     "   WHEN 'gate' THEN r.gate_job_id END"
     " LEFT JOIN LATERAL (SELECT g.id, g.verdict, g.reason FROM gate_runs g WHERE g.job_id = sj.id"
     "   ORDER BY g.seq DESC LIMIT 1) run ON true"
     " WHERE r.id = $1::uuid AND r.state = 'running' FOR UPDATE OF r SKIP LOCKED"},
    {"rec_started", "UPDATE host_recoveries SET drain_started_at = now(), updated_at = now()"
                    " WHERE id = $1::uuid AND state = 'running'"},
    {"rec_step", "UPDATE host_recoveries SET step = $2, updated_at = now(),"
                 " drained_at = CASE WHEN step = 'drain' THEN now() ELSE drained_at END"
                 " WHERE id = $1::uuid AND state = 'running'"},
    {"rec_job", "UPDATE host_recoveries SET updated_at = now(),"
                " diagnostics_job_id = CASE WHEN $2 = 'diagnostics' THEN $3::uuid"
                "   ELSE diagnostics_job_id END,"
                " gate_job_id = CASE WHEN $2 = 'gate' THEN $3::uuid ELSE gate_job_id END"
                " WHERE id = $1::uuid AND state = 'running'"},
    {"rec_finish", "UPDATE host_recoveries SET state = $2, error = left($3, 2000),"
                   " finished_at = now(), updated_at = now()"
                   " WHERE id = $1::uuid AND state = 'running'"},
    {"rec_checked", "UPDATE host_recoveries SET checked_at = now() WHERE id = $1::uuid"},
    {"rec_host", "SELECT 1 FROM hosts WHERE id = $1::uuid"
                 " AND ($2::uuid[] IS NULL OR project_id = ANY ($2::uuid[]))"},
    {"rec_list", "SELECT " RECOVERY_DOC " AS doc, r.seq::text AS key FROM host_recoveries r"
                 " WHERE r.host_id = $1::uuid AND ($2::text IS NULL OR r.state = $2)"
                 "   AND r.seq < coalesce($3::bigint, 9223372036854775807)"
                 " ORDER BY r.seq DESC LIMIT $4::int"},
    {"rec_get", "SELECT " RECOVERY_DOC " AS doc FROM host_recoveries r WHERE r.id = $1::uuid"},
};
const size_t db_recovery_nstmts = sizeof db_recovery_stmts / sizeof db_recovery_stmts[0];

enum db_status db_recovery_due(struct db_conn *c, int max, char (*ids)[37], int *n)
{
    return db_exec_ids(c, "rec_due", max, ids, n);
}

static const struct db_str_field fact_strs[] = {
    {"host_state", offsetof(struct db_recovery_facts, host_state)},
    {"hold_reason", offsetof(struct db_recovery_facts, hold_reason)},
    {"intervention", offsetof(struct db_recovery_facts, intervention)},
    {"foreign_job", offsetof(struct db_recovery_facts, foreign_job)},
    {"job_state", offsetof(struct db_recovery_facts, job_state)},
    {"job_error", offsetof(struct db_recovery_facts, job_error)},
    {"verdict", offsetof(struct db_recovery_facts, verdict)},
    {"verdict_reason", offsetof(struct db_recovery_facts, verdict_reason)},
};
#define NFACT_STRS (sizeof fact_strs / sizeof fact_strs[0])

enum db_status db_recovery_facts(struct db_conn *c, const char *id, struct db_recovery_facts *f)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(f, 0, sizeof *f);
    enum db_status s = db_exec_row(c, "rec_facts", 1, p, &r);
    if (s != DB_ONE_RESULT)
        return s;
    db_copy(r, 0, "id", f->id, sizeof f->id);
    db_copy(r, 0, "host_id", f->host_id, sizeof f->host_id);
    db_copy(r, 0, "step", f->step, sizeof f->step);
    f->diag_level = (int)db_long(r, 0, "diag_level");
    f->started = db_bool(r, 0, "started");
    f->held = db_bool(r, 0, "held");
    f->hold_is_ours = db_bool(r, 0, "hold_is_ours");
    f->busy = db_bool(r, 0, "busy");
    f->gate_is_run = db_bool(r, 0, "gate_is_run");
    int bad = db_dup_fields(r, 0, fact_strs, NFACT_STRS, f) != 0;
    PQclear(r);
    return bad ? DB_HARD_ERROR : DB_ONE_RESULT;
}

void db_recovery_facts_free(struct db_recovery_facts *f)
{
    db_free_fields(fact_strs, NFACT_STRS, f);
}

enum db_status db_recovery_mark_started(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "rec_started", 1, p);
}

enum db_status db_recovery_set_step(struct db_conn *c, const char *id, const char *step)
{
    const char *p[2] = {id, step};
    return db_exec_noresult(c, "rec_step", 2, p);
}

enum db_status db_recovery_set_job(struct db_conn *c, const char *id, const char *step,
                                   const char *job_id)
{
    const char *p[3] = {id, step, job_id};
    return db_exec_noresult(c, "rec_job", 3, p);
}

enum db_status db_recovery_finish(struct db_conn *c, const char *id, const char *state,
                                  const char *why)
{
    const char *p[3] = {id, state, why};
    return db_exec_noresult(c, "rec_finish", 3, p);
}

enum db_status db_recovery_checked(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "rec_checked", 1, p);
}

enum db_status db_recovery_list(struct db_conn *c, const char *host_id, const char *scope,
                                const char *state, const char *before_seq, long limit,
                                struct db_page *page, int *host_found)
{
    const char *h[2] = {host_id, scope};
    long n = 0;
    *host_found = 0;
    enum db_status s = db_exec_count(c, "rec_host", 2, h, &n);
    if (s < 0)
        return s;
    *host_found = n > 0;
    if (!*host_found)
        return DB_NO_RESULTS;
    char lim[24];
    snprintf(lim, sizeof lim, "%ld", limit);
    const char *p[4] = {host_id, state, before_seq, lim};
    return db_exec_page(c, "rec_list", 4, p, page);
}

enum db_status db_recovery_get(struct db_conn *c, const char *id, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "rec_get", 1, p, doc);
}
