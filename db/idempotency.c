/* idempotency.c — see idempotency.h. Keys live 24 hours; a pending claim older than
 * 5 minutes (a crashed first request) may be taken over. */
#include "db/idempotency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

const struct db_stmt db_idem_stmts[] = {
    {"idem_claim",
     "INSERT INTO idempotency_keys (principal, key, method, path, request_hash, state)"
     " VALUES ($1, $2, $3, $4, $5, 'pending')"
     " ON CONFLICT (principal, key) DO UPDATE"
     "   SET method = EXCLUDED.method, path = EXCLUDED.path,"
     "       request_hash = EXCLUDED.request_hash, state = 'pending', status = NULL,"
     "       location = NULL, content_type = NULL, body = NULL, created_at = now()"
     "   WHERE idempotency_keys.created_at < now() - interval '24 hours'"
     "      OR (idempotency_keys.state = 'pending'"
     "          AND idempotency_keys.created_at < now() - interval '5 minutes')"
     " RETURNING 1"},
    {"idem_get",
     "SELECT request_hash, state, status, location, content_type, body FROM idempotency_keys"
     " WHERE principal = $1 AND key = $2"},
    {"idem_finish",
     "UPDATE idempotency_keys SET state = 'done', status = $3::int, location = $4,"
     " content_type = $5, body = $6 WHERE principal = $1 AND key = $2 AND state = 'pending'"},
    {"idem_abandon",
     "DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND state = 'pending'"},
    {"idem_purge",
     "DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'"},
};
const size_t db_idem_nstmts = sizeof db_idem_stmts / sizeof db_idem_stmts[0];

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

enum db_status db_idem_begin(struct db_conn *c, const char *principal, const char *key,
                             const char *method, const char *path, const char *hash,
                             enum db_idem_outcome *outcome, struct db_idem_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    const char *p[5] = {principal, key, method, path, hash};
    enum db_status s = db_exec_noresult(c, "idem_claim", 5, p);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        *outcome = IDEM_NEW;
        return s;
    }
    PGresult *r;
    s = db_exec(c, "idem_get", 2, p, &r);
    if (s < 0)
        return s;
    if (s == DB_NO_RESULTS) { /* purged between the two statements: treat as in progress */
        *outcome = IDEM_IN_PROGRESS;
    } else if (strcmp(db_str(r, 0, "request_hash"), hash) != 0) {
        *outcome = IDEM_MISMATCH;
    } else if (strcmp(db_str(r, 0, "state"), "pending") == 0) {
        *outcome = IDEM_IN_PROGRESS;
    } else {
        *outcome = IDEM_REPLAY;
        reply->status = atoi(db_str(r, 0, "status"));
        reply->location = dup_or_null(db_str(r, 0, "location"));
        reply->content_type = dup_or_null(db_str(r, 0, "content_type"));
        reply->body = dup_or_null(db_str(r, 0, "body"));
    }
    PQclear(r);
    return DB_ONE_RESULT;
}

enum db_status db_idem_finish(struct db_conn *c, const char *principal, const char *key,
                              int status, const char *location, const char *content_type,
                              const char *body)
{
    char st[16];
    snprintf(st, sizeof st, "%d", status);
    const char *p[6] = {principal, key, st, location, content_type, body};
    enum db_status s = db_exec_noresult(c, "idem_finish", 6, p);
    /* Purge expired keys now and then (about one finish in 64). */
    unsigned char dice = 1;
    util_random(&dice, 1);
    if (s >= 0 && (dice & 63) == 0)
        db_exec_noresult(c, "idem_purge", 0, NULL);
    return s;
}

enum db_status db_idem_abandon(struct db_conn *c, const char *principal, const char *key)
{
    const char *p[2] = {principal, key};
    return db_exec_noresult(c, "idem_abandon", 2, p);
}

void db_idem_reply_free(struct db_idem_reply *reply)
{
    free(reply->location);
    free(reply->content_type);
    free(reply->body);
    memset(reply, 0, sizeof *reply);
}
