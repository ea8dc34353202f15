/* webhooks.c — see webhooks.h. bytea values travel as hex text ("\x…"). */
#include "db/webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "db/db_pg.h"
#include "db/events.h"
#include "db/sealed.h"

// clang-format off
/* The Webhook document (never the secret). */
#define WEBHOOK_DOC                                                                    \
    "json_build_object('id', w.id, 'project', json_build_object('id', w.project_id,"    \
    " 'name', (SELECT name FROM projects WHERE id = w.project_id)),"                    \
    " 'url', w.url, 'event_types', to_json(w.event_types),"                              \
    " 'description', w.description, 'format', w.format, 'enabled', w.enabled,"          \
    " 'disabled_reason', w.disabled_reason, 'disabled_at', " DB_TS("w.disabled_at") "," \
    " 'last_event_id', w.last_event_id, 'created_by', w.created_by,"                    \
    " 'created_at', " DB_TS("w.created_at") ", 'updated_at', " DB_TS("w.updated_at")     \
    ")::text"
/* The WebhookDelivery document. */
#define DELIVERY_DOC                                                                         \
    "json_build_object('event_id', d.event_id, 'event_type', d.event_type,"                  \
    " 'generation', d.generation, 'status', d.status, 'attempts', d.attempts,"               \
    " 'response_code', d.response_code, 'latency_ms', d.latency_ms,"                         \
    " 'first_attempt_at', " DB_TS("d.first_attempt_at") ","                                  \
    " 'last_attempt_at', " DB_TS("d.last_attempt_at") ","                                    \
    " 'next_attempt_at', " DB_TS("d.next_attempt_at") ","                                    \
    " 'delivered_at', " DB_TS("d.delivered_at") ", 'last_error', d.last_error)::text"
/* An enabled webhook's events of its types and its project in (last_event_id, horizon $H]. */
#define HAS_EVENTS(w, H)                                                                     \
    "EXISTS (SELECT 1 FROM events e WHERE e.id > " w ".last_event_id AND e.id <= " H         \
    " AND e.type = ANY (" w ".event_types) AND e.project_id = " w ".project_id)"
/* The webhooks of the scope $N (a uuid[] literal, NULL: every project). */
#define SCOPED(N) "($" N "::uuid[] IS NULL OR w.project_id = ANY ($" N "::uuid[]))"
// clang-format on

const struct db_stmt db_webhook_stmts[] = {
    {"webhook_insert",
     "INSERT INTO webhooks AS w (id, url, event_types, description, format, secret_kid,"
     " secret_nonce, secret_ciphertext, last_event_id, created_by, project_id)"
     " VALUES ($1::uuid, $2, $3::text[], $4, $5, $6, $7::bytea, $8::bytea,"
     " (SELECT coalesce(max(id), 0) FROM events), $9, $10::uuid)"
     " RETURNING " WEBHOOK_DOC " AS doc"},
    {"webhook_get", "SELECT " WEBHOOK_DOC " AS doc FROM webhooks w WHERE w.id = $1::uuid"
                    " AND " SCOPED("2")},
    {"webhook_delete", "DELETE FROM webhooks w WHERE w.id = $1::uuid AND " SCOPED(
                           "2") " RETURNING w.project_id::text AS project_id"},
    {"webhook_project", "SELECT project_id::text AS project_id FROM webhooks WHERE id = $1::uuid"},
    {"webhook_list", "SELECT " WEBHOOK_DOC " AS doc, w.seq::text AS key FROM webhooks w"
                     " WHERE w.seq > coalesce($1::bigint, 0) AND " SCOPED(
                         "3") " AND ($4::uuid IS NULL OR w.project_id = $4::uuid)"
                              " ORDER BY w.seq LIMIT $2::int"},
    {"webhook_replay",
     "UPDATE webhooks w SET last_event_id = $2::bigint - 1, generation = w.generation + 1,"
     " enabled = true, disabled_at = NULL, disabled_reason = NULL, next_attempt_at = now(),"
     " updated_at = now() WHERE w.id = $1::uuid AND " SCOPED("3") " RETURNING " WEBHOOK_DOC
                                                                  " AS doc"},
    {"webhook_exists", "SELECT 1 FROM webhooks w WHERE w.id = $1::uuid AND " SCOPED("2")},
    {"webhook_deliveries",
     "SELECT " DELIVERY_DOC " AS doc, d.seq::text AS key FROM webhook_deliveries d"
     " WHERE d.webhook_id = $1::uuid AND ($2::text IS NULL OR d.status = $2::text)"
     "   AND d.seq < coalesce($3::bigint, 9223372036854775807)"
     " ORDER BY d.seq DESC LIMIT $4::int"},
    /* SKIP LOCKED: a webhook another dispatcher is claiming right now is left to it. */
    {"webhook_claim",
     "WITH c AS (SELECT w.id, w.generation FROM webhooks w"
     "  WHERE w.enabled AND w.next_attempt_at <= now()"
     "   AND (w.lease_until IS NULL OR w.lease_until < now() OR w.lease_owner = $1::uuid)"
     "   AND NOT (w.id = ANY (coalesce($5::uuid[], '{}'::uuid[])))"
     "   AND " HAS_EVENTS(
         "w",
         "$2::bigint") " ORDER BY w.next_attempt_at, w.seq LIMIT $4::int"
                       "  FOR UPDATE OF w SKIP LOCKED),"
                       " r AS (SELECT c.id, x.event_id, x.attempts, x.first_attempt_at FROM c"
                       "  JOIN LATERAL (SELECT d.event_id, d.attempts, d.first_attempt_at"
                       "   FROM webhook_deliveries d WHERE d.webhook_id = c.id AND d.generation = "
                       "c.generation"
                       "    AND d.status = 'retrying' ORDER BY d.seq DESC LIMIT 1) x ON true)"
                       " UPDATE webhooks w SET lease_owner = $1::uuid,"
                       "  lease_until = now() + make_interval(secs => $3::float8)"
                       " FROM c LEFT JOIN r ON r.id = c.id WHERE w.id = c.id"
                       " RETURNING w.id::text AS id, w.url, w.format, w.event_types::text AS "
                       "event_types, '{' || w.project_id::text || '}' AS projects,"
                       "  w.last_event_id::text AS last_event_id, w.generation::text AS generation,"
                       "  w.secret_kid AS kid, encode(w.secret_nonce, 'hex') AS nonce,"
                       "  encode(w.secret_ciphertext, 'hex') AS ciphertext,"
                       "  coalesce(r.event_id, 0)::text AS retry_event_id, coalesce(r.attempts, 0) "
                       "AS attempts,"
                       "  coalesce((extract(epoch FROM r.first_attempt_at) * 1000000)::bigint, "
                       "0)::text"
                       "   AS first_attempt_us"},
    {"webhook_renew", "UPDATE webhooks SET lease_until = now() + make_interval(secs => $3::float8)"
                      " WHERE lease_owner = $1::uuid AND id = ANY ($2::uuid[])"},
    {"webhook_release", "UPDATE webhooks SET lease_owner = NULL, lease_until = NULL"
                        " WHERE lease_owner = $1::uuid AND ($2::uuid IS NULL OR id = $2::uuid)"},
    /* One attempt: the webhook (fenced by lease and generation), its delivery row and, when
     * it is given up, the webhook.disabled event, all in one statement. */
    {"webhook_record",
     "WITH w AS (UPDATE webhooks SET"
     "  last_event_id = CASE WHEN $6::text = 'delivered' THEN $4::bigint ELSE last_event_id END,"
     "  next_attempt_at = CASE WHEN $6::text = 'retrying'"
     "   THEN now() + make_interval(secs => $12::float8) ELSE now() END,"
     "  lease_owner = CASE WHEN $6::text = 'delivered' OR $15::bool THEN lease_owner END,"
     "  lease_until = CASE WHEN $6::text = 'delivered' OR $15::bool"
     "   THEN now() + make_interval(secs => $13::float8) END,"
     "  enabled = $6::text <> 'failed',"
     "  disabled_at = CASE WHEN $6::text = 'failed' THEN now() END,"
     "  disabled_reason = CASE WHEN $6::text = 'failed' THEN $14::text END,"
     "  updated_at = CASE WHEN $6::text = 'failed' THEN now() ELSE updated_at END"
     "  WHERE id = $1::uuid AND lease_owner = $2::uuid AND generation = $3::bigint AND enabled"
     "  RETURNING id, project_id),"
     " d AS (INSERT INTO webhook_deliveries AS d (webhook_id, generation, event_id, event_type,"
     "   status, attempts, first_attempt_at, last_attempt_at, next_attempt_at, delivered_at,"
     "   response_code, latency_ms, last_error)"
     "  SELECT w.id, $3::bigint, $4::bigint, $5::text, $6::text, $7::int,"
     "   to_timestamp($8::float8), now(), CASE WHEN $6::text = 'retrying'"
     "   THEN now() + make_interval(secs => $12::float8) END,"
     "   CASE WHEN $6::text = 'delivered' THEN now() END, $9::int, $10::int, $11::text FROM w"
     "  ON CONFLICT (webhook_id, generation, event_id) DO UPDATE SET status = excluded.status,"
     "   attempts = excluded.attempts, last_attempt_at = excluded.last_attempt_at,"
     "   next_attempt_at = excluded.next_attempt_at, delivered_at = excluded.delivered_at,"
     "   response_code = excluded.response_code, latency_ms = excluded.latency_ms,"
     "   last_error = excluded.last_error"
     "  RETURNING d.webhook_id),"
     /* the event (seen by viewers and other webhooks) carries the error class only, never
      * the receiver's answer; disabled_reason (admins) keeps the detail */
     " e AS (INSERT INTO events (type, project_id, data) SELECT 'webhook.disabled', w.project_id,"
     "  jsonb_build_object('webhook_id', w.id, 'reason', $16::text, 'error_class', $17::text,"
     "   'event_id', $4::bigint, 'attempts', $7::int) FROM w WHERE $6::text = 'failed'"
     "  RETURNING id)"
     " SELECT (SELECT count(*) FROM d)::int AS recorded, (SELECT count(*) FROM e)::int AS emitted"},
    /* Many delivered attempts at once: each webhook's cursor moves to its highest event. */
    {"webhook_delivered",
     "WITH b AS (SELECT * FROM unnest($3::uuid[], $4::bigint[], $5::bigint[], $6::text[],"
     "  $7::int[], $8::float8[], $9::int[], $10::int[])"
     "  AS b(id, gen, ev, type, attempts, first_at, code, latency)),"
     " w AS (UPDATE webhooks w SET last_event_id = m.ev, next_attempt_at = now(),"
     "  lease_until = now() + make_interval(secs => $2::float8)"
     "  FROM (SELECT id, gen, max(ev) AS ev FROM b GROUP BY id, gen) m"
     "  WHERE w.id = m.id AND w.generation = m.gen AND w.lease_owner = $1::uuid AND w.enabled"
     "  RETURNING w.id, w.generation),"
     " d AS (INSERT INTO webhook_deliveries AS d (webhook_id, generation, event_id, event_type,"
     "   status, attempts, first_attempt_at, last_attempt_at, delivered_at, response_code,"
     "   latency_ms)"
     "  SELECT b.id, b.gen, b.ev, b.type, 'delivered', b.attempts, to_timestamp(b.first_at),"
     "   now(), now(), b.code, b.latency FROM b JOIN w ON w.id = b.id AND w.generation = b.gen"
     "  ON CONFLICT (webhook_id, generation, event_id) DO UPDATE SET status = 'delivered',"
     "   attempts = excluded.attempts, last_attempt_at = excluded.last_attempt_at,"
     "   next_attempt_at = NULL, delivered_at = excluded.delivered_at,"
     "   response_code = excluded.response_code, latency_ms = excluded.latency_ms,"
     "   last_error = NULL"
     "  RETURNING 1)"
     " SELECT w.id::text AS id, (SELECT count(*) FROM d) AS recorded FROM w"},
    {"webhook_disable",
     "WITH w AS (UPDATE webhooks SET enabled = false, disabled_at = now(),"
     "  disabled_reason = $4::text, lease_owner = NULL, lease_until = NULL, updated_at = now()"
     "  WHERE id = $1::uuid AND lease_owner = $2::uuid AND generation = $3::bigint AND enabled"
     "  RETURNING id, project_id)"
     " INSERT INTO events (type, project_id, data) SELECT 'webhook.disabled', w.project_id,"
     "  jsonb_build_object('webhook_id', w.id, 'reason', 'its secret cannot be opened',"
     "   'error_class', 'secret', 'event_id', NULL, 'attempts', 0) FROM w"},
    {"webhook_event_ids",
     "SELECT e.id::text AS id, e.type FROM events e WHERE e.id > $1::bigint ORDER BY e.id"
     " LIMIT $2::int"},
    /* Webhooks with nothing to send up to the horizon start their next scans there. */
    {"webhook_advance_idle",
     "UPDATE webhooks w SET last_event_id = $1::bigint WHERE w.id IN (SELECT x.id"
     " FROM webhooks x WHERE x.enabled AND x.last_event_id < $1::bigint"
     "  AND (x.lease_until IS NULL OR x.lease_until < now())"
     "  AND NOT " HAS_EVENTS("x", "$1::bigint") " FOR UPDATE SKIP LOCKED)"},
};
const size_t db_webhook_nstmts = sizeof db_webhook_stmts / sizeof db_webhook_stmts[0];

enum db_status db_webhook_insert(struct db_conn *c, const struct db_webhook_new *in, char **doc)
{
    *doc = NULL;
    char *nonce = db_bytea_hex(in->nonce, CRYPT_NONCE_LEN);
    char *ct = db_bytea_hex(in->ciphertext, in->ciphertext_len);
    const char *p[10] = {in->id, in->url, in->event_types, in->description, in->format, in->kid,
                         nonce,  ct,      in->created_by,  in->project_id};
    enum db_status s = nonce && ct ? db_exec_doc(c, "webhook_insert", 10, p, doc) : DB_HARD_ERROR;
    free(nonce);
    free(ct);
    return s;
}

enum db_status db_webhook_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "webhook_get", 2, p, doc);
}

/* Runs stmt (id and scope) and copies its project_id column into project. */
static enum db_status project_of(struct db_conn *c, const char *stmt, int n, const char *const *p,
                                 char project[37])
{
    PGresult *r;
    project[0] = '\0';
    enum db_status s = db_exec(c, stmt, n, p, &r);
    if (s == DB_ONE_RESULT)
        db_copy(r, 0, "project_id", project, 37);
    PQclear(r);
    return s;
}

enum db_status db_webhook_delete(struct db_conn *c, const char *id, const char *scope,
                                 char project[37])
{
    const char *p[2] = {id, scope};
    return project_of(c, "webhook_delete", 2, p, project);
}

enum db_status db_webhook_project(struct db_conn *c, const char *id, char project[37])
{
    const char *p[1] = {id};
    return project_of(c, "webhook_project", 1, p, project);
}

enum db_status db_webhook_list(struct db_conn *c, const char *scope, const char *project_id,
                               const char *after_seq, long limit, struct db_page *page)
{
    char l[24];
    snprintf(l, sizeof l, "%ld", limit);
    const char *p[4] = {after_seq, l, scope, project_id};
    return db_exec_page(c, "webhook_list", 4, p, page);
}

enum db_status db_webhook_replay(struct db_conn *c, const char *id, const char *scope,
                                 int64_t from_event_id, char **doc)
{
    char from[24];
    snprintf(from, sizeof from, "%lld", (long long)from_event_id);
    const char *p[3] = {id, from, scope};
    return db_exec_doc(c, "webhook_replay", 3, p, doc);
}

enum db_status db_webhook_deliveries(struct db_conn *c, const char *id, const char *scope,
                                     const char *status, const char *before_seq, long limit,
                                     struct db_page *page, int *exists)
{
    const char *p1[2] = {id, scope};
    *exists = 0;
    db_page_clear(page);
    enum db_status s = db_exec_noresult(c, "webhook_exists", 2, p1);
    if (s <= 0)
        return s;
    *exists = 1;
    char l[24];
    snprintf(l, sizeof l, "%ld", limit);
    const char *p[4] = {id, status, before_seq, l};
    return db_exec_page(c, "webhook_deliveries", 4, p, page);
}

/* ---- the dispatcher ---- */

void db_webhook_claims_free(struct db_webhook_claim *claims, int n)
{
    if (claims == NULL)
        return;
    for (int i = 0; i < n; i++) {
        free(claims[i].url);
        free(claims[i].event_types);
        crypt_secret_free(&claims[i].key);
    }
    free(claims);
}

/* Opens row i's sealed secret into cl->key, or sets decrypt_failed with a reason. */
static void open_secret(const PGresult *r, int i, struct db_webhook_claim *cl)
{
    const char *kid = db_str(r, i, "kid");
    enum db_sealed o =
        db_sealed_open(kid, db_str(r, i, "nonce"), db_str(r, i, "ciphertext"), cl->id, &cl->key);
    cl->decrypt_failed = o != DB_SEALED_OK;
    switch (o) {
    case DB_SEALED_OK: break;
    case DB_SEALED_NO_KEY:
        snprintf(cl->err, sizeof cl->err, "the secret cannot be decrypted: no master key");
        break;
    case DB_SEALED_OTHER_KEY:
        snprintf(cl->err, sizeof cl->err,
                 "the secret was sealed under key id %.16s, but the loaded master key has id %s",
                 kid, crypt_master()->kid);
        break;
    case DB_SEALED_MALFORMED:
        snprintf(cl->err, sizeof cl->err, "the stored secret is malformed");
        break;
    case DB_SEALED_FORGED:
        snprintf(cl->err, sizeof cl->err,
                 "the secret cannot be decrypted (wrong master key or a tampered row)");
        break;
    }
}

/* Runs stmt and allocates a zeroed array of size bytes a row of its result. Returns the
 * status; when it is > 0, *r (PQclear) and *out (free) are the caller's, and *rows holds
 * the count; otherwise both are released. */
static enum db_status exec_rows(struct db_conn *c, const char *stmt, int nparams,
                                const char *const *params, size_t size, PGresult **r, void **out,
                                int *rows)
{
    *out = NULL;
    *rows = 0;
    enum db_status s = db_exec(c, stmt, nparams, params, r);
    if (s <= 0) {
        PQclear(*r);
        return s;
    }
    *rows = PQntuples(*r);
    *out = calloc((size_t)*rows, size);
    if (*out == NULL) {
        PQclear(*r);
        return DB_HARD_ERROR;
    }
    return s;
}

enum db_status db_webhook_claim(struct db_conn *c, const char *owner, int64_t horizon, int lease_s,
                                int limit, const char *held, struct db_webhook_claim **claims,
                                int *n)
{
    char h[24], lease[16], lim[16];
    snprintf(h, sizeof h, "%lld", (long long)horizon);
    snprintf(lease, sizeof lease, "%d", lease_s);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[5] = {owner, h, lease, lim, held};
    PGresult *r;
    void *mem;
    int rows;
    *claims = NULL;
    *n = 0;
    enum db_status s =
        exec_rows(c, "webhook_claim", 5, p, sizeof(struct db_webhook_claim), &r, &mem, &rows);
    if (s <= 0)
        return s;
    struct db_webhook_claim *out = mem;
    int oom = 0;
    for (int i = 0; i < rows; i++) {
        struct db_webhook_claim *cl = &out[i];
        db_copy(r, i, "id", cl->id, sizeof cl->id);
        cl->url = db_dup(r, i, "url", &oom);
        cl->event_types = db_dup(r, i, "event_types", &oom);
        db_copy(r, i, "projects", cl->projects, sizeof cl->projects);
        cl->slack = strcmp(db_str(r, i, "format"), "slack") == 0;
        cl->last_event_id = strtoll(db_str(r, i, "last_event_id"), NULL, 10);
        cl->generation = strtoll(db_str(r, i, "generation"), NULL, 10);
        cl->retry_event_id = strtoll(db_str(r, i, "retry_event_id"), NULL, 10);
        cl->attempts = (int)db_long(r, i, "attempts");
        cl->first_attempt_us = strtoll(db_str(r, i, "first_attempt_us"), NULL, 10);
        open_secret(r, i, cl);
    }
    PQclear(r);
    /* The rows are leased now whatever happens here: on failure the leases lapse. */
    if (oom) {
        db_webhook_claims_free(out, rows);
        return DB_HARD_ERROR;
    }
    *claims = out;
    *n = rows;
    return s;
}

enum db_status db_webhook_renew(struct db_conn *c, const char *owner, const char *ids, int lease_s)
{
    char lease[16];
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *p[3] = {owner, ids, lease};
    return db_exec_noresult(c, "webhook_renew", 3, p);
}

enum db_status db_webhook_release(struct db_conn *c, const char *owner, const char *id)
{
    const char *p[2] = {owner, id};
    return db_exec_noresult(c, "webhook_release", 2, p);
}

enum db_status db_webhook_record(struct db_conn *c, const struct db_webhook_attempt *a,
                                 int *recorded)
{
    static const char *const names[] = {"delivered", "retrying", "failed"};
    char gen[24], ev[24], att[16], first[40], code[16], lat[24], retry[40], lease[16];
    snprintf(gen, sizeof gen, "%lld", (long long)a->generation);
    snprintf(ev, sizeof ev, "%lld", (long long)a->event_id);
    snprintf(att, sizeof att, "%d", a->attempts);
    snprintf(first, sizeof first, "%.6f", (double)a->first_attempt_us / 1e6);
    snprintf(code, sizeof code, "%d", a->response_code);
    snprintf(lat, sizeof lat, "%ld", a->latency_ms);
    snprintf(retry, sizeof retry, "%.3f", (double)a->retry_in_ms / 1e3);
    snprintf(lease, sizeof lease, "%d", a->lease_s);
    const char *p[17] = {a->id,
                         a->owner,
                         gen,
                         ev,
                         a->event_type,
                         names[a->outcome],
                         att,
                         first,
                         a->response_code > 0 ? code : NULL,
                         lat,
                         a->error,
                         retry,
                         lease,
                         a->outcome == DB_WH_FAILED ? a->reason : NULL,
                         a->outcome == DB_WH_RETRYING && a->keep_lease ? "true" : "false",
                         a->outcome == DB_WH_FAILED ? a->event_reason : NULL,
                         a->outcome == DB_WH_FAILED ? a->error_class : NULL};
    PGresult *r;
    *recorded = 0;
    enum db_status s = db_exec(c, "webhook_record", 17, p, &r);
    if (s == DB_ONE_RESULT)
        *recorded = (int)db_long(r, 0, "recorded");
    PQclear(r);
    return s;
}

/* Appends the n values v(i) to an array literal ("{a,b,…}"). */
static void array_lit(struct sbuf *b, int n, const struct db_webhook_done *d, int which)
{
    sbuf_adds(b, "{");
    for (int i = 0; i < n; i++) {
        const struct db_webhook_done *x = &d[i];
        if (i > 0)
            sbuf_adds(b, ",");
        switch (which) {
        case 0: sbuf_adds(b, x->id); break;
        case 1: sbuf_printf(b, "%lld", (long long)x->generation); break;
        case 2: sbuf_printf(b, "%lld", (long long)x->event_id); break;
        case 3: sbuf_adds(b, x->event_type); break;
        case 4: sbuf_printf(b, "%d", x->attempts); break;
        case 5: sbuf_printf(b, "%.6f", (double)x->first_attempt_us / 1e6); break;
        case 6: sbuf_printf(b, "%d", x->response_code); break;
        default: sbuf_printf(b, "%ld", x->latency_ms); break;
        }
    }
    sbuf_adds(b, "}");
}

enum db_status db_webhook_delivered(struct db_conn *c, const char *owner, int lease_s,
                                    const struct db_webhook_done *d, int n, int *fenced)
{
    enum { NARR = 8 };
    char *arr[NARR] = {NULL};
    enum db_status s = DB_HARD_ERROR;
    PGresult *r = NULL;
    for (int i = 0; i < n; i++) {
        fenced[i] = 1;
        /* Event types as the table holds them: never a quote or brace to escape. */
        for (const char *t = d[i].event_type; *t; t++)
            if (!((*t >= 'a' && *t <= 'z') || *t == '_' || *t == '.'))
                return DB_HARD_ERROR;
    }
    for (int k = 0; k < NARR; k++) {
        struct sbuf b;
        sbuf_init(&b, 64 + (size_t)n * 40);
        array_lit(&b, n, d, k);
        if ((arr[k] = sbuf_take(&b, NULL)) == NULL)
            goto done;
    }
    char lease[16];
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *p[10] = {owner,  lease,  arr[0], arr[1], arr[2],
                         arr[3], arr[4], arr[5], arr[6], arr[7]};
    s = db_exec(c, "webhook_delivered", 10, p, &r);
    if (s < 0)
        goto done;
    int col = db_col(r, "id");
    for (int row = 0; row < PQntuples(r); row++)
        for (int i = 0; i < n; i++)
            if (strcmp(d[i].id, PQgetvalue(r, row, col)) == 0)
                fenced[i] = 0;
done:
    PQclear(r);
    for (int k = 0; k < NARR; k++)
        free(arr[k]);
    return s;
}

enum db_status db_webhook_disable(struct db_conn *c, const char *id, const char *owner,
                                  int64_t generation, const char *reason)
{
    char gen[24];
    snprintf(gen, sizeof gen, "%lld", (long long)generation);
    const char *p[4] = {id, owner, gen, reason};
    return db_exec_noresult(c, "webhook_disable", 4, p);
}

enum db_status db_webhook_event_ids(struct db_conn *c, int64_t after, int limit,
                                    struct db_webhook_event **events, int *n)
{
    char a[24], l[16];
    snprintf(a, sizeof a, "%lld", (long long)after);
    snprintf(l, sizeof l, "%d", limit);
    const char *p[2] = {a, l};
    PGresult *r;
    void *mem;
    int rows;
    *events = NULL;
    *n = 0;
    enum db_status s =
        exec_rows(c, "webhook_event_ids", 2, p, sizeof(struct db_webhook_event), &r, &mem, &rows);
    if (s <= 0)
        return s;
    struct db_webhook_event *out = mem;
    int cid = db_col(r, "id"), ctype = db_col(r, "type");
    for (int i = 0; i < rows; i++) {
        const char *type = PQgetvalue(r, i, ctype);
        out[i].id = strtoll(PQgetvalue(r, i, cid), NULL, 10);
        out[i].type = -1;
        for (int t = 0; t < db_event_ntypes; t++)
            if (strcmp(db_event_types[t], type) == 0) {
                out[i].type = t;
                break;
            }
    }
    PQclear(r);
    *events = out;
    *n = rows;
    return s;
}

enum db_status db_webhook_advance_idle(struct db_conn *c, int64_t horizon, long *moved)
{
    char h[24];
    snprintf(h, sizeof h, "%lld", (long long)horizon);
    const char *p[1] = {h};
    return db_exec_count(c, "webhook_advance_idle", 1, p, moved);
}
