/* idempotency.c — see idempotency.h. Keys live 24 hours. The claim, the request's writes
 * and the stored answer commit in one transaction (api/http.c), so no other session ever
 * sees a pending claim; one older than 5 minutes (written before that) may be taken over. */
#include "db/idempotency.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db_pg.h"

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
    {"idem_purge", "DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'"},
};
const size_t db_idem_nstmts = sizeof db_idem_stmts / sizeof db_idem_stmts[0];

/* The strings of a stored reply and their columns. */
static const struct db_str_field reply_strings[] = {
    {"location", offsetof(struct db_idem_reply, location)},
    {"content_type", offsetof(struct db_idem_reply, content_type)},
    {"body", offsetof(struct db_idem_reply, body)},
};
#define NREPLY_STRINGS (sizeof reply_strings / sizeof reply_strings[0])

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
        reply->status = (int)db_long(r, 0, "status");
        if (db_dup_fields(r, 0, reply_strings, NREPLY_STRINGS, reply) != 0) {
            db_idem_reply_free(reply); /* never replay a reply with parts missing */
            s = DB_HARD_ERROR;
        }
    }
    PQclear(r);
    return s < 0 ? s : DB_ONE_RESULT;
}

enum db_status db_idem_finish(struct db_conn *c, const char *principal, const char *key, int status,
                              const char *location, const char *content_type, const char *body)
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

void db_idem_reply_free(struct db_idem_reply *reply)
{
    db_free_fields(reply_strings, NREPLY_STRINGS, reply);
    memset(reply, 0, sizeof *reply);
}
