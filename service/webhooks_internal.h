/* webhooks_internal.h — what the parts of the webhook dispatcher share. Not a public API:
 * for service/webhooks.c (the loop: leases, order, the retry schedule, records),
 * service/webhook_horizon.c (which event ids have committed) and service/webhook_send.c
 * (the HTTP side: the libcurl multi handle, one signed POST per attempt, the address check
 * at connect, the answer, and the attempts' figures) only. All of it runs on the
 * dispatcher thread, except whs_wakeup and whs_metrics; nothing here takes a lock. */
#ifndef GPUFLEET_SERVICE_WEBHOOKS_INTERNAL_H
#define GPUFLEET_SERVICE_WEBHOOKS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"

#define WHS_ERROR_MAX 1024 /* bytes of last_error and disabled_reason */

/* ---- the horizon (webhook_horizon.c) ---- */

#define WHH_GAP_WAIT_US 1000000LL /* a missing event id is taken for rolled back */

/* Every event id up to upto has committed (or is taken for rolled back). Zeroed: unknown. */
struct whh_horizon {
    int known;
    int64_t upto;
    int64_t gap_since, gap_id; /* waiting since (monotonic; 0: not) for id gap_id */
    uint32_t new_types; /* a bit per db_event_types index of the events passed (caller clears) */
};
/* Moves h over the ids that committed (the first call: to the newest event). Returns 1
 * when it moved. */
int whh_advance(struct whh_horizon *h, int64_t now);
/* When the wait for a missing id ends (monotonic), or 0 when none is missing. */
int64_t whh_gap_deadline(const struct whh_horizon *h);

/* ---- the transfers (webhook_send.c) ---- */

/* One attempt in flight (opaque; owned by webhook_send.c). */
struct whs_transfer;

/* What an attempt sends. Borrowed for the whs_start call, except body, which must stay
 * until the transfer ends. */
struct whs_request {
    const char *url;
    const unsigned char *key; /* the HMAC key */
    size_t keylen;
    int64_t event_id; /* webhook-id: evt_<event_id> */
    const char *body;
    size_t body_len;
};

/* How an attempt ended. */
struct whs_result {
    int ok;            /* a 2xx answer, from an address the policy accepts */
    int gone;          /* a complete transfer answered 410 Gone */
    int response_code; /* 100-999, 0 without an answer */
    int64_t latency_us;
    /* A failed attempt: its class for the log (static text, never the receiver's answer),
     * and its last_error (valid UTF-8, with at most 512 bytes of the answer). */
    const char *error_class;
    /* The same as one word for events (gone, http_4xx, http_5xx, http_status, timeout, tls,
     * dns, connect, transfer, address_refused, other): what viewers and other webhooks see */
    const char *error_kind;
    char error[WHS_ERROR_MAX + 1];
};

/* Sets up libcurl and the multi handle. allow_cidrs: GPUFLEET_WEBHOOK_ALLOW_CIDRS (copied);
 * timeout_ms bounds each attempt, connect included. Returns 0, or -1. */
int whs_init(const char *allow_cidrs, int timeout_ms);
/* Undoes whs_init; every transfer must have ended. */
void whs_cleanup(void);
/* Wakes whs_wait (from any thread). */
void whs_wakeup(void);

/* Signs and starts the POST; owner is handed back by whs_perform. Returns the transfer, or
 * NULL when out of memory (nothing started). */
struct whs_transfer *whs_start(const struct whs_request *rq, void *owner);
/* Ends a transfer, whether done or in flight (it is abandoned), and frees it. NULL: no-op. */
void whs_end(struct whs_transfer *t);
/* Drives the transfers; for each that ended, calls done(owner, result), which must end the
 * transfer with whs_end and returns 1 when the event was given up (the webhook disabled),
 * else 0; the attempt is counted by that. Returns 1 when any ended, else 0. */
int whs_perform(int (*done)(void *owner, const struct whs_result *res));
/* Sleeps until a transfer needs attention, fd (-1: none) is readable, whs_wakeup, or
 * timeout_ms. Returns 1 when fd is readable. */
int whs_wait(int fd, int timeout_ms);
/* gpufleet_webhook_deliveries_total and gpufleet_webhook_delivery_duration_seconds (from
 * any thread). */
void whs_metrics(struct sbuf *b);

#endif
