/* jobs.c — the job queue. See jobs.h. */
#include "db/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

// clang-format off
#define JOB_DOC(j, with_steps)                                                                   \
    "json_build_object('id', " j ".id, 'kind', " j ".kind, 'host_id', " j ".host_id,"            \
    " 'project', " DB_HOST_PROJECT_JSON(j ".host_id") ","                                         \
    " 'stack_id', " j ".stack_id, 'state', " j ".state, 'attempt', " j ".attempt,"               \
    " 'max_attempts', " j ".max_attempts," " 'progress', json_build_object('step', " j           \
    ".progress_step, 'of', " j ".progress_total)," " 'cancel_requested', " j                     \
    ".cancel_requested, 'error_class', " j ".error_class," " 'error', " j ".error, 'params', " j \
    ".params, 'created_by', " j ".created_by," " 'created_at', " DB_TS(j ".created_at")          \
    ", 'started_at', " DB_TS(j ".started_at") "," " 'finished_at', " DB_TS(j ".finished_at")     \
    ", 'lease_expires_at', " DB_TS(j ".lease_expires_at") with_steps ")::text"
// clang-format on
// clang-format off
#define JOB_STEPS(j)                                                                        \
    ", 'steps', coalesce((SELECT json_agg(json_build_object('attempt', s.attempt, 'index'," \
    " s.idx, 'name', s.name, 'phase', s.phase, 'command', s.command, 'exit_status',"        \
    " s.exit_status, 'outcome', s.outcome, 'stdout_tail', s.stdout_tail, 'stderr_tail',"    \
    " s.stderr_tail, 'message', s.message, 'duration_ms', s.duration_ms, 'finished_at', "   \
    DB_TS("s.finished_at")                                                                  \
    ") ORDER BY s.attempt, s.idx, array_position(ARRAY['check', 'apply', "                  \
    "'verify'], s.phase)) FROM job_steps s" " WHERE s.job_id = " j ".id), '[]'::json)"
// clang-format on

const struct db_stmt db_job_stmts[] = {
    {"job_create",
     "WITH ins AS (INSERT INTO jobs (kind, host_id, stack_id, created_by, params)"
     " VALUES ($1, $2::uuid, $3::uuid, $4, coalesce($5::jsonb, '{}')) RETURNING *),"
     " upd AS (UPDATE hosts SET last_job_id = ins.id,"
     "  desired_stack_id = coalesce(ins.stack_id, hosts.desired_stack_id), updated_at = now()"
     "  FROM ins WHERE hosts.id = ins.host_id)"
     " SELECT " JOB_DOC("ins", ", 'steps', '[]'::json") " AS doc, ins.id::text FROM ins"},
    {"job_get",
     "SELECT " JOB_DOC("j", JOB_STEPS("j")) " AS doc FROM jobs j WHERE j.id = $1::uuid"
                                            " AND " DB_HOST_IN_SCOPE("j.host_id", "$2", "NULL")},
    {"job_exists", "SELECT 1 FROM jobs WHERE id = $1::uuid"},
    {"job_list",
     "SELECT " JOB_DOC(
         "j", "") " AS doc, j.seq::text AS key FROM jobs j"
                  " WHERE ($1::text IS NULL OR j.state = $1) AND ($2::text IS NULL OR j.kind = $2)"
                  "   AND ($3::uuid IS NULL OR j.host_id = $3) AND j.seq > coalesce($4::bigint, 0)"
                  "   AND " DB_HOST_IN_SCOPE("j.host_id", "$6",
                                             "$7") " ORDER BY j.seq LIMIT $5::int"},
    {"job_cancel", "UPDATE jobs j SET"
                   "  state = CASE WHEN j.state = 'queued' THEN 'cancelled' ELSE j.state END,"
                   "  cancel_requested = (j.state = 'running'),"
                   "  finished_at = CASE WHEN j.state = 'queued' THEN now() ELSE j.finished_at END"
                   " WHERE j.id = $1::uuid AND j.state IN ('queued', 'running')"
                   "   AND " DB_HOST_IN_SCOPE("j.host_id", "$2", "NULL") " RETURNING " JOB_DOC(
                       "j", JOB_STEPS("j")) " AS doc"},
    /* A job whose lease lapsed with no attempt left fails, and its host moves through the
     * state machine (job_expired) in the same statement, with history and event. A stop
     * that expired may or may not have stopped the host: failed (quarantined if held). */
    {"job_expire",
     "WITH e AS (UPDATE jobs SET state = 'failed', error_class = 'lease_lost', finished_at = now(),"
     " error = 'the worker stopped renewing its lease and the retry budget is spent',"
     " lease_owner = NULL, lease_expires_at = NULL"
     " WHERE state = 'running' AND lease_expires_at < now() AND attempt >= max_attempts"
     " RETURNING id, host_id, kind)"
     " SELECT host_transition(e.host_id, 'job_expired', CASE WHEN e.kind = 'stop' THEN"
     "   CASE WHEN h.quarantined_at IS NOT NULL THEN 'quarantined' ELSE 'failed' END END,"
     "   format('%s job %s expired: its worker stopped renewing the lease and no attempt is"
     " left', e.kind, e.id), e.id, 'system:job-expiry', NULL)"
     " FROM e JOIN hosts h ON h.id = e.host_id"},
    {"job_claim",
     "UPDATE jobs j SET state = 'running', attempt = j.attempt + 1, lease_owner = $1,"
     " lease_expires_at = now() + make_interval(secs => $2::int), heartbeat_at = now(),"
     " started_at = coalesce(j.started_at, now())"
     " FROM (SELECT id FROM jobs"
     "       WHERE (state = 'queued' AND run_after <= now())"
     "          OR (state = 'running' AND lease_expires_at < now() AND attempt < max_attempts)"
     "       ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT $3::int) c"
     " WHERE j.id = c.id"
     " RETURNING j.id::text, j.kind, j.host_id::text, coalesce(j.stack_id::text, '') AS stack_id,"
     " j.attempt, j.max_attempts"},
    {"job_heartbeat",
     "UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $3::int),"
     " heartbeat_at = now() WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"
     " RETURNING cancel_requested"},
    {"job_step", "WITH fence AS (UPDATE jobs SET progress_step = $4::int, progress_total = $13::int"
                 "  WHERE id = $1::uuid AND attempt = $2::int AND state = 'running' RETURNING id)"
                 " INSERT INTO job_steps (job_id, attempt, idx, phase, name, command, exit_status,"
                 "  outcome, stdout_tail, stderr_tail, message, duration_ms)"
                 " SELECT id, $2::int, $4::int, $3, $5, $6, $7::int, $8, $9, $10, $11, $12::float8"
                 " FROM fence ON CONFLICT DO NOTHING RETURNING 1"},
    {"job_succeed", "UPDATE jobs SET state = 'succeeded', finished_at = now(), lease_owner = NULL,"
                    " lease_expires_at = NULL,"
                    " error_class = NULL, error = NULL"
                    " WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"},
    {"job_fail", "UPDATE jobs SET state = 'failed', finished_at = now(), lease_owner = NULL,"
                 " lease_expires_at = NULL, error_class = $3, error = $4"
                 " WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"},
    {"job_requeue",
     "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL,"
     " run_after = now() + make_interval(secs => $3::int), error_class = $4, error = $5"
     " WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"},
    /* A forced stop: the host's active job ends now (cancelled, cancel_requested), so
     * the stop can take the host's one active-job slot; the old attempt is fenced out. */
    {"job_supersede",
     "UPDATE jobs SET state = 'cancelled', cancel_requested = true, finished_at = now(),"
     " lease_owner = NULL, lease_expires_at = NULL, error_class = 'superseded', error = $2"
     " WHERE host_id = $1::uuid AND state IN ('queued', 'running') RETURNING id::text"},
    {"job_cancelled",
     "UPDATE jobs SET state = 'cancelled', finished_at = now(), lease_owner = NULL,"
     " lease_expires_at = NULL"
     " WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"},
};
const size_t db_job_nstmts = sizeof db_job_stmts / sizeof db_job_stmts[0];

enum db_status db_job_create(struct db_conn *c, const char *kind, const char *host_id,
                             const char *stack_id, const char *params_json, const char *created_by,
                             char **doc, char id[37])
{
    const char *p[5] = {kind, host_id, stack_id, created_by, params_json};
    return db_exec_doc_id(c, "job_create", 5, p, doc, id);
}

enum db_status db_job_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "job_get", 2, p, doc);
}

enum db_status db_job_list(struct db_conn *c, const struct db_job_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->state, f->kind,  f->host_id,   f->after_seq,
                        limit,    f->scope, f->project_id};
    return db_exec_page(c, "job_list", 7, p, page);
}

enum db_status db_job_cancel(struct db_conn *c, const char *id, const char *scope, char **doc,
                             int *was_final, int *hidden)
{
    const char *p[2] = {id, scope};
    enum db_status s = db_exec_doc(c, "job_cancel", 2, p, doc);
    *was_final = *hidden = 0;
    if (s == DB_NO_RESULTS) { /* final already, unknown, or another project's: tell which */
        s = db_exec_doc(c, "job_get", 2, p, doc);
        *was_final = s == DB_ONE_RESULT;
    }
    if (s == DB_NO_RESULTS && scope != NULL) {
        long n = 0;
        enum db_status e = db_exec_count(c, "job_exists", 1, p, &n);
        if (e < 0)
            return e;
        *hidden = n > 0;
    }
    return s;
}

enum db_status db_job_claim(struct db_conn *c, const char *owner, int lease_s, int max,
                            struct db_job_claim *claims, int *n)
{
    *n = 0;
    enum db_status s = db_exec_noresult(c, "job_expire", 0, NULL);
    if (s < 0)
        return s;
    char lease[16], lim[16];
    snprintf(lease, sizeof lease, "%d", lease_s);
    snprintf(lim, sizeof lim, "%d", max);
    const char *p[3] = {owner, lease, lim};
    PGresult *r;
    s = db_exec(c, "job_claim", 3, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r) && i < max; i++) {
        struct db_job_claim *cl = &claims[(*n)++];
        db_copy(r, i, "id", cl->id, sizeof cl->id);
        db_copy(r, i, "kind", cl->kind, sizeof cl->kind);
        db_copy(r, i, "host_id", cl->host_id, sizeof cl->host_id);
        db_copy(r, i, "stack_id", cl->stack_id, sizeof cl->stack_id);
        cl->attempt = (int)db_long(r, i, "attempt");
        cl->max_attempts = (int)db_long(r, i, "max_attempts");
    }
    PQclear(r);
    return s;
}

enum db_status db_job_heartbeat(struct db_conn *c, const char *id, int attempt, int lease_s,
                                int *cancel)
{
    char a[16], lease[16];
    snprintf(a, sizeof a, "%d", attempt);
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *p[3] = {id, a, lease};
    PGresult *r;
    *cancel = 0;
    enum db_status s = db_exec(c, "job_heartbeat", 3, p, &r);
    if (s == DB_ONE_RESULT)
        *cancel = db_bool(r, 0, "cancel_requested");
    PQclear(r);
    return s;
}

enum db_status db_job_step(struct db_conn *c, const char *id, int attempt,
                           const struct db_job_step *st, int progress_total)
{
    char a[16], idx[16], exit_s[16], dur[32], total[16];
    snprintf(a, sizeof a, "%d", attempt);
    snprintf(idx, sizeof idx, "%d", st->idx);
    snprintf(exit_s, sizeof exit_s, "%d", st->exit_status);
    snprintf(dur, sizeof dur, "%.3f", st->duration_ms);
    snprintf(total, sizeof total, "%d", progress_total);
    const char *p[13] = {id,
                         a,
                         st->phase,
                         idx,
                         st->name,
                         st->command,
                         st->has_exit ? exit_s : NULL,
                         st->outcome,
                         st->stdout_tail ? st->stdout_tail : "",
                         st->stderr_tail ? st->stderr_tail : "",
                         st->message,
                         dur,
                         total};
    return db_exec_noresult(c, "job_step", 13, p);
}

static enum db_status fenced(struct db_conn *c, const char *stmt, const char *id, int attempt,
                             const char *x, const char *y, const char *z)
{
    char a[16];
    snprintf(a, sizeof a, "%d", attempt);
    const char *p[5] = {id, a, x, y, z};
    int n = z ? 5 : y ? 4 : x ? 3 : 2;
    return db_exec_noresult(c, stmt, n, p);
}

enum db_status db_job_succeed(struct db_conn *c, const char *id, int attempt)
{
    return fenced(c, "job_succeed", id, attempt, NULL, NULL, NULL);
}

enum db_status db_job_fail(struct db_conn *c, const char *id, int attempt, const char *error_class,
                           const char *error)
{
    return fenced(c, "job_fail", id, attempt, error_class, error, NULL);
}

enum db_status db_job_requeue(struct db_conn *c, const char *id, int attempt, int backoff_s,
                              const char *error_class, const char *error)
{
    char b[16];
    snprintf(b, sizeof b, "%d", backoff_s);
    return fenced(c, "job_requeue", id, attempt, b, error_class, error);
}

enum db_status db_job_cancelled(struct db_conn *c, const char *id, int attempt)
{
    return fenced(c, "job_cancelled", id, attempt, NULL, NULL, NULL);
}

enum db_status db_job_supersede(struct db_conn *c, const char *host_id, const char *why,
                                char job_id[37])
{
    const char *p[2] = {host_id, why};
    PGresult *r;
    job_id[0] = '\0';
    enum db_status s = db_exec(c, "job_supersede", 2, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "id", job_id, 37);
    PQclear(r);
    return s;
}
