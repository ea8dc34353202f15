/* webhooks.h — the webhook dispatcher: one thread per `gpufleetd serve` process that
 * delivers the durable events table to the webhooks (POST /v1/webhooks), signed after
 * the Standard Webhooks specification (common/webhook.h).
 *
 * Guarantees and how they are kept:
 *   - At least once, in order per webhook: the next event is sent only after a 2xx answer
 *     for the previous one (or after it is given up, which disables the webhook), and the
 *     cursor (last_event_id) moves only over acknowledged events. Acknowledged deliveries
 *     are recorded in batches, one statement per turn of the loop; a dispatcher that dies
 *     before its batch is written leaves the cursor behind, and those events are sent
 *     again, in order, with the same webhook-id (evt_<event id>).
 *   - Ids are taken from a sequence and may commit out of order: the dispatcher follows a
 *     horizon below which every id has committed, waiting up to GAP_WAIT for a missing id
 *     before it takes it for rolled back (as the event stream does).
 *   - One dispatcher per webhook at a time: webhooks are leased (lease_owner, lease_until)
 *     with FOR UPDATE SKIP LOCKED, renewed while held, given back after 5 s with nothing to
 *     send, after 256 deliveries (to let others in), or when a retry is more than 10 s
 *     away. Every write is fenced by the lease and the webhook's generation (bumped by
 *     replay).
 *   - A slow receiver delays only its own webhook: transfers run concurrently in one
 *     libcurl multi handle (up to `concurrency` webhooks at once per process), each bounded
 *     by timeout_ms.
 *   - Retries: after the n-th failed attempt the next is due retry_base_ms * 2^(n-1) later
 *     (at most an hour, and never after the deadline), until retry_max_s after the first
 *     attempt; then the event is given up, the webhook disabled, and a webhook.disabled
 *     event written. A 410 Gone answer disables the webhook at once.
 *   - Receivers: only http and https, no proxy from the environment, redirects not
 *     followed (a 3xx is a failure), and every address a connection is opened to is
 *     checked against the address policy right before connect() (libcurl's
 *     CURLOPT_OPENSOCKETFUNCTION), so a DNS answer that changed since (rebinding) cannot
 *     reach a refused address; once one address of a name is refused, the attempt tries
 *     none of the others and fails.
 *     At most 64 KiB of an answer is read; 512 bytes of it, cleaned to valid UTF-8, may go
 *     into the delivery's last_error, never into the log. */
#ifndef GPUFLEET_SERVICE_WEBHOOKS_H
#define GPUFLEET_SERVICE_WEBHOOKS_H

#include "common/sbuf.h"

struct svc_webhooks_config {
    const char *database_url; /* for LISTEN gpufleet_events */
    const char *allow_cidrs;  /* GPUFLEET_WEBHOOK_ALLOW_CIDRS (borrowed until stop) */
    int timeout_ms;           /* one attempt, connect included */
    int retry_base_ms;        /* the first retry's delay */
    int retry_max_s;          /* an event is given up this long after its first attempt */
    int concurrency;          /* webhooks delivered at once by this process */
};

/* Starts the dispatcher thread. Returns 0, or -1 when it cannot start. */
int svc_webhooks_start(const struct svc_webhooks_config *cfg);
/* Stops it: transfers in flight are abandoned (their events are sent again later) and
 * the leases given back. */
void svc_webhooks_stop(void);

/* For /metrics (from any thread; zero where no dispatcher runs):
 * gpufleet_webhook_leases, gpufleet_webhook_deliveries_total{result="delivered",
 * "failed_attempt" or "given_up"} and gpufleet_webhook_delivery_duration_seconds (a
 * histogram of every attempt). */
void svc_webhooks_metrics(struct sbuf *b);

#endif
