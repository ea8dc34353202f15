/* monitor_lease.c — see monitor_lease.h. */
#include "db/monitor_lease.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "db/db_pg.h"
#include "db/monitor.h"

// clang-format off
const struct db_stmt db_mon_stmts[] = {
    /* a worker's lease: renewed once a claim period, it covers every host the worker owns */
    {"mon_seen",
     "WITH gone AS (DELETE FROM monitor_workers"
     "              WHERE seen_at < now() - make_interval(secs => $2::int * 20))"
     " INSERT INTO monitor_workers (owner, lease_until)"
     " VALUES ($1, now() + make_interval(secs => $2::int * 3))"
     " ON CONFLICT (owner) DO UPDATE SET seen_at = now(), lease_until = EXCLUDED.lease_until"},
    {"mon_ensure",
     "INSERT INTO host_monitor (host_id) SELECT h.id FROM hosts h JOIN pools p ON p.id = h.pool_id"
     " WHERE" DB_MON_WATCHED_WHERE " AND NOT EXISTS (SELECT 1 FROM host_monitor m WHERE m.host_id = h.id)"
     " ON CONFLICT (host_id) DO NOTHING"},
    /* one pass over the watched hosts: the share, and whether ensure or expire have work */
    {"mon_share",
     "WITH" DB_MON_POOLS
     " SELECT (SELECT count(*) FROM monitor_workers WHERE lease_until > now()) AS live,"
     " count(*) AS watched, count(*) FILTER (WHERE m.owner = $1) AS mine,"
     " count(*) FILTER (WHERE m.host_id IS NULL) AS unrowed,"
     " count(*) FILTER (WHERE m.owner IS NOT NULL AND w.owner IS NULL) AS lapsed"
     " FROM hosts h JOIN mp ON mp.id = h.pool_id LEFT JOIN host_monitor m ON m.host_id = h.id"
     " LEFT JOIN monitor_workers w ON w.owner = m.owner AND w.lease_until > now()"
     " WHERE" DB_MON_WATCHED_MP},
    /* given up: no one takes them before this worker's lease would have lapsed */
    {"mon_shed",
     "UPDATE host_monitor SET owner = NULL, seen_config = NULL,"
     " lease_until = (SELECT lease_until FROM monitor_workers WHERE owner = $1)"
     " WHERE host_id IN (SELECT host_id FROM host_monitor WHERE owner = $1"
     "                   ORDER BY host_id DESC LIMIT $2::int) RETURNING host_id::text AS id"},
    /* the hosts of workers whose lease lapsed are free at once */
    {"mon_expire",
     "UPDATE host_monitor m SET owner = NULL, seen_config = NULL, lease_until = NULL"
     " WHERE m.owner IS NOT NULL AND m.owner <> $1 AND NOT EXISTS (SELECT 1 FROM monitor_workers w"
     "   WHERE w.owner = m.owner AND w.lease_until > now())"},
    {"mon_take",
     "UPDATE host_monitor SET owner = $1, seen_config = NULL, lease_until = NULL"
     " WHERE host_id IN (SELECT m.host_id FROM host_monitor m JOIN hosts h ON h.id = m.host_id"
     "   JOIN pools p ON p.id = h.pool_id"
     "   WHERE" DB_MON_WATCHED_WHERE " AND m.owner IS NULL AND (m.lease_until IS NULL OR m.lease_until < now())"
     "   ORDER BY m.lease_until NULLS FIRST, m.host_id LIMIT $2::int FOR UPDATE OF m SKIP LOCKED)"
     " RETURNING host_id"},
    /* The hosts of this worker whose configuration changed since it last read them (all
     * with $2), recorded as read; and those no longer watched, given up (watched false).
     * x is computed once (MATERIALIZED), and the update can find its rows by primary key
     * only: its owner guard (x.owner is $1) is written IS NOT DISTINCT FROM, which no
     * index serves. With statistics that call the worker's owner rare (a new worker, the
     * statistics taken before it claimed), the planner otherwise re-ran x inside an
     * owner-index scan (1,000 x 1,000 fingerprints, 2.6 s at 1,000 hosts) or looked every
     * row up by owner (0.45 s); either way a claim became quadratic in the hosts held. */
    {"mon_mine",
     "WITH" DB_MON_POOLS ","
     " x AS MATERIALIZED (SELECT m.host_id, m.owner," DB_MON_WATCHED_MP " AS watched,"
     "   md5(ROW(h.name, h.address, h.port, h.ssh_user, h.credential_id, h.host_key_sha256,"
     "           h.state, h.quarantined_at IS NOT NULL, h.pool_id, mp.gpu_model, mp.gpu_count,"
     "           mp.monitor, mp.nvswitch)::text) AS fp"
     "   FROM host_monitor m JOIN hosts h ON h.id = m.host_id JOIN mp ON mp.id = h.pool_id"
     "   WHERE m.owner = $1),"
     " u AS (UPDATE host_monitor m SET owner = CASE WHEN x.watched THEN m.owner END,"
     "   seen_config = CASE WHEN x.watched THEN x.fp END,"
     "   lease_until = CASE WHEN x.watched THEN m.lease_until"
     "     ELSE (SELECT lease_until FROM monitor_workers WHERE owner = $1) END"
     "   FROM x WHERE m.host_id = x.host_id AND m.owner IS NOT DISTINCT FROM x.owner"
     "     AND (NOT x.watched OR $2::boolean OR m.seen_config IS DISTINCT FROM x.fp)"
     "   RETURNING m.host_id, x.watched, m.kmsg_cursor, m.kmsg_mono, m.missed, m.last_sample_at)"
     " SELECT h.id, u.watched, h.name, host(h.address) AS address, h.port, h.ssh_user,"
     " h.credential_id, h.host_key_sha256, h.state, h.quarantined_at IS NOT NULL AS held, h.pool_id,"
     " (p.spec->>'gpu_count')::int AS gpu_count, g.nvswitch,"
     " coalesce((p.spec->'monitor'->>'interval_seconds')::int, 60) AS interval_s,"
     " coalesce((p.spec->'monitor'->>'unreachable_after')::int, 3) AS unreachable_after,"
     " (p.spec->'monitor'->'xid_policy')::text AS xid_policy,"
     " u.kmsg_cursor, coalesce(u.kmsg_mono, -1) AS kmsg_mono, coalesce(u.missed, 0) AS missed,"
     /* the ECC baseline of the host's current GPUs, bounded as its samples are (the
      * pool's gpu_count + 2, migrations/0027) */
     " (SELECT json_object_agg(e.uuid, e.ecc_uncorrected_volatile)::text FROM (SELECT"
     "   e.uuid, e.ecc_uncorrected_volatile FROM gpus e"
     "   WHERE e.host_id = h.id AND e.missing_since IS NULL"
     "     AND e.ecc_uncorrected_volatile IS NOT NULL ORDER BY e.last_seen DESC, e.uuid"
     "   LIMIT least(64, coalesce((p.spec->>'gpu_count')::int, 62) + 2)) e) AS ecc_baseline,"
     " CASE WHEN u.last_sample_at IS NULL THEN -1"
     "      ELSE (extract(epoch FROM now() - u.last_sample_at) * 1000)::bigint END AS since_ms"
     " FROM u JOIN hosts h ON h.id = u.host_id JOIN pools p ON p.id = h.pool_id"
     " JOIN gpu_models g ON g.key = p.gpu_model ORDER BY h.id"},
    /* a worker that stops: its hosts wait until its lease would have lapsed */
    {"mon_release_all",
     "UPDATE host_monitor m SET owner = NULL, seen_config = NULL, lease_until = w.lease_until"
     " FROM monitor_workers w WHERE w.owner = $1 AND m.owner = $1"},
    {"mon_fence",
     "SELECT 1 FROM host_monitor m JOIN monitor_workers w ON w.owner = m.owner"
     " WHERE m.host_id = $1 AND m.owner = $2 AND w.lease_until > now() FOR UPDATE OF m"},
    {"mon_set_missed",
     "UPDATE host_monitor SET missed = $2::int, miss_reason = left($3, 256) WHERE host_id = $1"},
    {"mon_host_state",
     "SELECT state, quarantined_at IS NOT NULL AS held FROM hosts WHERE id = $1 FOR UPDATE"},
    {"mon_back_state",
     "SELECT from_state FROM host_state_history WHERE host_id = $1 AND to_state = 'unreachable'"
     " ORDER BY id DESC LIMIT 1"},
    {"mon_store", "SELECT monitor_store($1::uuid, $2::jsonb)::text AS result"},
    /* a group of samples, each fenced by its own lease (migrations/0037) */
    {"mon_store_fenced",
     "SELECT o_i, o_fenced, o_result, o_state, o_held, o_back"
     " FROM monitor_store_fenced($1, $2::uuid[], $3::jsonb)"},
    {"mon_gpus_prune", "SELECT gpus_prune(make_interval(secs => $1::float8), 10000)"},
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
    F(ecc_baseline, "ecc_baseline"),
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

void db_mon_claim_clear(struct db_mon_claim *cl)
{
    db_mon_hosts_free(cl->hosts, cl->nhosts);
    for (int i = 0; cl->dropped != NULL && i < cl->ndropped; i++)
        free(cl->dropped[i]);
    free(cl->dropped);
    cl->hosts = NULL;
    cl->nhosts = 0;
    cl->dropped = NULL;
    cl->ndropped = 0;
}

/* Appends the ids in column "id" of r to cl->dropped. */
static int add_dropped(struct db_mon_claim *cl, const PGresult *r, int row)
{
    char **d = realloc(cl->dropped, (size_t)(cl->ndropped + 2) * sizeof *d);
    if (d == NULL)
        return -1;
    cl->dropped = d;
    int oom = 0;
    d[cl->ndropped] = db_dup(r, row, "id", &oom);
    if (d[cl->ndropped] == NULL)
        return -1;
    d[++cl->ndropped] = NULL;
    return 0;
}

static enum db_status read_mine(struct db_conn *c, struct db_mon_claim *cl)
{
    const char *p[2] = {cl->owner, cl->full ? "true" : "false"};
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
        if (!db_bool(r, i, "watched")) { /* given up by this claim */
            if (add_dropped(cl, r, i) != 0)
                goto oom;
            continue;
        }
        struct db_mon_host *h = &cl->hosts[cl->nhosts];
        if (db_dup_fields(r, i, host_strings, NSTR, h) != 0)
            goto oom;
        cl->nhosts++;
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
    PQclear(r);
    return cl->nhosts > 0 ? DB_MANY_RESULTS : DB_NO_RESULTS;
oom:
    PQclear(r);
    db_mon_claim_clear(cl);
    return DB_HARD_ERROR;
}

enum db_status db_mon_claim(struct db_conn *c, struct db_mon_claim *cl)
{
    char period[16], n[24];
    snprintf(period, sizeof period, "%d", cl->period_s);
    const char *own[1] = {cl->owner};
    const char *own_per[2] = {cl->owner, period};
    cl->hosts = NULL;
    cl->nhosts = 0;
    cl->dropped = NULL;
    cl->ndropped = 0;
    enum db_status s;
    PGresult *r;
    if ((s = db_exec_noresult(c, "mon_seen", 2, own_per)) < 0 ||
        (s = db_exec(c, "mon_share", 1, own, &r)) < 0)
        return s;
    long live = db_long(r, 0, "live"), watched = db_long(r, 0, "watched");
    long mine = db_long(r, 0, "mine"), unrowed = db_long(r, 0, "unrowed");
    long lapsed = db_long(r, 0, "lapsed");
    PQclear(r);
    if (live < 1)
        live = 1;
    long share = (watched + live - 1) / live;
    if (share > cl->max)
        share = cl->max;
    cl->live_workers = (int)live;
    cl->share = (int)share;
    if (unrowed > 0 && (s = db_exec_noresult(c, "mon_ensure", 0, NULL)) < 0)
        return s;
    if (mine > share) {
        snprintf(n, sizeof n, "%ld", mine - share);
        const char *p[2] = {cl->owner, n};
        if ((s = db_exec(c, "mon_shed", 2, p, &r)) < 0)
            return s;
        for (int i = 0; i < PQntuples(r); i++)
            if (add_dropped(cl, r, i) != 0) {
                PQclear(r);
                db_mon_claim_clear(cl);
                return DB_HARD_ERROR;
            }
        mine -= PQntuples(r);
        PQclear(r);
    }
    if (mine < share) {
        if (lapsed > 0 && (s = db_exec_noresult(c, "mon_expire", 1, own)) < 0)
            goto fail;
        snprintf(n, sizeof n, "%ld", share - mine);
        const char *p[2] = {cl->owner, n};
        if ((s = db_exec(c, "mon_take", 2, p, &r)) < 0)
            goto fail;
        mine += PQntuples(r);
        PQclear(r);
    }
    cl->owned = (int)mine;
    if ((s = read_mine(c, cl)) < 0)
        goto fail;
    return s;
fail:
    db_mon_claim_clear(cl);
    return s;
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

/* The host's state, its hold, and when unreachable the state it had before. */
static enum db_status host_state(struct db_conn *c, const char *host_id, struct db_mon_state *st)
{
    const char *p[1] = {host_id};
    PGresult *r;
    enum db_status s = db_exec(c, "mon_host_state", 1, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        db_copy(r, 0, "state", st->state, sizeof st->state);
        st->held = db_bool(r, 0, "held");
    }
    PQclear(r);
    if (s != DB_ONE_RESULT || strcmp(st->state, "unreachable") != 0)
        return s;
    if ((s = db_exec(c, "mon_back_state", 1, p, &r)) < 0)
        return s;
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "from_state", st->back, sizeof st->back);
    PQclear(r);
    return DB_ONE_RESULT;
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

enum db_status db_mon_store_missed(struct db_conn *c, const char *owner, const char *host_id,
                                   int missed, const char *reason, struct db_mon_state *st)
{
    char n[16];
    snprintf(n, sizeof n, "%d", missed);
    const char *p[3] = {host_id, n, reason}; /* the reason: host.health's (migration 0017) */
    enum db_status s;
    memset(st, 0, sizeof *st);
    if ((s = fence(c, owner, host_id)) <= 0 ||
        (s = db_exec_noresult(c, "mon_set_missed", 3, p)) < 0)
        return s;
    return host_state(c, host_id, st);
}

enum db_status db_mon_store_sample(struct db_conn *c, const char *owner, const char *host_id,
                                   const char *doc, char **result, struct db_mon_state *st)
{
    const char *p[2] = {host_id, doc};
    enum db_status s;
    *result = NULL;
    memset(st, 0, sizeof *st);
    if ((s = fence(c, owner, host_id)) <= 0 || (s = store(c, p, result)) < 0)
        return s;
    return host_state(c, host_id, st);
}

enum db_status db_mon_fenced_state(struct db_conn *c, const char *owner, const char *host_id,
                                   struct db_mon_state *st)
{
    enum db_status s;
    memset(st, 0, sizeof *st);
    if ((s = fence(c, owner, host_id)) <= 0)
        return s;
    return host_state(c, host_id, st);
}

enum db_status db_mon_housekeeping(struct db_conn *c, const long keep_s[4], int *ran)
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
    if (s >= 0) { /* GPU rows not seen for keep_s[3] (migrations/0027) */
        char keep[24];
        snprintf(keep, sizeof keep, "%ld", keep_s[3]);
        const char *p[1] = {keep};
        s = db_exec_noresult(c, "mon_gpus_prune", 1, p);
    }
    *ran = s >= 0;
    return s;
}

void db_mon_stored_clear(struct db_mon_stored *out, int n)
{
    for (int i = 0; out != NULL && i < n; i++) {
        free(out[i].result);
        out[i].result = NULL;
    }
}

/* The rows of monitor_store_fenced into out (by o_i). */
static int read_stored(const PGresult *r, int n, struct db_mon_stored *out)
{
    int rows = PQntuples(r);
    if (rows != n)
        return -1;
    for (int row = 0; row < rows; row++) {
        long i = db_long(r, row, "o_i");
        if (i < 1 || i > n || out[i - 1].seen)
            return -1;
        struct db_mon_stored *o = &out[i - 1];
        o->seen = 1;
        o->stored = !db_bool(r, row, "o_fenced");
        if (!o->stored)
            continue;
        int oom = 0;
        o->result = db_dup(r, row, "o_result", &oom);
        if (oom)
            return -1;
        db_copy(r, row, "o_state", o->st.state, sizeof o->st.state);
        db_copy(r, row, "o_back", o->st.back, sizeof o->st.back);
        o->st.held = db_bool(r, row, "o_held");
    }
    return 0;
}

enum db_status db_mon_store_group(struct db_conn *c, const char *owner, int n,
                                  const char *const *host_ids, const char *const *docs,
                                  struct db_mon_stored *out)
{
    memset(out, 0, (size_t)n * sizeof *out);
    struct sbuf ids, arr;
    sbuf_init(&ids, (size_t)n * 38 + 2);
    sbuf_init(&arr, 4096);
    sbuf_adds(&ids, "{");
    sbuf_adds(&arr, "[");
    for (int i = 0; i < n; i++) {
        /* the ids are the claim's (uuids read from the database); the documents are
         * JSON texts the monitor rendered (json_dumps): an array of them is JSON too */
        sbuf_printf(&ids, "%s%s", i ? "," : "", host_ids[i]);
        sbuf_adds(&arr, i ? "," : "");
        sbuf_adds(&arr, docs[i]);
    }
    sbuf_adds(&ids, "}");
    sbuf_adds(&arr, "]");
    char *id_lit = sbuf_take(&ids, NULL), *doc_arr = sbuf_take(&arr, NULL);
    enum db_status s = DB_HARD_ERROR;
    if (id_lit != NULL && doc_arr != NULL) {
        const char *p[3] = {owner, id_lit, doc_arr};
        PGresult *r;
        s = db_exec(c, "mon_store_fenced", 3, p, &r);
        if (s >= 0) {
            if (read_stored(r, n, out) != 0) {
                db_mon_stored_clear(out, n);
                s = DB_HARD_ERROR;
            }
            PQclear(r);
        }
    }
    free(id_lit);
    free(doc_arr);
    return s;
}
