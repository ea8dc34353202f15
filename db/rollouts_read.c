/* rollouts_read.c — see rollouts_read.h. The document is one SQL expression
 * (ROLLOUT_DOC) over a rollout row r, so that GET and the list render it the same way. */
#include "db/rollouts_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

/* Steps that hold a host out of service because of the rollout (docs/rollouts.md §3). */
#define RO_BUSY_STEP     "('draining', 'provisioning', 'gating', 'comparing', 'resuming')"
#define RO_BUSY_ROLLBACK "('draining', 'provisioning', 'gating', 'resuming')"
#define RO_FAILED_OUT                                                                     \
    "((rh.step = 'failed' OR rh.rollback_step = 'failed') AND h.state <> 'ready'"         \
    " AND rh.rollback_step IS DISTINCT FROM 'done' AND rh.rollback_step IS DISTINCT FROM" \
    " 'not_needed')"

// clang-format off
#define RO_HOST_DOC                                                                                \
    "json_build_object('host_id', rh.host_id, 'name', rh.host_name, 'wave', rh.wave,"              \
    " 'position', rh.position, 'host_state', h.state,"                                             \
    " 'from_stack_id', rh.from_stack_id, 'to_stack_id', rh.to_stack_id, 'step', rh.step,"          \
    " 'rollback_step', rh.rollback_step, 'provision_job_id', rh.provision_job_id,"                 \
    " 'gate_job_id', rh.gate_job_id, 'gate_run_id', rh.gate_run_id,"                               \
    " 'rollback_jobs', json_build_object('provision_job_id', rh.rollback_provision_job_id,"        \
    "   'gate_job_id', rh.rollback_gate_job_id),"                                                  \
    " 'comparison', rh.comparison, 'error', rh.error,"                                             \
    " 'started_at', " DB_TS("rh.started_at") ", 'finished_at', " DB_TS("rh.finished_at") ")"
/* A wave's state: rolled back once any of its hosts was taken back; soaking while the
 * rollout soaks it; done when all its hosts are; running when it is the current wave of
 * a running rollout or one of its hosts started; otherwise pending. */
#define RO_WAVE_STATE                                                                              \
    "CASE WHEN w.rolled THEN 'rolled_back'"                                                        \
    " WHEN w.wave = r.current_wave AND r.state IN ('running', 'paused')"                           \
    "   AND r.wave_state = 'soaking' THEN 'soaking'"                                               \
    " WHEN w.all_done THEN 'done'"                                                                 \
    " WHEN w.wave = r.current_wave AND (w.touched OR r.state = 'running') THEN 'running'"          \
    " WHEN w.wave < r.current_wave AND r.state IN ('running', 'paused', 'succeeded')"              \
    "   THEN 'done'"                                                                               \
    " ELSE 'pending' END"
#define RO_WAVES                                                                                   \
    "(SELECT coalesce(json_agg(json_build_object('index', w.wave,"                                 \
    "   'canary', r.canary > 0 AND w.wave = 0, 'state', " RO_WAVE_STATE ","                        \
    "   'started_at', " DB_TS("w.started_at") ","                                                  \
    "   'finished_at', CASE WHEN w.all_done THEN " DB_TS("w.finished_at") " END,"                  \
    "   'hosts', w.hosts) ORDER BY w.wave), '[]'::json)"                                           \
    " FROM (SELECT rh.wave, min(rh.started_at) AS started_at,"                                     \
    "   max(rh.finished_at) AS finished_at, bool_and(rh.step IN ('done', 'skipped')) AS all_done," \
    "   bool_or(rh.rollback_step IS NOT NULL AND rh.rollback_step <> 'not_needed'"                 \
    "     AND rh.rollback_step <> 'pending') AS rolled,"                                           \
    "   bool_or(rh.step <> 'pending') AS touched,"                                                 \
    "   json_agg(rh.host_id ORDER BY rh.position) AS hosts"                                        \
    "  FROM rollout_hosts rh WHERE rh.rollout_id = r.id GROUP BY rh.wave) w)"
#define RO_HOSTS                                                                                   \
    "(SELECT coalesce(json_agg(" RO_HOST_DOC " ORDER BY rh.position), '[]'::json)"                 \
    " FROM rollout_hosts rh JOIN hosts h ON h.id = rh.host_id WHERE rh.rollout_id = r.id)"
#define RO_SKIPPED                                                                                 \
    "(SELECT coalesce(json_agg(json_build_object('host_id', s.host_id, 'name', s.host_name,"       \
    "   'state', s.state, 'reason', s.reason) ORDER BY s.host_name, s.host_id), '[]'::json)"       \
    " FROM rollout_skipped s WHERE s.rollout_id = r.id)"
/* (rollout_unavailable: the engine's own count, migrations/0021_rollouts.sql) */
#define RO_UNAVAILABLE "rollout_unavailable(r.id)"
#define RO_FAILED_HOSTS                                                                            \
    "(SELECT coalesce(json_agg(json_build_object('host_id', rh.host_id, 'name', rh.host_name,"     \
    "   'host_state', h.state, 'error', rh.error) ORDER BY rh.position), '[]'::json)"              \
    " FROM rollout_hosts rh JOIN hosts h ON h.id = rh.host_id"                                     \
    " WHERE rh.rollout_id = r.id AND (rh.host_id = ANY (r.failed_hosts) OR " RO_FAILED_OUT "))"
/* Hosts done, in flight (a forward or rollback step under way), pending, rolled back,
 * skipped (when their turn came), failed. */
#define RO_COUNTS                                                                                  \
    "(SELECT json_build_object('hosts', count(*),"                                                 \
    "   'done', count(*) FILTER (WHERE rh.step = 'done' AND rh.rollback_step IS NULL),"            \
    "   'in_flight', count(*) FILTER (WHERE rh.step IN " RO_BUSY_STEP                              \
    "     OR rh.rollback_step IN " RO_BUSY_ROLLBACK "),"                                           \
    "   'pending', count(*) FILTER (WHERE rh.step = 'pending' AND rh.rollback_step IS NULL),"      \
    "   'rolled_back', count(*) FILTER (WHERE rh.rollback_step = 'done'),"                         \
    "   'skipped', count(*) FILTER (WHERE rh.step = 'skipped'),"                                   \
    "   'failed', count(*) FILTER (WHERE rh.step = 'failed' OR rh.rollback_step = 'failed'))"      \
    " FROM rollout_hosts rh WHERE rh.rollout_id = r.id)"
#define ROLLOUT_DOC                                                                                \
    "json_build_object('id', r.id, 'pool_id', r.pool_id,"                                          \
    " 'project', " DB_POOL_PROJECT_JSON("r.pool_id") ","                                            \
    " 'pool_name', (SELECT p.name FROM pools p WHERE p.id = r.pool_id),"                           \
    " 'stack_id', r.stack_id, 'stack_name', (SELECT st.name FROM stacks st"                        \
    "   WHERE st.id = r.stack_id), 'state', r.state, 'canary', r.canary,"                          \
    " 'max_unavailable', r.max_unavailable, 'max_unavailable_hosts', r.max_unavailable_hosts,"     \
    " 'min_baseline_ratio', r.min_baseline_ratio, 'soak_seconds', r.soak_seconds,"                 \
    " 'pause_after_canary', r.pause_after_canary, 'force', r.force,"                               \
    " 'created_by', r.created_by, 'created_at', " DB_TS("r.created_at") ","                        \
    " 'updated_at', " DB_TS("r.updated_at") ", 'finished_at', " DB_TS("r.finished_at") ","         \
    " 'wave_count', r.waves, 'current_wave', r.current_wave,"                                      \
    " 'soak_until', " DB_TS("r.soak_until") ", 'unavailable', " RO_UNAVAILABLE ","                 \
    " 'error', r.error, 'evidence', r.evidence, 'failed_hosts', " RO_FAILED_HOSTS ","              \
    " 'counts', " RO_COUNTS ", 'waves', " RO_WAVES ", 'hosts', " RO_HOSTS ","                      \
    " 'skipped', " RO_SKIPPED ")::text"
// clang-format on

const struct db_stmt db_rollout_read_stmts[] = {
    {"ro_get", "SELECT " ROLLOUT_DOC " AS doc FROM rollouts r WHERE r.id = $1::uuid"
               " AND " DB_POOL_IN_SCOPE("r.pool_id", "$2", "NULL")},
    {"ro_list",
     "SELECT " ROLLOUT_DOC " AS doc, r.seq::text AS key FROM rollouts r"
     " WHERE ($1::uuid IS NULL OR r.pool_id = $1::uuid)"
     " AND ($2::text IS NULL OR r.state = $2 OR ($2 = 'active'"
     "   AND r.state IN ('running', 'paused', 'rolling_back')))"
     " AND r.seq < coalesce($3::bigint, 9223372036854775807)"
     " AND " DB_POOL_IN_SCOPE("r.pool_id", "$5", "$6") " ORDER BY r.seq DESC LIMIT $4::int"},
    /* before: as long as the rollout so far (at most 7 days), ending at its start; after:
     * from its end (while it runs, its start) to now. */
    {"ro_window",
     "SELECT r.pool_id::text AS pool_id,"
     " " DB_TS(
         "(r.created_at - least(coalesce(r.finished_at, now()) - r.created_at,"
         " interval '7 days'))") " AS before_from,"
                                 " " DB_TS("r.created_at") " AS start,"
                                                           " " DB_TS(
                                                               "(coalesce(r.finished_at, "
                                                               "r.created_at))") " AS after_from,"
                                                                                 " " DB_TS(
                                                                                     "(greatest("
                                                                                     "now(), "
                                                                                     "r.created_at)"
                                                                                     ")") " AS now"
                                                                                          " FROM "
                                                                                          "rollouts"
                                                                                          " r "
                                                                                          "WHERE "
                                                                                          "r.id = "
                                                                                          "$1::"
                                                                                          "uuid"},
};
const size_t db_rollout_read_nstmts =
    sizeof db_rollout_read_stmts / sizeof db_rollout_read_stmts[0];

enum db_status db_rollout_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "ro_get", 2, p, doc);
}

enum db_status db_rollout_list(struct db_conn *c, const struct db_rollout_filter *f,
                               struct db_page *page)
{
    char lim[24];
    snprintf(lim, sizeof lim, "%ld", f->limit);
    const char *p[6] = {f->pool_id, f->state, f->before_seq, lim, f->scope, f->project_id};
    return db_exec_page(c, "ro_list", 6, p, page);
}

enum db_status db_rollout_window(struct db_conn *c, const char *id, struct db_rollout_window *w)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(w, 0, sizeof *w);
    enum db_status s = db_exec_row(c, "ro_window", 1, p, &r);
    if (s != DB_ONE_RESULT)
        return s;
    db_copy(r, 0, "pool_id", w->pool_id, sizeof w->pool_id);
    db_copy(r, 0, "before_from", w->before_from, sizeof w->before_from);
    db_copy(r, 0, "start", w->start, sizeof w->start);
    db_copy(r, 0, "after_from", w->after_from, sizeof w->after_from);
    db_copy(r, 0, "now", w->now, sizeof w->now);
    PQclear(r);
    return DB_ONE_RESULT;
}
