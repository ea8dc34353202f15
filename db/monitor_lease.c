/* monitor_lease.c — see monitor_lease.h. */
#include "db/monitor_lease.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/audit.h"
#include "db/db_pg.h"
#include "db/hosts.h"
#include "db/monitor.h"

/* A host is watched in these states, unless its pool turned the monitor off. */
#define WATCHED \
    "h.state IN " DB_MON_WATCHED " AND coalesce((p.spec->'monitor'->>'enabled')::boolean, true)"

// clang-format off
const struct db_stmt db_mon_stmts[] = {
    {"mon_seen",
     "INSERT INTO monitor_workers (owner) VALUES ($1)"
     " ON CONFLICT (owner) DO UPDATE SET seen_at = now()"},
    {"mon_prune_workers",
     "DELETE FROM monitor_workers WHERE seen_at < now() - make_interval(secs => $1::int * 20)"},
    {"mon_ensure",
     "INSERT INTO host_monitor (host_id) SELECT h.id FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " WHERE " WATCHED " ON CONFLICT (host_id) DO NOTHING"},
    {"mon_release_unwatched",
     "UPDATE host_monitor m SET owner = NULL FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " WHERE m.host_id = h.id AND m.owner = $1 AND NOT (" WATCHED ")"},
    {"mon_share",
     "SELECT (SELECT count(*) FROM monitor_workers"
     "         WHERE seen_at > now() - make_interval(secs => $1::int * 3)) AS live,"
     " (SELECT count(*) FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE " WATCHED ") AS watched,"
     " (SELECT count(*) FROM host_monitor WHERE owner = $2) AS mine"},
    {"mon_shed",
     "UPDATE host_monitor SET owner = NULL WHERE host_id IN"
     " (SELECT host_id FROM host_monitor WHERE owner = $1 ORDER BY host_id DESC LIMIT $2::int)"},
    {"mon_renew",
     "UPDATE host_monitor SET lease_until = now() + make_interval(secs => $2::int * 3)"
     " WHERE owner = $1"},
    {"mon_take",
     "UPDATE host_monitor SET owner = $1, lease_until = now() + make_interval(secs => $2::int * 3)"
     " WHERE host_id IN (SELECT m.host_id FROM host_monitor m JOIN hosts h ON h.id = m.host_id"
     "   JOIN pools p ON p.id = h.pool_id"
     "   WHERE " WATCHED " AND (m.lease_until IS NULL OR m.lease_until < now())"
     "   ORDER BY m.lease_until NULLS FIRST, m.host_id LIMIT $3::int FOR UPDATE OF m SKIP LOCKED)"},
    {"mon_mine",
     "SELECT h.id, h.name, host(h.address) AS address, h.port, h.ssh_user, h.credential_id,"
     " h.host_key_sha256, h.state, h.quarantined_at IS NOT NULL AS held, h.pool_id,"
     " (p.spec->>'gpu_count')::int AS gpu_count, g.nvswitch,"
     " coalesce((p.spec->'monitor'->>'interval_seconds')::int, 60) AS interval_s,"
     " coalesce((p.spec->'monitor'->>'unreachable_after')::int, 3) AS unreachable_after,"
     " (p.spec->'monitor'->'xid_policy')::text AS xid_policy,"
     " m.kmsg_cursor, coalesce(m.kmsg_mono, -1) AS kmsg_mono, coalesce(m.missed, 0) AS missed,"
     " CASE WHEN m.last_sample_at IS NULL THEN -1"
     "      ELSE (extract(epoch FROM now() - m.last_sample_at) * 1000)::bigint END AS since_ms"
     " FROM host_monitor m JOIN hosts h ON h.id = m.host_id JOIN pools p ON p.id = h.pool_id"
     " JOIN gpu_models g ON g.key = p.gpu_model"
     " WHERE m.owner = $1 ORDER BY h.id LIMIT $2::int"},
    {"mon_release_all", "UPDATE host_monitor SET owner = NULL WHERE owner = $1"},
    {"mon_fence",
     "SELECT 1 FROM host_monitor WHERE host_id = $1 AND owner = $2 AND lease_until > now()"
     " FOR UPDATE"},
    {"mon_set_missed", "UPDATE host_monitor SET missed = $2::int WHERE host_id = $1"},
    {"mon_host_state",
     "SELECT state, quarantined_at IS NOT NULL AS held FROM hosts WHERE id = $1 FOR UPDATE"},
    {"mon_back_state",
     "SELECT from_state FROM host_state_history WHERE host_id = $1 AND to_state = 'unreachable'"
     " ORDER BY id DESC LIMIT 1"},
    {"mon_store", "SELECT monitor_store($1::uuid, $2::jsonb)::text AS result"},
    {"mon_housekeeping_lock",
     "SELECT pg_try_advisory_xact_lock(hashtext('gpufleet.monitor.housekeeping')) AS locked"},
};
// clang-format on
const size_t db_mon_nstmts = sizeof db_mon_stmts / sizeof db_mon_stmts[0];

#define F(member, col)                            \
    {                                             \
        col, offsetof(struct db_mon_host, member) \
    }
static const struct db_str_field host_strings[] = {
    F(id, "id"),
    F(name, "name"),
    F(address, "address"),
    F(user, "ssh_user"),
    F(credential_id, "credential_id"),
    F(host_key_sha256, "host_key_sha256"),
    F(state, "state"),
    F(pool_id, "pool_id"),
    F(xid_policy, "xid_policy"),
    F(kmsg_cursor, "kmsg_cursor"),
};
#undef F
#define NSTR (sizeof host_strings / sizeof host_strings[0])

void db_mon_host_clear(struct db_mon_host *h)
{
    db_free_fields(host_strings, NSTR, h);
}

void db_mon_hosts_free(struct db_mon_host *h, int n)
{
    for (int i = 0; h != NULL && i < n; i++)
        db_mon_host_clear(&h[i]);
    free(h);
}

static enum db_status read_mine(struct db_conn *c, struct db_mon_claim *cl)
{
    char max[16];
    snprintf(max, sizeof max, "%d", cl->max);
    const char *p[2] = {cl->owner, max};
    PGresult *r;
    enum db_status s = db_exec(c, "mon_mine", 2, p, &r);
    if (s < 0)
        return s;
    int n = PQntuples(r);
    cl->hosts = n > 0 ? calloc((size_t)n, sizeof *cl->hosts) : NULL;
    if (n > 0 && cl->hosts == NULL) {
        PQclear(r);
        return DB_HARD_ERROR;
    }
    for (int i = 0; i < n; i++) {
        struct db_mon_host *h = &cl->hosts[i];
        if (db_dup_fields(r, i, host_strings, NSTR, h) != 0) {
            db_mon_hosts_free(cl->hosts, i);
            cl->hosts = NULL;
            PQclear(r);
            return DB_HARD_ERROR;
        }
        h->port = (int)db_long(r, i, "port");
        h->held = db_bool(r, i, "held");
        h->gpu_count = (int)db_long(r, i, "gpu_count");
        h->nvswitch = db_bool(r, i, "nvswitch");
        h->interval_s = (int)db_long(r, i, "interval_s");
        h->unreachable_after = (int)db_long(r, i, "unreachable_after");
        h->kmsg_mono = db_num(r, i, "kmsg_mono");
        h->missed = (int)db_long(r, i, "missed");
        h->since_sample_ms = db_long(r, i, "since_ms");
        h->enabled = 1;
    }
    cl->nhosts = n;
    PQclear(r);
    return n > 0 ? DB_MANY_RESULTS : DB_NO_RESULTS;
}

enum db_status db_mon_claim(struct db_conn *c, struct db_mon_claim *cl)
{
    char period[16], n[24];
    snprintf(period, sizeof period, "%d", cl->period_s);
    const char *own[1] = {cl->owner};
    const char *per[1] = {period};
    const char *own_per[2] = {cl->owner, period};
    const char *per_own[2] = {period, cl->owner};
    cl->hosts = NULL;
    cl->nhosts = 0;
    enum db_status s;
    if ((s = db_exec_noresult(c, "mon_seen", 1, own)) < 0 ||
        (s = db_exec_noresult(c, "mon_prune_workers", 1, per)) < 0 ||
        (s = db_exec_noresult(c, "mon_ensure", 0, NULL)) < 0 ||
        (s = db_exec_noresult(c, "mon_release_unwatched", 1, own)) < 0)
        return s;
    PGresult *r;
    if ((s = db_exec(c, "mon_share", 2, per_own, &r)) < 0)
        return s;
    long live = db_long(r, 0, "live"), watched = db_long(r, 0, "watched");
    long mine = db_long(r, 0, "mine");
    PQclear(r);
    if (live < 1)
        live = 1;
    long share = (watched + live - 1) / live;
    if (share > cl->max)
        share = cl->max;
    cl->live_workers = (int)live;
    cl->share = (int)share;
    if (mine > share) {
        snprintf(n, sizeof n, "%ld", mine - share);
        const char *p[2] = {cl->owner, n};
        if ((s = db_exec_noresult(c, "mon_shed", 2, p)) < 0)
            return s;
    }
    if ((s = db_exec_noresult(c, "mon_renew", 2, own_per)) < 0)
        return s;
    if (mine < share) {
        snprintf(n, sizeof n, "%ld", share - mine);
        const char *p[3] = {cl->owner, period, n};
        if ((s = db_exec_noresult(c, "mon_take", 3, p)) < 0)
            return s;
    }
    return read_mine(c, cl);
}

enum db_status db_mon_release_all(struct db_conn *c, const char *owner)
{
    const char *p[1] = {owner};
    return db_exec_noresult(c, "mon_release_all", 1, p);
}

/* The lease is still this worker's (row locked until the transaction ends). */
static enum db_status fence(struct db_conn *c, const char *owner, const char *host_id)
{
    const char *p[2] = {host_id, owner};
    return db_exec_noresult(c, "mon_fence", 2, p);
}

static enum db_status host_state(struct db_conn *c, const char *host_id, char state[24], int *held)
{
    const char *p[1] = {host_id};
    PGresult *r;
    enum db_status s = db_exec(c, "mon_host_state", 1, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "state", state, 24);
        *held = db_bool(r, 0, "held");
    }
    PQclear(r);
    return s;
}

static enum db_status apply(struct db_conn *c, const char *owner, const char *host_id,
                            const char *event, const char *hint, const char *reason, char state[24])
{
    struct db_host_event e = {host_id, event, hint, reason, NULL, owner, NULL};
    enum db_host_refusal refused;
    return db_host_event(c, &e, state, &refused);
}

static int in(const char *state, const char *const *list)
{
    for (; *list != NULL; list++)
        if (!strcmp(state, *list))
            return 1;
    return 0;
}

/* The quarantine's audit row: by the worker, for the host's health. */
static enum db_status audit_quarantine(struct db_conn *c, const char *owner, const char *host_id,
                                       const char *reason)
{
    char path[80], request_id[UTIL_UUID_LEN + 1];
    snprintf(path, sizeof path, "/v1/hosts/%s/health", host_id);
    util_uuid4(request_id); /* the sample's own: no request caused it */
    struct db_audit_event ev = {owner,    "system", "host.quarantine", "host", host_id,
                                "WORKER", path,     request_id,        409,    reason};
    return db_audit_insert(c, &ev);
}

/* monitor_store's answer, copied. */
static enum db_status store(struct db_conn *c, const char *const *p, char **result)
{
    PGresult *r;
    enum db_status s = db_exec(c, "mon_store", 2, p, &r);
    if (s < 0)
        return s;
    int oom = 0;
    *result = s == DB_ONE_RESULT ? db_dup(r, 0, "result", &oom) : NULL;
    PQclear(r);
    return oom ? DB_HARD_ERROR : s;
}

static const char *const serving[] = {"ready", "draining", "drained", NULL};

enum db_status db_mon_missed(struct db_conn *c, const char *owner, const char *host_id, int missed,
                             int unreachable_after, const char *reason, char state[24])
{
    char n[16];
    snprintf(n, sizeof n, "%d", missed);
    const char *p[2] = {host_id, n};
    int held = 0;
    enum db_status s;
    state[0] = '\0';
    if ((s = fence(c, owner, host_id)) <= 0 ||
        (s = db_exec_noresult(c, "mon_set_missed", 2, p)) < 0 ||
        (s = host_state(c, host_id, state, &held)) <= 0)
        return s;
    if (missed >= unreachable_after && in(state, serving))
        return apply(c, owner, host_id, "monitor_unreachable", NULL, reason, state);
    return DB_ONE_RESULT;
}

enum db_status db_mon_sampled(struct db_conn *c, const char *owner, const char *host_id,
                              const char *doc, const char *isolate_reason, char state[24],
                              char **result)
{
    const char *p[2] = {host_id, doc};
    int held = 0;
    enum db_status s;
    *result = NULL;
    state[0] = '\0';
    if ((s = fence(c, owner, host_id)) <= 0 || (s = store(c, p, result)) < 0 ||
        (s = host_state(c, host_id, state, &held)) <= 0)
        return s;
    if (!strcmp(state, "unreachable")) {
        char back[24] = "";
        PGresult *r;
        const char *q[1] = {host_id};
        if ((s = db_exec(c, "mon_back_state", 1, q, &r)) < 0)
            return s;
        if (s == DB_ONE_RESULT)
            db_copy(r, 0, "from_state", back, sizeof back);
        PQclear(r);
        if (!in(back, serving))
            snprintf(back, sizeof back, "drained"); /* it must be gated before it serves */
        if ((s = apply(c, owner, host_id, "monitor_reachable", back,
                       "the monitor reaches the host again", state)) < 0)
            return s;
    }
    if (isolate_reason != NULL && (in(state, serving) || !strcmp(state, "unreachable"))) {
        if ((s = apply(c, owner, host_id, "monitor_isolated", NULL, isolate_reason, state)) < 0)
            return s;
        if ((s = audit_quarantine(c, owner, host_id, isolate_reason)) < 0)
            return s;
    }
    return DB_ONE_RESULT;
}

enum db_status db_mon_key_mismatch(struct db_conn *c, const char *owner, const char *host_id,
                                   const char *reason, char state[24])
{
    int held = 0;
    enum db_status s;
    state[0] = '\0';
    if ((s = fence(c, owner, host_id)) <= 0 || (s = host_state(c, host_id, state, &held)) <= 0)
        return s;
    if (!(in(state, serving) || !strcmp(state, "unreachable")))
        return DB_ONE_RESULT; /* quarantined already, or no longer watched */
    if ((s = apply(c, owner, host_id, "key_mismatch", NULL, reason, state)) < 0)
        return s;
    return audit_quarantine(c, owner, host_id, reason);
}

enum db_status db_mon_housekeeping(struct db_conn *c, const long keep_s[3], int *ran)
{
    PGresult *r;
    *ran = 0;
    enum db_status s = db_exec(c, "mon_housekeeping_lock", 0, NULL, &r);
    if (s < 0)
        return s;
    int locked = db_bool(r, 0, "locked");
    PQclear(r);
    if (!locked)
        return DB_NO_RESULTS;
    char *res = NULL;
    s = db_monitor_rollup(c, NULL, &res);
    free(res);
    res = NULL;
    if (s >= 0)
        s = db_monitor_prune(c, keep_s[0], keep_s[1], keep_s[2], 10000, &res);
    free(res);
    *ran = s >= 0;
    return s;
}
