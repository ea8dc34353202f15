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
    " 'pool_id', " h ".pool_id, 'host_key_sha256', " h ".host_key_sha256," " 'labels', " h       \
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
     " host_key_sha256, labels, created_by) VALUES ($1, $2::inet, $3::int, $4, $5::uuid,"
     " $6::uuid, $7, $8::jsonb, $9) RETURNING *),"
     " hist AS (INSERT INTO host_state_history (host_id, from_state, to_state, reason, actor)"
     "  SELECT id, NULL, 'registered', 'registered', $9 FROM ins)"
     " SELECT ins.id::text FROM ins"},
    {"host_get", "SELECT " HOST_DOC("h") " AS doc FROM hosts h WHERE h.id = $1::uuid"},
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
              " ORDER BY h.seq LIMIT $7::int"},
    {"host_patch",
     "UPDATE hosts h SET labels = coalesce($2::jsonb, labels), pool_id = coalesce($3::uuid,"
     " pool_id), updated_at = now() WHERE id = $1::uuid RETURNING " HOST_DOC("h") " AS doc"},
    /* The hour and quarter rollups have no foreign key (migrations/0010): their rows go
     * with the host, found by the buckets of its reports (index led by host_id). */
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
    /* Release from quarantine: the new pin (NULL: record the key on next contact). */
    {"host_repin", "UPDATE hosts SET host_key_sha256 = $2, updated_at = now() WHERE id = $1::uuid"},
};
const size_t db_host_nstmts = sizeof db_host_stmts / sizeof db_host_stmts[0];

enum db_status db_host_insert(struct db_conn *c, const struct db_host_new *h, char **doc,
                              char id[37])
{
    const char *p[9] = {
        h->name,    h->address,         h->port,        h->user,      h->credential_id,
        h->pool_id, h->host_key_sha256, h->labels_json, h->created_by};
    PGresult *r;
    *doc = NULL;
    id[0] = '\0';
    enum db_status s = db_exec(c, "host_insert", 9, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "id", id, 37);
    PQclear(r);
    /* Read it back in a second statement: a data-modifying CTE's writes are not visible
     * to the other parts of the same statement (the history row would be missing). */
    return s == DB_ONE_RESULT ? db_host_get(c, id, doc) : s;
}

enum db_status db_host_get(struct db_conn *c, const char *id, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "host_get", 1, p, doc);
}

enum db_status db_host_list(struct db_conn *c, const struct db_host_filter *f, struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->state, f->pool_id,   f->label_json, f->gpu_model,
                        f->stale, f->after_seq, limit};
    return db_exec_page(c, "host_list", 7, p, page);
}

enum db_status db_host_patch(struct db_conn *c, const char *id, const char *labels_json,
                             const char *pool_id, char **doc)
{
    const char *p[3] = {id, labels_json, pool_id};
    return db_exec_doc(c, "host_patch", 3, p, doc);
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
