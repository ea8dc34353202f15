/* tokens.c — see tokens.h. */
#include "db/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

#define REVOCATION_DOC                                                                            \
    "json_build_object('jti', v.jti, 'sub', v.sub, 'issued_before', "                             \
    "CASE WHEN v.issued_before IS NULL THEN NULL ELSE " DB_TS(                                    \
        "v.issued_before") " END, "                                                               \
                           "'expires_at', " DB_TS("v.expires_at") ", 'revoked_at', " DB_TS(       \
                               "v.revoked_at") ", "                                               \
                                               "'revoked_by', v.revoked_by, 'reason', v.reason, " \
                                               "'tokens_known', "                                 \
                                               "(SELECT count(*) FROM tokens t WHERE "            \
                                               "t.expires_at > now() AND (t.jti = v.jti OR "      \
                                               "(t.sub = v.sub AND t.issued_at <= "               \
                                               "v.issued_before))))::text AS doc"

const struct db_stmt db_token_stmts[] = {
    {"token_record",
     "INSERT INTO tokens (jti, sub, role, project, issued_at, expires_at)"
     " VALUES ($1, $2, $3, $4, to_timestamp($5::bigint), to_timestamp($6::bigint))"},
    /* The second of now() counts as issued before: a token's iat has whole seconds. */
    {"token_revoke_jti",
     "WITH v AS (INSERT INTO token_revocations AS r (jti, expires_at, revoked_by, reason)"
     " SELECT $1, greatest(now() + make_interval(secs => $4::bigint),"
     "  (SELECT t.expires_at FROM tokens t WHERE t.jti = $1)) + interval '1 minute', $2, $3"
     " ON CONFLICT (jti) WHERE jti IS NOT NULL DO UPDATE SET"
     "  expires_at = greatest(r.expires_at, EXCLUDED.expires_at), revoked_at = now(),"
     "  revoked_by = EXCLUDED.revoked_by, reason = EXCLUDED.reason RETURNING r.*),"
     " bump AS (UPDATE token_revocation_version SET version = version + 1 RETURNING version)"
     " SELECT " REVOCATION_DOC " FROM v, bump"},
    {"token_revoke_sub",
     "WITH v AS (INSERT INTO token_revocations AS r"
     " (sub, issued_before, expires_at, revoked_by, reason)"
     " SELECT $1, date_trunc('second', now()) + interval '1 second' - interval '1 microsecond',"
     "  greatest(now() + make_interval(secs => $4::bigint),"
     "  (SELECT max(t.expires_at) FROM tokens t WHERE t.sub = $1)) + interval '1 minute', $2, $3"
     " ON CONFLICT (sub) WHERE sub IS NOT NULL DO UPDATE SET"
     "  issued_before = EXCLUDED.issued_before,"
     "  expires_at = greatest(r.expires_at, EXCLUDED.expires_at), revoked_at = now(),"
     "  revoked_by = EXCLUDED.revoked_by, reason = EXCLUDED.reason RETURNING r.*),"
     " bump AS (UPDATE token_revocation_version SET version = version + 1 RETURNING version)"
     " SELECT " REVOCATION_DOC " FROM v, bump"},
    {"token_revocation_version", "SELECT version FROM token_revocation_version"},
    {"token_revocations_load",
     "SELECT jti, sub, floor(extract(epoch FROM issued_before))::bigint AS issued_before,"
     " ceil(extract(epoch FROM expires_at))::bigint AS expires_at"
     " FROM token_revocations WHERE expires_at > now()"},
    {"tokens_prune", "WITH a AS (DELETE FROM tokens WHERE expires_at < now() RETURNING 1),"
                     " b AS (DELETE FROM token_revocations WHERE expires_at < now() RETURNING 1)"
                     " SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)"},
};
const size_t db_token_nstmts = sizeof db_token_stmts / sizeof db_token_stmts[0];

enum db_status db_token_record(struct db_conn *c, const char *jti, const char *sub,
                               const char *role, const char *project, int64_t iat, int64_t exp)
{
    char a[24], b[24];
    snprintf(a, sizeof a, "%lld", (long long)iat);
    snprintf(b, sizeof b, "%lld", (long long)exp);
    const char *p[6] = {jti, sub, role, project, a, b};
    return db_exec_noresult(c, "token_record", 6, p);
}

enum db_status db_token_revoke(struct db_conn *c, const char *jti, const char *sub,
                               const char *reason, const char *revoked_by, long min_keep_s,
                               char **doc)
{
    char keep[24];
    snprintf(keep, sizeof keep, "%ld", min_keep_s);
    const char *p[4] = {jti ? jti : sub, revoked_by, reason, keep};
    return db_exec_doc(c, jti ? "token_revoke_jti" : "token_revoke_sub", 4, p, doc);
}

enum db_status db_token_revocation_version(struct db_conn *c, int64_t *version)
{
    PGresult *r;
    enum db_status s = db_exec(c, "token_revocation_version", 0, NULL, &r);
    if (s == DB_ONE_RESULT)
        *version = db_val_long(r, 0, 0);
    PQclear(r);
    return s;
}

void db_token_revocations_free(struct db_token_revocations *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].jti);
        free(l->items[i].sub);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

enum db_status db_token_revocations_load(struct db_conn *c, struct db_token_revocations *out)
{
    memset(out, 0, sizeof *out);
    /* The version first: an entry committed in between is loaded now and again at the
     * next poll (the version read is older), never missed. */
    enum db_status s = db_token_revocation_version(c, &out->version);
    if (s < 0)
        return s;
    PGresult *r;
    s = db_exec(c, "token_revocations_load", 0, NULL, &r);
    if (s < 0)
        return s;
    int n = PQntuples(r);
    out->items = n ? calloc((size_t)n, sizeof *out->items) : NULL;
    if (n > 0 && out->items == NULL) {
        PQclear(r);
        return DB_HARD_ERROR;
    }
    for (int i = 0; i < n; i++) {
        struct db_token_revocation *e = &out->items[out->n++];
        int oom = 0;
        if (!db_isnull(r, i, "jti"))
            e->jti = db_dup(r, i, "jti", &oom);
        if (!db_isnull(r, i, "sub"))
            e->sub = db_dup(r, i, "sub", &oom);
        e->issued_before = db_isnull(r, i, "issued_before") ? 0 : db_long(r, i, "issued_before");
        e->expires_at = db_long(r, i, "expires_at");
        if (oom || (e->jti == NULL && e->sub == NULL)) {
            PQclear(r);
            db_token_revocations_free(out);
            return DB_HARD_ERROR;
        }
    }
    PQclear(r);
    return s;
}

enum db_status db_tokens_prune(struct db_conn *c, long *deleted)
{
    PGresult *r;
    enum db_status s = db_exec(c, "tokens_prune", 0, NULL, &r);
    if (s == DB_ONE_RESULT)
        *deleted = db_val_long(r, 0, 0);
    PQclear(r);
    return s;
}
