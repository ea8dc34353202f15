/* hosts.c — hosts access. Reads are JSON documents rendered by PostgreSQL. */
#include "db/hosts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/decode.h"

/* The Host document. History is the 20 most recent changes, newest first. last_gate is
 * the newest run of kind gate (diagnostics apart) with the names of its checks that
 * failed or timed out, in check order: what a status page shows without a query per host
 * (gate_runs_host_seq serves it). */
// clang-format off
#define HOST_DOC(h)                                                                              \
    "json_build_object('id', " h ".id, 'name', " h ".name, 'address', host(" h ".address),"      \
    " 'port', " h ".port, 'user', " h ".ssh_user, 'credential_id', " h ".credential_id,"         \
    " 'pool_id', " h ".pool_id, 'project', json_build_object('id', " h ".project_id, 'name',"    \
    " (SELECT pj.name FROM projects pj WHERE pj.id = " h ".project_id)),"                        \
    " 'host_key_sha256', " h ".host_key_sha256, 'trust_on_first_use', " h                        \
    ".trust_on_first_use," " 'labels', " h                                                       \
    ".labels, 'state', " h ".state, 'facts', " h ".facts," " 'current_stack_id', " h             \
    ".current_stack_id, 'desired_stack_id', " h ".desired_stack_id," " 'accepted_gate_run_id', " \
    h ".accepted_gate_run_id," " 'quarantine', CASE WHEN " h                                     \
    ".quarantined_at IS NULL THEN NULL ELSE json_build_object(" "   'since', "                   \
    DB_TS(h ".quarantined_at") ", 'reason', " h ".quarantine_reason) END,"                       \
    " 'last_job', (SELECT json_build_object('id', j.id, 'kind', j.kind, " "'state', j.state,"    \
    "   'error_class', j.error_class) FROM jobs j WHERE j.id = " h ".last_job_id),"              \
    " 'last_seen', " DB_TS(h ".last_seen") "," " 'last_gate', (SELECT json_build_object('id', "  \
    "g.id, 'verdict', g.verdict," "   'failing_checks', coalesce((SELECT "                       \
    "json_agg(c.value->>'name' ORDER BY c.ord)" "     FROM jsonb_array_elements(g.checks) WITH " \
    "ORDINALITY AS c(value, ord)" "     WHERE c.value->>'status' IN ('fail', "                   \
    "'timeout')), '[]'::json)," "   'finished_at', " DB_TS("g.finished_at") ") FROM gate_runs g" \
    "   WHERE g.host_id = " h ".id AND g.kind = 'gate' " "ORDER BY g.seq DESC LIMIT " "1),"      \
    " 'state_history', " "coalesce((SELECT " "json_agg(json_build_object('"                      \
    "from', s.from_state," "   'to', s.to_state, " "'reason', s.reason, " "'job_id', s.job_id, " \
    "'actor', s.actor," "   'at', " DB_TS("s.at") ") ORDER BY s.id " "DESC) FROM "               \
    "(SELECT * FROM " "host_state_" "history" "   WHERE " "host_id = " h ".id ORDER BY id "      \
    "DESC LIMIT 20) " "s), '[]'::json)," " 'created_by'," " " h ".created_by, " "'created_at',"  \
    " " DB_TS(h ".created_" "at") "," " '" "upda" "ted_" "at'," " " DB_TS(h ".upd" "ated" "_at") \
    ")::text"
// clang-format on

const struct db_stmt db_host_stmts[] = {
    {"host_insert",
     "WITH ins AS (INSERT INTO hosts (name, address, port, ssh_user, credential_id, pool_id,"
     " host_key_sha256, labels, created_by, trust_on_first_use) VALUES ($1, $2::inet, $3::int,"
     " $4, $5::uuid, $6::uuid, $7::text, $8::jsonb, $9, $7::text IS NULL) RETURNING *),"
     " hist AS (INSERT INTO host_state_history (host_id, from_state, to_state, reason, actor)"
     "  SELECT id, NULL, 'registered', 'registered', $9 FROM ins)"
     " SELECT ins.id::text FROM ins"},
    {"host_get",
     "SELECT " HOST_DOC("h") " AS doc FROM hosts h WHERE h.id = $1::uuid"
                             " AND ($2::uuid[] IS NULL OR h.project_id = ANY ($2::uuid[]))"},
    {"host_list",
     "SELECT " HOST_DOC(
         "h") " AS doc, h.seq::text AS key FROM hosts h"
              " WHERE ($1::text IS NULL OR h.state = $1)"
              "   AND ($2::uuid IS NULL OR h.pool_id = $2)"
              "   AND ($3::jsonb IS NULL OR h.labels @> $3)"
              "   AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM pools p WHERE p.id = h.pool_id"
              "        AND p.gpu_model = $4))"
              "   AND ($5::bool IS NULL OR (h.last_seen IS NULL OR h.last_seen < now() - interval"
              "        '10 minutes') = $5)"
              "   AND h.seq > coalesce($6::bigint, 0)"
              "   AND ($8::uuid[] IS NULL OR h.project_id = ANY ($8::uuid[]))"
              "   AND ($9::uuid IS NULL OR h.project_id = $9::uuid)"
              " ORDER BY h.seq LIMIT $7::int"},
    {"host_patch",
     "UPDATE hosts h SET labels = coalesce($2::jsonb, labels), pool_id = coalesce($3::uuid,"
     " pool_id), credential_id = coalesce($4::uuid, credential_id), updated_at = now()"
     " WHERE id = $1::uuid RETURNING " HOST_DOC("h") " AS doc"},
    /* The hour and quarter rollups have no foreign key (migrations/0010): their rows go
     * with the host, found by the buckets of its reports (index led by host_id). Its
     * caller has locked the host's row (host_transition's FOR UPDATE, an earlier statement
     * of the same transaction): a settle of the rollups (migrations/0045) holds its hosts
     * FOR KEY SHARE until it commits, so this statement sees the rows that settle added,
     * or the settle finds the host's reports gone (tests/api/work_report_rollups.test.js). */
    {"host_delete",
     "WITH b AS (SELECT DISTINCT date_trunc('hour', window_start, 'UTC') AS h FROM work_reports"
     "  WHERE host_id = $1::uuid),"
     " dh AS (DELETE FROM work_report_hours d USING b WHERE d.bucket = b.h"
     "  AND d.host_id = $1::uuid),"
     " dq AS (DELETE FROM work_report_quarters d WHERE d.host_id = $1::uuid AND d.bucket IN"
     "  (SELECT date_bin('6 hours', h, timestamptz '2000-01-01 00:00Z') FROM b))"
     " DELETE FROM hosts WHERE id = $1::uuid"},
    /* Every state change goes through host_transition() (migrations/0012): the event's
     * row of the state machine, its effects, the history row. */
    {"host_event",
     "SELECT host_transition($1::uuid, $2, $3, $4, $5::uuid, $6, $7::uuid) AS to_state"},
    {"host_target",
     "SELECT h.id::text, h.name, host(h.address) AS address, h.ssh_user, h.credential_id::text,"
     " h.pool_id::text, h.host_key_sha256, h.state, h.port,"
     " p.spec->>'durable_path' AS durable_path, p.spec->>'scratch_path' AS scratch_path,"
     " p.spec->>'stop_command' AS stop_command, p.gpu_model,"
     " coalesce((p.spec->>'gpu_count')::int, 0) AS gpu_count, h.quarantined_at IS NOT NULL AS held"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE h.id = $1::uuid"},
    /* What a host command is decided on (service/host_commands.c): the target's columns,
     * the stacks, the accepted gate's stack and the active job. */
    {"host_facts",
     "SELECT h.id::text, h.name, host(h.address) AS address, h.ssh_user, h.credential_id::text,"
     " h.pool_id::text, h.host_key_sha256, h.state, h.port,"
     " p.spec->>'durable_path' AS durable_path, p.spec->>'scratch_path' AS scratch_path,"
     " p.spec->>'stop_command' AS stop_command, p.gpu_model,"
     " coalesce((p.spec->>'gpu_count')::int, 0) AS gpu_count, h.quarantined_at IS NOT NULL AS held,"
     " h.project_id::text AS project_id,"
     " h.current_stack_id::text AS current_stack_id, h.desired_stack_id::text AS desired_stack_id,"
     " (SELECT g.stack_id::text FROM gate_runs g WHERE g.id = h.accepted_gate_run_id)"
     "   AS gate_stack_id,"
     " j.id::text AS job_id, j.state AS job_state"
     " FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " LEFT JOIN jobs j ON j.host_id = h.id AND j.state IN ('queued', 'running')"
     " WHERE h.id = $1::uuid"},
    /* Contact by a job attempt: records the key on first contact and last_seen, only
     * while that attempt still holds the job (the job row is share-locked, so a claim by
     * another worker either waits for this or fences it out). */
    {"host_contact",
     "WITH f AS (SELECT id FROM jobs WHERE id = $3::uuid AND attempt = $4::int"
     "  AND state = 'running' FOR SHARE),"
     " pin AS (UPDATE hosts h SET host_key_sha256 = $2, updated_at = now(), last_seen = now()"
     "  FROM f"
     "  WHERE h.id = $1::uuid AND h.host_key_sha256 IS NULL RETURNING h.id),"
     " seen AS (UPDATE hosts h SET last_seen = now() FROM f WHERE h.id = $1::uuid"
     "  AND NOT EXISTS (SELECT 1 FROM pin) RETURNING h.id)"
     " SELECT (SELECT count(*) FROM f)::int AS live, (SELECT count(*) FROM pin)::int AS pinned"},
    {"host_provisioned", "UPDATE hosts SET accepted_gate_run_id = CASE"
                         "   WHEN current_stack_id IS DISTINCT FROM $3::uuid THEN NULL"
                         "   WHEN facts->'gpus' IS DISTINCT FROM $2::jsonb->'gpus' THEN NULL"
                         "   ELSE accepted_gate_run_id END,"
                         " facts = $2::jsonb, current_stack_id = $3::uuid, last_seen = now(),"
                         " updated_at = now() WHERE id = $1::uuid"},
    {"host_seen", "UPDATE hosts SET last_seen = now() WHERE id = $1::uuid"},
    /* A registration's or a move's references: the pool's project and what it expects, the
     * credential's project and binding (NULL arrays: any). */
    {"host_refs",
     "SELECT p.id IS NOT NULL AS pool_found, p.project_id::text AS pool_project, p.gpu_model,"
     " coalesce((p.spec->>'gpu_count')::int, 0) AS gpu_count,"
     " c.id IS NOT NULL AS credential_found, c.project_id::text AS credential_project,"
     " array_to_string(c.allowed_users, ',') AS allowed_users,"
     " array_to_string(c.allowed_cidrs, ',') AS allowed_cidrs"
     " FROM (SELECT 1) o LEFT JOIN pools p ON p.id = $1::uuid"
     " LEFT JOIN credentials c ON c.id = $2::uuid"},
    {"host_stack_usable", "SELECT 1 FROM stacks WHERE id = $1::uuid"
                          " AND (shared OR project_id = $2::uuid)"},
    /* The budget a new host or a provisioning meets: the settings, and the spend of the
     * month the budget pass last computed (UTC months, as the pass counts them). */
    {"host_budget",
     "SELECT p.on_exhausted, p.budget_monthly IS NOT NULL AS has_budget,"
     " p.budget_monthly::text AS budget, s.project_id IS NOT NULL AS has_spend,"
     " s.spend::text AS spend,"
     " coalesce(s.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date, false)"
     "   AS current_month, coalesce(s.exhausted, false) AS exhausted"
     " FROM projects p LEFT JOIN project_spend s ON s.project_id = p.id"
     " WHERE p.id = $1::uuid"},
    /* Release from quarantine: the new pin (NULL: record the key on next contact). */
    {"host_repin",
     "UPDATE hosts SET host_key_sha256 = $2::text, trust_on_first_use = $2::text IS NULL,"
     " updated_at = now() WHERE id = $1::uuid"},
};
const size_t db_host_nstmts = sizeof db_host_stmts / sizeof db_host_stmts[0];

enum db_status db_host_insert(struct db_conn *c, const struct db_host_new *h, char **doc,
                              char id[37])
{
    const char *p[9] = {
        h->name,    h->address,         h->port,        h->user,      h->credential_id,
        h->pool_id, h->host_key_sha256, h->labels_json, h->created_by};
    *doc = NULL;
    enum db_status s = db_exec_returning_id(c, "host_insert", 9, p, id);
    /* Read it back in a second statement: a data-modifying CTE's writes are not visible
     * to the other parts of the same statement (the history row would be missing). */
    return s == DB_ONE_RESULT ? db_host_get(c, id, NULL, doc) : s;
}

enum db_status db_host_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "host_get", 2, p, doc);
}

enum db_status db_host_list(struct db_conn *c, const struct db_host_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[9] = {f->state,     f->pool_id, f->label_json, f->gpu_model, f->stale,
                        f->after_seq, limit,      f->scope,      f->project_id};
    return db_exec_page(c, "host_list", 9, p, page);
}

enum db_status db_host_patch(struct db_conn *c, const char *id, const char *labels_json,
                             const char *pool_id, const char *credential_id, char **doc)
{
    const char *p[4] = {id, labels_json, pool_id, credential_id};
    return db_exec_doc(c, "host_patch", 4, p, doc);
}

enum db_status db_host_delete(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "host_delete", 1, p);
}

enum db_status db_host_event(struct db_conn *c, const struct db_host_event *e, char to[24],
                             enum db_host_refusal *refused)
{
    const char *p[7] = {e->host_id, e->event, e->to_hint,    e->reason,
                        e->job_id,  e->actor, e->gate_run_id};
    PGresult *r;
    *refused = DB_HOST_OK;
    if (to != NULL)
        to[0] = '\0';
    enum db_status s = db_exec(c, "host_event", 7, p, &r);
    if (s < 0) {
        const char *st = db_conn_sqlstate(c);
        if (!strcmp(st, "GF001"))
            *refused = DB_HOST_NOT_ALLOWED;
        else if (!strcmp(st, "GF002"))
            *refused = DB_HOST_QUARANTINED;
        return s;
    }
    int missing = PQntuples(r) != 1 || db_isnull(r, 0, "to_state");
    if (!missing && to != NULL)
        db_copy(r, 0, "to_state", to, 24);
    PQclear(r);
    return missing ? DB_NO_RESULTS : DB_ONE_RESULT;
}

/* The strings of a host target and their columns. */
#define F(member, col)                               \
    {                                                \
        col, offsetof(struct db_host_target, member) \
    }
static const struct db_str_field target_strings[] = {
    F(id, "id"),
    F(name, "name"),
    F(address, "address"),
    F(user, "ssh_user"),
    F(credential_id, "credential_id"),
    F(pool_id, "pool_id"),
    F(host_key_sha256, "host_key_sha256"),
    F(state, "state"),
    F(durable_path, "durable_path"),
    F(scratch_path, "scratch_path"),
    F(stop_command, "stop_command"),
    F(pool_gpu_model, "gpu_model"),
};
#undef F
#define NTARGET_STRINGS (sizeof target_strings / sizeof target_strings[0])

enum db_status db_host_target_decode(const PGresult *r, struct db_host_target *t)
{
    memset(t, 0, sizeof *t);
    /* A failed copy must never read as NULL (a NULL pin means first contact). */
    if (db_dup_fields(r, 0, target_strings, NTARGET_STRINGS, t) != 0)
        return DB_HARD_ERROR;
    t->port = (int)db_long(r, 0, "port");
    t->pool_gpu_count = (int)db_long(r, 0, "gpu_count");
    t->held = db_bool(r, 0, "held");
    return DB_ONE_RESULT;
}

enum db_status db_host_target(struct db_conn *c, const char *id, struct db_host_target *t)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(t, 0, sizeof *t);
    enum db_status s = db_exec(c, "host_target", 1, p, &r);
    if (s == DB_ONE_RESULT)
        s = db_host_target_decode(r, t);
    PQclear(r);
    return s;
}

void db_host_target_free(struct db_host_target *t)
{
    db_free_fields(target_strings, NTARGET_STRINGS, t);
    memset(t, 0, sizeof *t);
}

enum db_status db_host_facts(struct db_conn *c, const char *id, struct db_host_facts *f)
{
    const char *p[1] = {id};
    PGresult *r;
    memset(f, 0, sizeof *f);
    enum db_status s = db_exec(c, "host_facts", 1, p, &r);
    if (s == DB_ONE_RESULT) /* at most one active job per host (jobs_one_active_per_host) */
        s = db_host_target_decode(r, &f->t);
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "project_id", f->project_id, sizeof f->project_id);
        db_copy(r, 0, "current_stack_id", f->current_stack_id, sizeof f->current_stack_id);
        db_copy(r, 0, "desired_stack_id", f->desired_stack_id, sizeof f->desired_stack_id);
        db_copy(r, 0, "gate_stack_id", f->gate_stack_id, sizeof f->gate_stack_id);
        db_copy(r, 0, "job_id", f->job_id, sizeof f->job_id);
        db_copy(r, 0, "job_state", f->job_state, sizeof f->job_state);
    }
    PQclear(r);
    return s;
}

void db_host_facts_free(struct db_host_facts *f)
{
    db_host_target_free(&f->t);
    memset(f, 0, sizeof *f);
}

enum db_status db_host_refs(struct db_conn *c, const char *pool_id, const char *credential_id,
                            struct db_host_refs *refs)
{
    const char *p[2] = {pool_id, credential_id};
    PGresult *r;
    memset(refs, 0, sizeof *refs);
    enum db_status s = db_exec_row(c, "host_refs", 2, p, &r);
    if (s != DB_ONE_RESULT)
        return s < 0 ? s : DB_HARD_ERROR; /* the statement always answers one row */
    int oom = 0;
    refs->pool_found = db_bool(r, 0, "pool_found");
    db_copy(r, 0, "pool_project", refs->pool_project, sizeof refs->pool_project);
    db_copy(r, 0, "gpu_model", refs->gpu_model, sizeof refs->gpu_model);
    refs->gpu_count = (int)db_long(r, 0, "gpu_count");
    refs->credential_found = db_bool(r, 0, "credential_found");
    db_copy(r, 0, "credential_project", refs->credential_project, sizeof refs->credential_project);
    refs->allowed_users = db_dup(r, 0, "allowed_users", &oom);
    refs->allowed_cidrs = db_dup(r, 0, "allowed_cidrs", &oom);
    PQclear(r);
    if (oom) {
        db_host_refs_free(refs);
        return DB_HARD_ERROR;
    }
    return DB_ONE_RESULT;
}

void db_host_refs_free(struct db_host_refs *refs)
{
    free(refs->allowed_users);
    free(refs->allowed_cidrs);
    memset(refs, 0, sizeof *refs);
}

enum db_status db_host_stack_usable(struct db_conn *c, const char *stack_id, const char *project_id)
{
    const char *p[2] = {stack_id, project_id};
    return db_exec_noresult(c, "host_stack_usable", 2, p);
}

enum db_status db_host_budget(struct db_conn *c, const char *project_id, struct db_host_budget *b)
{
    const char *p[1] = {project_id};
    PGresult *r;
    memset(b, 0, sizeof *b);
    enum db_status s = db_exec(c, "host_budget", 1, p, &r);
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "on_exhausted", b->on_exhausted, sizeof b->on_exhausted);
        b->has_budget = db_bool(r, 0, "has_budget");
        b->has_spend = db_bool(r, 0, "has_spend");
        b->current_month = db_bool(r, 0, "current_month");
        b->exhausted = db_bool(r, 0, "exhausted");
        db_copy(r, 0, "budget", b->budget, sizeof b->budget);
        db_copy(r, 0, "spend", b->spend, sizeof b->spend);
    }
    PQclear(r);
    return s;
}

enum db_status db_host_contact(struct db_conn *c, const char *id, const char *sha256,
                               const char *job_id, int attempt, int *pinned)
{
    char at[16];
    snprintf(at, sizeof at, "%d", attempt);
    const char *p[4] = {id, sha256, job_id, at};
    PGresult *r;
    *pinned = 0;
    enum db_status s = db_exec(c, "host_contact", 4, p, &r);
    if (s < 0)
        return s;
    int live = PQntuples(r) == 1 && db_long(r, 0, "live") == 1;
    *pinned = PQntuples(r) == 1 && db_long(r, 0, "pinned") == 1;
    PQclear(r);
    return live ? DB_ONE_RESULT : DB_NO_RESULTS;
}

enum db_status db_host_repin(struct db_conn *c, const char *id, const char *sha256)
{
    const char *p[2] = {id, sha256};
    return db_exec_noresult(c, "host_repin", 2, p);
}

enum db_status db_host_provisioned(struct db_conn *c, const char *id, const char *facts_json,
                                   const char *stack_id)
{
    const char *p[3] = {id, facts_json, stack_id};
    return db_exec_noresult(c, "host_provisioned", 3, p);
}

enum db_status db_host_seen(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "host_seen", 1, p);
}
