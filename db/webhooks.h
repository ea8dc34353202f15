/* webhooks.h — webhooks and their deliveries (migrations/0013_webhooks.sql).
 *
 * The API side stores a webhook with its secret sealed (AES-256-GCM under the process
 * key, the row's id as AAD, exactly as SSH credentials) and renders documents without
 * it. The dispatcher side (service/webhooks.c) leases webhooks, reads their next events
 * and records each attempt; every write it makes is fenced by its lease and by the
 * webhook's generation, so a dispatcher that lost the webhook (lease lapsed, replay,
 * delete) records nothing more for it. */
#ifndef GPUFLEET_DB_WEBHOOKS_H
#define GPUFLEET_DB_WEBHOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/crypt.h"
#include "db/db.h"

/* ---- the API ---- */

struct db_webhook_new {
    const char *id; /* chosen by the caller: it is the AAD of the sealed secret */
    const char *url, *event_types /* a text[] literal */, *description, *format, *created_by;
    const char *project_id; /* the project whose events it receives */
    const char *kid;
    const unsigned char *nonce; /* CRYPT_NONCE_LEN bytes */
    const unsigned char *ciphertext;
    size_t ciphertext_len;
};
/* Inserts a webhook whose cursor is the newest event now: it is sent the events that come
 * after its creation. *doc gets the Webhook document (caller frees). */
enum db_status db_webhook_insert(struct db_conn *c, const struct db_webhook_new *in, char **doc);
/* Every read and write of one webhook is scoped: scope is a uuid[] literal of the
 * projects whose webhooks the caller may see or change (NULL: every project); another
 * project's webhook is as one that does not exist (DB_NO_RESULTS). */
enum db_status db_webhook_get(struct db_conn *c, const char *id, const char *scope, char **doc);
/* Deletes the webhook and its deliveries; project receives its project. */
enum db_status db_webhook_delete(struct db_conn *c, const char *id, const char *scope,
                                 char project[37]);
/* The project of a webhook, whatever the scope (for auditing a refusal): DB_NO_RESULTS
 * when there is no such webhook. */
enum db_status db_webhook_project(struct db_conn *c, const char *id, char project[37]);
/* Webhooks in creation order after the keyset value after_seq (NULL: from the start), of
 * scope and of project_id (NULL: any). */
enum db_status db_webhook_list(struct db_conn *c, const char *scope, const char *project_id,
                               const char *after_seq, long limit, struct db_page *page);
/* Sends the events from from_event_id on again, as a new generation: the cursor becomes
 * from_event_id - 1, the webhook is enabled and due now. *doc gets the document;
 * DB_NO_RESULTS when there is no such webhook. */
enum db_status db_webhook_replay(struct db_conn *c, const char *id, const char *scope,
                                 int64_t from_event_id, char **doc);
/* Deliveries, newest first, before the keyset value before_seq (NULL: from the newest);
 * status: delivered, retrying, failed or NULL for all. *exists says whether the webhook
 * exists (when not, the page is empty). */
enum db_status db_webhook_deliveries(struct db_conn *c, const char *id, const char *scope,
                                     const char *status, const char *before_seq, long limit,
                                     struct db_page *page, int *exists);

/* ---- the dispatcher ---- */

/* A leased webhook. */
struct db_webhook_claim {
    char id[37];
    char *url;         /* malloc'd */
    char *event_types; /* text[] literal, malloc'd */
    char projects[40]; /* "{<its project id>}": only that project's events are sent */
    int slack;         /* format slack */
    int64_t last_event_id, generation;
    struct crypt_secret key; /* the HMAC key; empty when decrypt_failed */
    int decrypt_failed;
    char err[200]; /* why, when decrypt_failed (never key material) */
    /* An event whose delivery is being retried (retry_event_id 0: none). */
    int64_t retry_event_id;
    int attempts;
    int64_t first_attempt_us; /* wall clock */
};
void db_webhook_claims_free(struct db_webhook_claim *claims, int n);

/* Leases up to limit enabled webhooks that are due, not leased by another dispatcher, not
 * in held (a uuid[] literal of those this dispatcher holds, or NULL), and that have an
 * event of their types and their project in (last_event_id, horizon]; FOR UPDATE SKIP LOCKED, so
 * dispatchers never wait for one another. *claims (caller frees with
 * db_webhook_claims_free) and *n receive them. */
enum db_status db_webhook_claim(struct db_conn *c, const char *owner, int64_t horizon, int lease_s,
                                int limit, const char *held, struct db_webhook_claim **claims,
                                int *n);
/* Extends the leases of the webhooks in ids (a uuid[] literal) that owner holds. */
enum db_status db_webhook_renew(struct db_conn *c, const char *owner, const char *ids, int lease_s);
/* Gives a lease back (id NULL: every lease owner holds). */
enum db_status db_webhook_release(struct db_conn *c, const char *owner, const char *id);

/* The outcome of one attempt. */
enum db_webhook_outcome { DB_WH_DELIVERED, DB_WH_RETRYING, DB_WH_FAILED };
struct db_webhook_attempt {
    const char *id, *owner;
    int64_t generation, event_id;
    const char *event_type;
    enum db_webhook_outcome outcome;
    int attempts;
    int64_t first_attempt_us;
    int response_code; /* 0: no answer */
    long latency_ms;
    const char *error;   /* NULL when delivered; at most 1024 bytes of valid UTF-8 */
    int64_t retry_in_ms; /* RETRYING: the next attempt is due this much later */
    const char *reason;  /* FAILED: why the webhook is disabled (<= 1024 bytes, UTF-8) */
    /* FAILED: what the webhook.disabled event says, seen by every viewer and webhook of the
     * project: a reason without the receiver's answer, and the error class (a word) */
    const char *event_reason, *error_class;
    int lease_s;    /* DELIVERED (or keep_lease): the lease is extended by this much */
    int keep_lease; /* RETRYING: the dispatcher keeps the webhook for a short wait */
};
/* Records an attempt in one statement: the delivery row and the webhook (DELIVERED: the
 * cursor moves to the event and the lease is extended; RETRYING: due again after the
 * backoff, lease given back unless keep_lease; FAILED: disabled with the reason, lease given back,
 * and a webhook.disabled event). *recorded is 0 when the fence refused it (the webhook is gone,
 * disabled, replayed or leased by another dispatcher). */
enum db_status db_webhook_record(struct db_conn *c, const struct db_webhook_attempt *a,
                                 int *recorded);
/* A delivered attempt (a 2xx answer), for db_webhook_delivered. */
struct db_webhook_done {
    const char *id;
    int64_t generation, event_id;
    const char *event_type; /* an event type as stored ([a-z_.]) */
    int attempts;
    int64_t first_attempt_us;
    int response_code;
    long latency_ms;
};
/* Records n delivered attempts in one statement: their delivery rows, and each webhook's
 * cursor moved to its highest event here and its lease extended by lease_s. Fenced like
 * db_webhook_record: fenced[i] is set to 1 (else 0) when entry i's webhook refused it
 * (gone, disabled, replayed or leased by another dispatcher); nothing is recorded for it. */
enum db_status db_webhook_delivered(struct db_conn *c, const char *owner, int lease_s,
                                    const struct db_webhook_done *d, int n, int *fenced);
/* Disables a leased webhook without an attempt (its secret cannot be decrypted), with a
 * webhook.disabled event (error_class secret; the reason stays in disabled_reason). */
enum db_status db_webhook_disable(struct db_conn *c, const char *id, const char *owner,
                                  int64_t generation, const char *reason);

/* An event's id and type (its index in db_event_types, -1 when unknown). */
struct db_webhook_event {
    int64_t id;
    int type;
};
/* Events after after, in id order, at most limit (for the dispatcher's horizon: the ids
 * below it have all committed or are given up). *events is malloc'd (caller frees). */
enum db_status db_webhook_event_ids(struct db_conn *c, int64_t after, int limit,
                                    struct db_webhook_event **events, int *n);
/* Moves the cursor of every enabled, unleased webhook with no event of its types and its
 * project in (last_event_id, horizon] to horizon, so that later scans start there. */
enum db_status db_webhook_advance_idle(struct db_conn *c, int64_t horizon, long *moved);

#endif
