/* idempotency.h — stored first answers for POSTs sent with an Idempotency-Key. */
#ifndef GPUFLEET_DB_IDEMPOTENCY_H
#define GPUFLEET_DB_IDEMPOTENCY_H

#include "db/db.h"

enum db_idem_outcome {
    IDEM_NEW,         /* first time: run the request, then db_idem_finish */
    IDEM_REPLAY,      /* answer stored: replay it */
    IDEM_MISMATCH,    /* same key, different request */
    IDEM_IN_PROGRESS, /* the first request is still running */
};

struct db_idem_reply {
    int status;
    char *location; /* may be NULL */
    char *content_type;
    char *body;
};

/* Claims (principal, key) for this request (hash of method, path and body), inside the
 * request's transaction: a concurrent claim of the same key waits for it to end. On
 * IDEM_REPLAY, *reply is filled (caller frees with db_idem_reply_free). */
enum db_status db_idem_begin(struct db_conn *c, const char *principal, const char *key,
                             const char *method, const char *path, const char *hash,
                             enum db_idem_outcome *outcome, struct db_idem_reply *reply);
/* Stores the answer of the first request, in the transaction of its writes (DB_ONE_RESULT
 * when the claim was there). */
enum db_status db_idem_finish(struct db_conn *c, const char *principal, const char *key, int status,
                              const char *location, const char *content_type, const char *body);
void db_idem_reply_free(struct db_idem_reply *reply);

#endif
