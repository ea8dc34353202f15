/* rollouts.c — see rollouts.h. Typed reads and writes only: the create's reads (the
 * pool, its hosts, the stack) happen under the pool's row lock (concurrent creates of one
 * pool queue there; the partial unique index rollouts_one_active backs the rule), the
 * driver's facts under the rollout's row lock; service/ decides with planner/. */
#include "db/rollouts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db_pg.h"
#include "db/scope_sql.h"

#define ACTIVE    "('running', 'paused', 'rolling_back')"
#define IN_FLIGHT "('draining', 'provisioning', 'gating', 'comparing', 'resuming')"
/* What someone else did to a host in flight: the audited actions that change what runs on
 * it (as for recoveries). */
#define INTERVENTIONS                                                                           \
    "('host.drain', 'host.resume', 'host.release', 'host.stop', 'host.provision', 'host.gate'," \
    " 'host.diagnostics')"

const struct db_stmt db_rollout_stmts[] = {
    {"ro_pool_lock", "SELECT (spec #> '{gate,workload}') IS NOT NULL"
                     " AND json_typeof(spec #> '{gate,workload}') = 'object' AS has_workload"
                     " FROM pools WHERE id = $1::uuid"
                     " AND ($2::uuid[] IS NULL OR project_id = ANY ($2::uuid[])) FOR UPDATE"},
    {"ro_pool_project", "SELECT project_id::text AS project_id FROM pools WHERE id = $1::uuid"},
    {"ro_stack", "SELECT id::text, spec ->> 'driver_version' AS driver_version FROM stacks"
                 " WHERE id = $1::uuid AND (shared"
                 "   OR project_id = (SELECT p.project_id FROM pools p WHERE p.id = $2::uuid))"},
    {"ro_active", "SELECT id::text FROM rollouts WHERE pool_id = $1::uuid AND state IN " ACTIVE},
    {"ro_pool_hosts",
     "SELECT h.id::text, h.name, h.state, h.facts ->> 'driver_version' AS driver_version,"
     " h.current_stack_id::text AS current_stack_id"
     " FROM hosts h WHERE h.pool_id = $1::uuid ORDER BY h.name, h.id"},
    {"ro_has_baseline",
     "SELECT 1 FROM hosts h WHERE h.id = ANY ($2::uuid[]) AND EXISTS (SELECT 1 FROM baselines b"
     " WHERE b.pool_id = $1::uuid AND b.stack_id = h.current_stack_id AND b.source = 'gate'"
     " AND b.workload_hash = (SELECT workload_hash(p.spec::jsonb #> '{gate,workload}')"
     " FROM pools p WHERE p.id = $1::uuid))"},
    {"ro_insert",
     "INSERT INTO rollouts (pool_id, stack_id, canary, max_unavailable, max_unavailable_hosts,"
     " min_baseline_ratio, soak_seconds, pause_after_canary, force, waves, created_by,"
     " wave_started_at)"
     " VALUES ($1::uuid, $2::uuid, $3::int, $4::jsonb, $5::int, $6::float8, $7::int,"
     " $8::boolean, $9::boolean, $10::int, $11, now()) RETURNING id::text"},
    {"ro_insert_hosts",
     "INSERT INTO rollout_hosts (rollout_id, host_id, host_name, position, wave, from_stack_id,"
     " to_stack_id)"
     " SELECT $1::uuid, x.host_id, x.name, x.position, x.wave, h.current_stack_id, $2::uuid"
     " FROM jsonb_to_recordset($3::jsonb) AS x(host_id uuid, name text, position int, wave int)"
     " JOIN hosts h ON h.id = x.host_id"},
    {"ro_insert_skipped",
     "INSERT INTO rollout_skipped (rollout_id, host_id, host_name, state, reason)"
     " SELECT $1::uuid, x.host_id, x.name, x.state, x.reason"
     " FROM jsonb_to_recordset($2::jsonb) AS x(host_id uuid, name text, state text, reason text)"},
    {"ro_lock", "SELECT state, EXISTS (SELECT 1 FROM rollout_hosts rh WHERE rh.rollout_id = r.id"
                " AND rh.step NOT IN ('pending', 'skipped')) AS touched"
                " FROM rollouts r WHERE r.id = $1::uuid"
                " AND " DB_POOL_IN_SCOPE("r.pool_id", "$2", "NULL") " FOR UPDATE"},
    {"ro_exists", "SELECT 1 FROM rollouts WHERE id = $1::uuid"},
    {"ro_set_state", "UPDATE rollouts SET state = $2, updated_at = now(),"
                     " finished_at = CASE WHEN $2 IN " ACTIVE " THEN NULL ELSE now() END,"
                     " error = coalesce(left($3, 4000), error), checked_at = '-infinity'"
                     " WHERE id = $1::uuid"},
    {"ro_due", "SELECT id::text FROM rollouts WHERE state IN " ACTIVE
               " AND checked_at < now() - interval '1 second' ORDER BY checked_at LIMIT $1::int"},
    {"ro_facts",
     "SELECT r.id::text, r.pool_id::text, r.stack_id::text, r.state, r.canary,"
     " r.max_unavailable_hosts, r.soak_seconds, r.pause_after_canary, r.canary_paused, r.waves,"
     " r.current_wave, r.wave_state = 'soaking' AS soaking,"
     " coalesce(r.soak_until <= now(), false) AS soak_over,"
     " r.min_baseline_ratio IS NOT NULL AS ratio_set, coalesce(r.min_baseline_ratio, 0) AS ratio,"
     " (SELECT p.project_id::text FROM pools p WHERE p.id = r.pool_id) AS project_id"
     " FROM rollouts r WHERE r.id = $1::uuid AND r.state IN " ACTIVE " FOR UPDATE SKIP LOCKED"},
    {"ro_host_facts",
     "SELECT rh.host_id::text, rh.host_name, rh.wave, rh.step, rh.rollback_step,"
     " rh.from_stack_id::text AS from_stack_id, rh.to_stack_id::text AS to_stack_id,"
     " rh.provision_job_id::text AS provision_job_id, rh.gate_job_id::text AS gate_job_id,"
     " rh.gate_run_id::text AS gate_run_id,"
     " rh.rollback_provision_job_id::text AS rollback_provision_job_id,"
     " rh.rollback_gate_job_id::text AS rollback_gate_job_id,"
     " h.state AS host_state, h.quarantined_at IS NOT NULL AS held,"
     " left(h.quarantine_reason, 300) AS hold_reason,"
     " EXISTS (SELECT 1 FROM jobs j WHERE j.host_id = rh.host_id"
     "   AND j.state IN ('queued', 'running')) AS busy,"
     " CASE WHEN rh.step IN " IN_FLIGHT " AND rh.rollback_step IS NULL THEN"
     "  (SELECT j.kind || ' job ' || j.id || ' queued by ' || left(j.created_by, 128) FROM jobs j"
     "   WHERE j.host_id = rh.host_id AND j.state IN ('queued', 'running')"
     "   AND j.created_by <> $2 AND j.created_at >= rh.started_at LIMIT 1) END AS foreign_job,"
     " CASE WHEN rh.step IN " IN_FLIGHT " AND rh.rollback_step IS NULL THEN"
     "  (SELECT a.action || ' by ' || a.principal || ' (' || a.role || ')' FROM audit_events a"
     "   WHERE a.resource_type = 'host' AND a.resource_id = rh.host_id::text"
     "   AND a.at >= rh.started_at AND a.status BETWEEN 200 AND 299"
     "   AND a.action IN " INTERVENTIONS " AND a.principal <> $2"
     "   ORDER BY a.seq LIMIT 1) END AS intervention,"
     " CASE WHEN rh.step = 'done' AND rh.rollback_step IS NULL THEN"
     "  (SELECT left(coalesce(nullif(hs.reason, ''), 'isolated by the health monitor'), 300)"
     "   FROM host_state_history hs WHERE hs.host_id = rh.host_id"
     "   AND hs.event = 'monitor_isolated' AND hs.at >= rh.finished_at"
     "   ORDER BY hs.id LIMIT 1) END AS isolation,"
     " h.current_stack_id IS NOT DISTINCT FROM rh.to_stack_id AS on_target,"
     " rh.from_stack_id IS NOT NULL AS has_from,"
     " rh.provision_job_id IS NOT NULL AS provisioned,"
     " h.current_stack_id::text AS current_stack_id,"
     " (SELECT g.stack_id::text FROM gate_runs g WHERE g.id = h.accepted_gate_run_id)"
     "   AS gate_stack_id,"
     " sj.id::text AS job_id, sj.state AS job_state,"
     " CASE WHEN sj.error_class IS NULL THEN NULL"
     "   ELSE left(sj.error_class || ': ' || coalesce(sj.error, ''), 300) END AS job_error,"
     " run.id::text AS run_id, run.verdict, left(run.reason, 300) AS verdict_reason,"
     " coalesce(run.id = h.accepted_gate_run_id, false) AS gate_is_run"
     " FROM rollout_hosts rh JOIN hosts h ON h.id = rh.host_id"
     " LEFT JOIN jobs sj ON sj.id = CASE WHEN rh.rollback_step IS NULL THEN"
     "   CASE rh.step WHEN 'provisioning' THEN rh.provision_job_id"
     "   WHEN 'gating' THEN rh.gate_job_id END"
     "   ELSE CASE rh.rollback_step WHEN 'provisioning' THEN rh.rollback_provision_job_id"
     "   WHEN 'gating' THEN rh.rollback_gate_job_id END END"
     " LEFT JOIN LATERAL (SELECT g.id, g.verdict, g.reason FROM gate_runs g WHERE g.job_id = sj.id"
     "   ORDER BY g.seq DESC LIMIT 1) run ON true"
     " WHERE rh.rollout_id = $1::uuid ORDER BY rh.position"},
    {"ro_host_step",
     "WITH t AS (UPDATE rollouts SET updated_at = now() WHERE id = $1::uuid)"
     " UPDATE rollout_hosts SET step = $3, updated_at = now(),"
     " started_at = CASE WHEN $9::boolean THEN now() ELSE started_at END,"
     " finished_at = CASE WHEN $3 IN ('done', 'failed', 'skipped') THEN now() ELSE finished_at END,"
     " error = coalesce(left($4, 4000), error),"
     " provision_job_id = coalesce($5::uuid, provision_job_id),"
     " gate_job_id = coalesce($6::uuid, gate_job_id),"
     " gate_run_id = coalesce($7::uuid, gate_run_id),"
     " comparison = coalesce($8::jsonb, comparison)"
     " WHERE rollout_id = $1::uuid AND host_id = $2::uuid"},
    {"ro_host_rollback",
     "WITH t AS (UPDATE rollouts SET updated_at = now() WHERE id = $1::uuid)"
     " UPDATE rollout_hosts SET rollback_step = $3, updated_at = now(),"
     " rollback_started_at = coalesce(rollback_started_at, now()),"
     " rollback_finished_at = CASE WHEN $3 IN ('done', 'failed') THEN now()"
     "   ELSE rollback_finished_at END,"
     " error = left(CASE WHEN $4::text IS NULL THEN error WHEN error IS NULL THEN $4"
     "   ELSE error || '; ' || $4 END, 4000),"
     " rollback_provision_job_id = coalesce($5::uuid, rollback_provision_job_id),"
     " rollback_gate_job_id = coalesce($6::uuid, rollback_gate_job_id)"
     " WHERE rollout_id = $1::uuid AND host_id = $2::uuid"},
    {"ro_soak", "UPDATE rollouts SET wave_state = 'soaking', updated_at = now(),"
                " soak_until = now() + soak_seconds * interval '1 second' WHERE id = $1::uuid"},
    {"ro_next_wave", "UPDATE rollouts SET current_wave = current_wave + 1, wave_state = 'running',"
                     " soak_until = NULL, wave_started_at = now(), updated_at = now(),"
                     " state = CASE WHEN $2::boolean THEN 'paused' ELSE state END,"
                     " canary_paused = canary_paused OR $2::boolean WHERE id = $1::uuid"},
    {"ro_succeed",
     "UPDATE rollouts SET state = 'succeeded', finished_at = now(), updated_at = now()"
     " WHERE id = $1::uuid AND state IN " ACTIVE},
    {"ro_fail_hosts",
     "UPDATE rollout_hosts SET updated_at = now(),"
     " rollback_step = CASE WHEN step IN ('pending', 'skipped') THEN 'not_needed'"
     "   ELSE 'pending' END,"
     " step = CASE WHEN host_id = $2::uuid OR step IN " IN_FLIGHT " THEN 'failed' ELSE step END,"
     " finished_at = CASE WHEN host_id = $2::uuid OR step IN " IN_FLIGHT " THEN now()"
     "   ELSE finished_at END,"
     " error = CASE WHEN host_id = $2::uuid THEN left($3, 4000)"
     "   WHEN step IN " IN_FLIGHT " THEN 'interrupted at ' || step || ': the rollout rolls back'"
     "   ELSE error END"
     " WHERE rollout_id = $1::uuid AND rollback_step IS NULL"},
    {"ro_fail",
     "UPDATE rollouts SET state = 'rolling_back', error = left($2, 4000), evidence = $3::jsonb,"
     " updated_at = now(), soak_until = NULL WHERE id = $1::uuid"},
    {"ro_finish",
     "UPDATE rollouts r SET state = $2, finished_at = now(), updated_at = now(),"
     " error = left(CASE WHEN r.error IS NULL THEN $3 ELSE r.error || '; ' || $3 END, 4000),"
     " failed_hosts = coalesce((SELECT array_agg(rh.host_id ORDER BY rh.position)"
     "   FROM rollout_hosts rh JOIN hosts h ON h.id = rh.host_id WHERE rh.rollout_id = r.id"
     "   AND rh.rollback_step = 'failed' AND h.state <> 'ready'), '{}')"
     " WHERE r.id = $1::uuid AND r.state IN " ACTIVE},
    {"ro_checked", "UPDATE rollouts SET checked_at = now() WHERE id = $1::uuid"},
};
const size_t db_rollout_nstmts = sizeof db_rollout_stmts / sizeof db_rollout_stmts[0];

/* ---- create: typed reads and the insert ---- */

enum db_status db_rollout_pool_lock(struct db_conn *c, const char *pool_id, const char *scope,
                                    int *has_workload)
{
    const char *p[2] = {pool_id, scope};
    PGresult *r;
    *has_workload = 0;
    enum db_status s = db_exec(c, "ro_pool_lock", 2, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT)
        *has_workload = db_bool(r, 0, "has_workload");
    PQclear(r);
    return s;
}

enum db_status db_rollout_pool_project(struct db_conn *c, const char *pool_id, char project[37])
{
    const char *p[1] = {pool_id};
    PGresult *r;
    project[0] = '\0';
    enum db_status s = db_exec(c, "ro_pool_project", 1, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "project_id", project, 37);
    PQclear(r);
    return s;
}

enum db_status db_rollout_stack(struct db_conn *c, const char *stack_id, const char *pool_id,
                                char id_out[37], char **driver)
{
    const char *p[2] = {stack_id, pool_id};
    PGresult *r;
    id_out[0] = '\0';
    *driver = NULL;
    enum db_status s = db_exec(c, "ro_stack", 2, p, &r);
    if (s < 0)
        return s;
    int oom = 0;
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "id", id_out, 37);
        *driver = db_dup(r, 0, "driver_version", &oom);
    }
    PQclear(r);
    return oom ? DB_HARD_ERROR : s;
}

enum db_status db_rollout_active(struct db_conn *c, const char *pool_id, char id_out[37])
{
    const char *p[1] = {pool_id};
    PGresult *r;
    id_out[0] = '\0';
    enum db_status s = db_exec(c, "ro_active", 1, p, &r);
    if (s < 0)
        return s;
    if (s != DB_NO_RESULTS)
        db_copy(r, 0, "id", id_out, 37);
    PQclear(r);
    return s == DB_NO_RESULTS ? s : DB_ONE_RESULT;
}

#define PH(col)                                          \
    {                                                    \
#col, offsetof(struct db_rollout_pool_host, col) \
    }
static const struct db_str_field pool_host_strs[] = {PH(name), PH(state), PH(driver_version),
                                                     PH(current_stack_id)};
#undef PH
#define NPOOL_HOST_STRS (sizeof pool_host_strs / sizeof pool_host_strs[0])

enum db_status db_rollout_pool_hosts(struct db_conn *c, const char *pool_id,
                                     struct db_rollout_pool_host **hosts, int *n)
{
    const char *p[1] = {pool_id};
    PGresult *r;
    *hosts = NULL;
    *n = 0;
    enum db_status s = db_exec(c, "ro_pool_hosts", 1, p, &r);
    if (s < 0)
        return s;
    int rows = PQntuples(r);
    *hosts = calloc((size_t)(rows > 0 ? rows : 1), sizeof **hosts);
    for (int i = 0; *hosts != NULL && i < rows; i++) {
        struct db_rollout_pool_host *h = &(*hosts)[i];
        db_copy(r, i, "id", h->id, sizeof h->id);
        if (db_dup_fields(r, i, pool_host_strs, NPOOL_HOST_STRS, h) != 0)
            break;
        *n = i + 1;
    }
    PQclear(r);
    return *hosts != NULL && *n == rows ? DB_ONE_RESULT : DB_HARD_ERROR;
}

void db_rollout_pool_hosts_free(struct db_rollout_pool_host *hosts, int n)
{
    for (int i = 0; hosts != NULL && i < n; i++)
        db_free_fields(pool_host_strs, NPOOL_HOST_STRS, &hosts[i]);
    free(hosts);
}

enum db_status db_rollout_any_baseline(struct db_conn *c, const char *pool_id,
                                       const char *const *host_ids, int n, int *found)
{
    *found = 0;
    /* the ids are UUIDs (checked): a plain array literal */
    size_t len = 3 + (size_t)(n > 0 ? n : 0) * 37;
    char *lit = malloc(len);
    if (lit == NULL)
        return DB_HARD_ERROR;
    size_t used = (size_t)snprintf(lit, len, "{");
    for (int i = 0; i < n; i++) {
        if (!util_is_uuid(host_ids[i])) {
            free(lit);
            return DB_HARD_ERROR;
        }
        used += (size_t)snprintf(lit + used, len - used, "%s%s", i ? "," : "", host_ids[i]);
    }
    snprintf(lit + used, len - used, "}");
    const char *p[2] = {pool_id, lit};
    long rows = 0;
    enum db_status s = db_exec_count(c, "ro_has_baseline", 2, p, &rows);
    free(lit);
    *found = rows > 0;
    return s;
}

/* The hosts and the skipped as the JSON the recordset statements read. */
static json_t *member_row(const struct db_rollout_layout *l, int i)
{
    const struct db_rollout_member *m = &l->hosts[i];
    return json_pack("{s:s, s:s, s:i, s:i}", "host_id", m->host_id, "name", m->name, "position",
                     m->position, "wave", m->wave);
}

static json_t *skipped_row(const struct db_rollout_layout *l, int i)
{
    const struct db_rollout_skip *k = &l->skipped[i];
    return json_pack("{s:s, s:s, s:s, s:s}", "host_id", k->host_id, "name", k->name, "state",
                     k->state, "reason", k->reason);
}

/* n rows of l as a JSON array's text (caller frees; NULL when out of memory). */
static char *rows_json(const struct db_rollout_layout *l, int n,
                       json_t *(*row)(const struct db_rollout_layout *, int))
{
    json_t *a = json_array();
    int bad = a == NULL;
    for (int i = 0; !bad && i < n; i++)
        bad = json_array_append_new(a, row(l, i)) != 0;
    char *text = bad ? NULL : json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

static enum db_status insert_row(struct db_conn *c, const struct db_rollout_new *in,
                                 const struct db_rollout_layout *l, char id_out[37])
{
    char canary[16], maxu[24], maxh[16], ratio[40], soak[16], nw[16];
    snprintf(canary, sizeof canary, "%d", in->canary);
    if (in->max_unavailable_pct > 0)
        snprintf(maxu, sizeof maxu, "\"%d%%\"", in->max_unavailable_pct);
    else
        snprintf(maxu, sizeof maxu, "%d", in->max_unavailable);
    snprintf(maxh, sizeof maxh, "%d", l->max_hosts);
    snprintf(ratio, sizeof ratio, "%.17g", in->min_baseline_ratio);
    snprintf(soak, sizeof soak, "%d", in->soak_seconds);
    snprintf(nw, sizeof nw, "%d", l->waves);
    const char *p[11] = {in->pool_id,
                         in->stack_id,
                         canary,
                         maxu,
                         maxh,
                         in->ratio_set ? ratio : NULL,
                         soak,
                         in->pause_after_canary ? "true" : "false",
                         in->force ? "true" : "false",
                         nw,
                         in->created_by};
    PGresult *r;
    enum db_status s = db_exec_row(c, "ro_insert", 11, p, &r);
    if (s != DB_ONE_RESULT)
        return s < 0 ? s : DB_HARD_ERROR;
    db_copy(r, 0, "id", id_out, 37);
    PQclear(r);
    return DB_ONE_RESULT;
}

enum db_status db_rollout_insert(struct db_conn *c, const struct db_rollout_new *in,
                                 const struct db_rollout_layout *l, char id_out[37])
{
    id_out[0] = '\0';
    enum db_status s = insert_row(c, in, l, id_out);
    if (s < 0)
        return s;
    char *hosts = rows_json(l, l->nhosts, member_row);
    char *skipped = rows_json(l, l->nskipped, skipped_row);
    s = hosts && skipped ? DB_ONE_RESULT : DB_HARD_ERROR;
    if (s >= 0) {
        const char *ph1[3] = {id_out, in->stack_id, hosts};
        s = db_exec_noresult(c, "ro_insert_hosts", 3, ph1);
    }
    if (s >= 0) {
        const char *ph2[2] = {id_out, skipped};
        s = db_exec_noresult(c, "ro_insert_skipped", 2, ph2);
    }
    free(hosts);
    free(skipped);
    return s < 0 ? s : DB_ONE_RESULT;
}

/* ---- control: the lock and the writes ---- */

enum db_status db_rollout_exists(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "ro_exists", 1, p);
}

enum db_status db_rollout_control_lock(struct db_conn *c, const char *id, const char *scope,
                                       char state[16], int *touched)
{
    const char *p[2] = {id, scope};
    PGresult *r;
    state[0] = '\0';
    *touched = 0;
    enum db_status s = db_exec(c, "ro_lock", 2, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "state", state, 16);
        *touched = db_bool(r, 0, "touched");
    }
    PQclear(r);
    return s;
}

enum db_status db_rollout_set_state(struct db_conn *c, const char *id, const char *state,
                                    const char *error)
{
    const char *p[3] = {id, state, error};
    return db_exec_noresult(c, "ro_set_state", 3, p);
}

enum db_status db_rollout_fail_hosts(struct db_conn *c, const char *id, const char *host_id,
                                     const char *error)
{
    const char *q[3] = {id, host_id, error};
    return db_exec_noresult(c, "ro_fail_hosts", 3, q);
}

/* ---- the driver's side ---- */

enum db_status db_rollout_due(struct db_conn *c, int max, char (*ids)[37], int *n)
{
    return db_exec_ids(c, "ro_due", max, ids, n);
}

#define HF(col)                                           \
    {                                                     \
#col, offsetof(struct db_rollout_host_facts, col) \
    }
static const struct db_str_field host_strs[] = {
    HF(host_name),
    HF(step),
    HF(rollback_step),
    HF(from_stack_id),
    HF(to_stack_id),
    HF(provision_job_id),
    HF(gate_job_id),
    HF(rollback_provision_job_id),
    HF(rollback_gate_job_id),
    HF(host_state),
    HF(hold_reason),
    HF(foreign_job),
    HF(intervention),
    HF(isolation),
    HF(job_id),
    HF(job_state),
    HF(job_error),
    HF(run_id),
    HF(verdict),
    HF(verdict_reason),
    HF(gate_run_id),
    HF(current_stack_id),
    HF(gate_stack_id),
};
#undef HF
#define NHOST_STRS (sizeof host_strs / sizeof host_strs[0])

static enum db_status read_host_facts(struct db_conn *c, struct db_rollout_facts *f,
                                      const char *actor)
{
    const char *p[2] = {f->id, actor};
    PGresult *r;
    enum db_status s = db_exec(c, "ro_host_facts", 2, p, &r);
    if (s < 0)
        return s;
    int n = PQntuples(r);
    f->hosts = calloc((size_t)(n > 0 ? n : 1), sizeof *f->hosts);
    if (f->hosts == NULL) {
        PQclear(r);
        return DB_HARD_ERROR;
    }
    for (int i = 0; i < n; i++) {
        struct db_rollout_host_facts *h = &f->hosts[i];
        db_copy(r, i, "host_id", h->host_id, sizeof h->host_id);
        h->wave = (int)db_long(r, i, "wave");
        h->busy = db_bool(r, i, "busy");
        h->held = db_bool(r, i, "held");
        h->on_target = db_bool(r, i, "on_target");
        h->has_from = db_bool(r, i, "has_from");
        h->provisioned = db_bool(r, i, "provisioned");
        h->gate_is_run = db_bool(r, i, "gate_is_run");
        if (db_dup_fields(r, i, host_strs, NHOST_STRS, h) != 0) {
            PQclear(r);
            return DB_HARD_ERROR;
        }
        f->nhosts = i + 1;
    }
    PQclear(r);
    return DB_ONE_RESULT;
}

enum db_status db_rollout_facts(struct db_conn *c, const char *id, const char *actor,
                                struct db_rollout_facts *f)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(f, 0, sizeof *f);
    enum db_status s = db_exec_row(c, "ro_facts", 1, p, &r);
    if (s != DB_ONE_RESULT)
        return s;
    db_copy(r, 0, "id", f->id, sizeof f->id);
    db_copy(r, 0, "pool_id", f->pool_id, sizeof f->pool_id);
    db_copy(r, 0, "project_id", f->project_id, sizeof f->project_id);
    db_copy(r, 0, "stack_id", f->stack_id, sizeof f->stack_id);
    db_copy(r, 0, "state", f->state, sizeof f->state);
    f->canary = (int)db_long(r, 0, "canary");
    f->max_unavailable = (int)db_long(r, 0, "max_unavailable_hosts");
    f->soak_seconds = (int)db_long(r, 0, "soak_seconds");
    f->pause_after_canary = db_bool(r, 0, "pause_after_canary");
    f->canary_paused = db_bool(r, 0, "canary_paused");
    f->waves = (int)db_long(r, 0, "waves");
    f->current_wave = (int)db_long(r, 0, "current_wave");
    f->soaking = db_bool(r, 0, "soaking");
    f->soak_over = db_bool(r, 0, "soak_over");
    f->ratio_set = db_bool(r, 0, "ratio_set");
    f->min_ratio = db_num(r, 0, "ratio");
    PQclear(r);
    return read_host_facts(c, f, actor);
}

void db_rollout_facts_free(struct db_rollout_facts *f)
{
    for (int i = 0; i < f->nhosts; i++)
        db_free_fields(host_strs, NHOST_STRS, &f->hosts[i]);
    free(f->hosts);
    f->hosts = NULL;
    f->nhosts = 0;
}

enum db_status db_rollout_host_step(struct db_conn *c, const char *id, const char *host_id,
                                    const struct db_rollout_host_set *set)
{
    const char *p[9] = {id,
                        host_id,
                        set->step,
                        set->error,
                        set->provision_job_id,
                        set->gate_job_id,
                        set->gate_run_id,
                        set->comparison,
                        set->started ? "true" : "false"};
    return db_exec_noresult(c, "ro_host_step", 9, p);
}

enum db_status db_rollout_host_rollback(struct db_conn *c, const char *id, const char *host_id,
                                        const char *step, const char *error,
                                        const char *provision_job_id, const char *gate_job_id)
{
    const char *p[6] = {id, host_id, step, error, provision_job_id, gate_job_id};
    return db_exec_noresult(c, "ro_host_rollback", 6, p);
}

enum db_status db_rollout_soak(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "ro_soak", 1, p);
}

enum db_status db_rollout_next_wave(struct db_conn *c, const char *id, int pause)
{
    const char *p[2] = {id, pause ? "true" : "false"};
    return db_exec_noresult(c, "ro_next_wave", 2, p);
}

enum db_status db_rollout_succeed(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "ro_succeed", 1, p);
}

enum db_status db_rollout_fail(struct db_conn *c, const char *id, const char *host_id,
                               const char *error, const char *evidence)
{
    const char *p[3] = {id, error, evidence};
    enum db_status s = db_exec_noresult(c, "ro_fail", 3, p);
    if (s < 0)
        return s;
    return db_rollout_fail_hosts(c, id, host_id, error);
}

enum db_status db_rollout_finish(struct db_conn *c, const char *id, const char *state,
                                 const char *why)
{
    const char *p[3] = {id, state, why};
    return db_exec_noresult(c, "ro_finish", 3, p);
}

enum db_status db_rollout_checked(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "ro_checked", 1, p);
}
