/* webhooks.c — see webhooks.h.
 *
 * One thread owns everything here: the slots (one per leased webhook), the horizon
 * (service/webhook_horizon.c: which event ids have committed) and the HTTP transfers
 * (service/webhook_send.c). This file decides what is sent when: leases, order, retries
 * and records. Database calls are short statements on pooled connections; the HTTP
 * transfers never block the loop. */
#include "service/webhooks.h"

#include <assert.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sbuf.h"
#include "common/utf8.h"
#include "common/util.h"
#include "common/webhook.h"
#include "db/events.h"
#include "db/webhooks.h"
#include "service/webhooks_internal.h"

#define POLL_US       1000000LL       /* claims due retries and replays this often */
#define ADVANCE_US    (2 * 1000000LL) /* idle webhooks' cursors move to the horizon */
#define CLAIM_US      50000LL         /* claims for new events at most this often */
#define PREFETCH      64              /* events read per query per webhook */
#define SLOT_BATCH    256             /* deliveries before a webhook goes back in line */
#define IDLE_KEEP_US  (5 * 1000000LL) /* a webhook with nothing to send is kept this long */
#define RETRY_CAP_MS  (3600 * 1000LL) /* no retry is more than an hour after the last */
#define KEEP_RETRY_MS 10000           /* a retry due sooner keeps its webhook leased */
#define ERROR_MAX     WHS_ERROR_MAX   /* bytes of last_error and disabled_reason */

struct slot {
    struct db_webhook_claim w; /* owns url, event_types and the key */
    struct db_event_rows q;    /* prefetched events */
    int qi;
    int delivered;      /* since the claim */
    uint32_t types;     /* its event types, a bit per db_event_types index */
    int64_t idle_since; /* nothing to send since then (monotonic; 0: busy) */
    /* The event being delivered (ev_id 0: none yet). */
    int64_t ev_id;
    char ev_type[64];
    char *body;
    size_t body_len;
    int attempts;
    int64_t first_attempt_us; /* wall clock, 0 before the first attempt */
    int64_t due_us;           /* monotonic */
    struct whs_transfer *t;   /* the attempt in flight (NULL: none) */
};

/* A delivered attempt waiting to be recorded. */
struct pending {
    char id[UTIL_UUID_LEN + 1];
    char type[64];
    int64_t generation, event_id, first_attempt_us;
    int attempts, response_code;
    long latency_ms;
};

static struct {
    struct svc_webhooks_config cfg;
    char *url;
    pthread_t thread;
    int running;
    atomic_int stopping;
    char owner[UTIL_UUID_LEN + 1];
    int lease_s;
    struct slot **slots;
    int nslots;
    struct whh_horizon hz;
    int claim_now; /* a webhook went back in line: claim again without waiting */
    /* Delivered attempts not recorded yet (written together, see flush). */
    struct pending *pend;
    int npend, pend_cap, flushing;
} wh;
static atomic_int leased; /* wh.nslots, for /metrics */

/* ---- database calls (each on a pooled connection) ---- */

struct claim_arg {
    int64_t horizon;
    int limit;
    const char *held;
    struct db_webhook_claim *claims;
    int n;
};
static enum db_status claim_fn(struct db_conn *c, void *arg)
{
    struct claim_arg *a = arg;
    return db_webhook_claim(c, wh.owner, a->horizon, wh.lease_s, a->limit, a->held, &a->claims,
                            &a->n);
}

struct fetch_arg {
    struct slot *s;
};
static enum db_status fetch_fn(struct db_conn *c, void *arg)
{
    struct slot *s = ((struct fetch_arg *)arg)->s;
    return db_events_backlog(c, s->w.last_event_id, wh.hz.upto, s->w.event_types, NULL, NULL,
                             s->w.projects, PREFETCH, &s->q);
}

struct record_arg {
    const struct db_webhook_attempt *a;
    int recorded;
};
static enum db_status record_fn(struct db_conn *c, void *arg)
{
    struct record_arg *r = arg;
    return db_webhook_record(c, r->a, &r->recorded);
}

struct delivered_arg {
    const struct db_webhook_done *d;
    int n;
    int *fenced;
};
static enum db_status delivered_fn(struct db_conn *c, void *arg)
{
    struct delivered_arg *a = arg;
    return db_webhook_delivered(c, wh.owner, wh.lease_s, a->d, a->n, a->fenced);
}

struct lease_arg {
    const char *id;  /* release: one webhook, or NULL for all */
    const char *ids; /* renew */
};
static enum db_status release_fn(struct db_conn *c, void *arg)
{
    return db_webhook_release(c, wh.owner, ((struct lease_arg *)arg)->id);
}
static enum db_status renew_fn(struct db_conn *c, void *arg)
{
    return db_webhook_renew(c, wh.owner, ((struct lease_arg *)arg)->ids, wh.lease_s);
}

struct disable_arg {
    const struct slot *s;
    const char *reason;
};
static enum db_status disable_fn(struct db_conn *c, void *arg)
{
    struct disable_arg *a = arg;
    return db_webhook_disable(c, a->s->w.id, wh.owner, a->s->w.generation, a->reason);
}

static enum db_status idle_fn(struct db_conn *c, void *arg)
{
    long moved = 0;
    return db_webhook_advance_idle(c, *(int64_t *)arg, &moved);
}

/* ---- slots ---- */

static void transfer_end(struct slot *s)
{
    whs_end(s->t);
    s->t = NULL;
}

static void event_clear(struct slot *s)
{
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
    s->ev_id = 0;
    s->ev_type[0] = '\0';
    s->attempts = 0;
    s->first_attempt_us = 0;
}

static int slot_find(const struct slot *s)
{
    for (int i = 0; i < wh.nslots; i++)
        if (wh.slots[i] == s)
            return i;
    return -1;
}

static void flush(void);

/* Frees s (the last slot moves into its place); release first records what it delivered,
 * then gives its lease back. */
static void slot_drop(struct slot *s, int release)
{
    if (release) {
        flush(); /* may drop s itself, when it was fenced out */
        if (slot_find(s) < 0)
            return;
        struct lease_arg a = {s->w.id, NULL};
        db_run(release_fn, &a); /* on failure the lease lapses */
    }
    int i = slot_find(s);
    assert(i >= 0);
    transfer_end(s);
    event_clear(s);
    db_event_rows_free(&s->q);
    free(s->w.url);
    free(s->w.event_types);
    crypt_secret_free(&s->w.key);
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
    wh.slots[i] = wh.slots[--wh.nslots];
    atomic_store(&leased, wh.nslots);
}

/* Records the delivered attempts in one statement. A webhook that refused them (fenced
 * out) is dropped, and so is every webhook involved when the statement failed: whoever
 * holds it next starts from the stored cursor (at least once). */
static void flush(void)
{
    int n = wh.npend;
    if (n == 0 || wh.flushing)
        return;
    wh.flushing = 1;
    struct db_webhook_done *d = malloc((size_t)n * sizeof *d);
    int *fenced = calloc((size_t)n, sizeof *fenced);
    enum db_status st = DB_HARD_ERROR;
    if (d != NULL && fenced != NULL) {
        for (int i = 0; i < n; i++) {
            const struct pending *p = &wh.pend[i];
            d[i] = (struct db_webhook_done){
                p->id,       p->generation,       p->event_id,      p->type,
                p->attempts, p->first_attempt_us, p->response_code, p->latency_ms};
        }
        struct delivered_arg a = {d, n, fenced};
        st = db_run(delivered_fn, &a);
    }
    for (int i = 0; i < n; i++) {
        if (st >= 0 && fenced != NULL && !fenced[i])
            continue;
        for (int k = 0; k < wh.nslots; k++) {
            struct slot *s = wh.slots[k];
            if (strcmp(s->w.id, wh.pend[i].id) != 0 || s->w.generation != wh.pend[i].generation)
                continue;
            log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:I, s:b}", "msg",
                                               "webhook delivered, not recorded: dropped",
                                               "webhook_id", s->w.id, "event_id",
                                               (json_int_t)wh.pend[i].event_id, "fenced", st >= 0));
            slot_drop(s, st >= 0);
            break;
        }
    }
    free(d);
    free(fenced);
    wh.npend = 0;
    wh.flushing = 0;
}

/* Queues s's delivered attempt for flush. Returns 0, or -1 when out of memory. */
static int pending_add(const struct slot *s, int code, long latency_ms)
{
    if (wh.npend == wh.pend_cap) {
        int cap = wh.pend_cap ? 2 * wh.pend_cap : 64;
        struct pending *np = realloc(wh.pend, (size_t)cap * sizeof *np);
        if (np == NULL)
            return -1;
        wh.pend = np;
        wh.pend_cap = cap;
    }
    struct pending *p = &wh.pend[wh.npend++];
    snprintf(p->id, sizeof p->id, "%s", s->w.id);
    snprintf(p->type, sizeof p->type, "%s", s->ev_type);
    p->generation = s->w.generation;
    p->event_id = s->ev_id;
    p->first_attempt_us = s->first_attempt_us;
    p->attempts = s->attempts;
    p->response_code = code;
    p->latency_ms = latency_ms;
    return 0;
}

/* A uuid[] literal of the held webhooks ("{}" when none); caller frees. */
static char *held_ids(void)
{
    struct sbuf b;
    sbuf_init(&b, 2 + (size_t)wh.nslots * 38);
    sbuf_adds(&b, "{");
    for (int i = 0; i < wh.nslots; i++) {
        if (i > 0)
            sbuf_adds(&b, ",");
        sbuf_adds(&b, wh.slots[i]->w.id);
    }
    sbuf_adds(&b, "}");
    return sbuf_take(&b, NULL);
}

/* ---- claims ---- */

/* The bits of the types in a text[] literal such as {host.state,job.state}. */
static uint32_t types_mask(const char *literal)
{
    uint32_t m = 0;
    for (int t = 0; t < db_event_ntypes && t < 32; t++) {
        size_t n = strlen(db_event_types[t]);
        for (const char *p = strstr(literal, db_event_types[t]); p != NULL;
             p = strstr(p + 1, db_event_types[t]))
            if (p > literal && (p[-1] == '{' || p[-1] == ',') && (p[n] == '}' || p[n] == ','))
                m |= 1u << t;
    }
    return m;
}

static void claim(void)
{
    int room = wh.cfg.concurrency - wh.nslots;
    if (room <= 0 || !wh.hz.known)
        return;
    char *held = held_ids();
    if (held == NULL)
        return;
    struct claim_arg a = {wh.hz.upto, room, held, NULL, 0};
    enum db_status st = db_run(claim_fn, &a);
    free(held);
    if (st < 0)
        return;
    if (a.n > 0 && log_enabled(LOG_DEBUG))
        log_json_steal(LOG_DEBUG,
                       json_pack("{s:s, s:i, s:I, s:i}", "msg", "webhooks claimed", "claimed", a.n,
                                 "horizon", (json_int_t)wh.hz.upto, "held", wh.nslots));
    for (int i = 0; i < a.n; i++) {
        struct slot *s = calloc(1, sizeof *s);
        if (s == NULL) {
            struct lease_arg la = {a.claims[i].id, NULL};
            db_run(release_fn, &la);
            continue;
        }
        s->w = a.claims[i]; /* takes the members over */
        memset(&a.claims[i], 0, sizeof a.claims[i]);
        s->types = types_mask(s->w.event_types);
        wh.slots[wh.nslots++] = s;
        atomic_store(&leased, wh.nslots);
        if (s->w.decrypt_failed) {
            log_json_steal(LOG_ERROR, json_pack("{s:s, s:s, s:s}", "msg",
                                                "webhook disabled: its secret cannot be opened",
                                                "webhook_id", s->w.id, "reason", s->w.err));
            struct disable_arg d = {s, s->w.err};
            db_run(disable_fn, &d);
            slot_drop(s, 0);
        }
    }
    db_webhook_claims_free(a.claims, a.n);
}

static void renew(void)
{
    if (wh.nslots == 0)
        return;
    char *ids = held_ids();
    if (ids == NULL)
        return;
    struct lease_arg a = {NULL, ids};
    db_run(renew_fn, &a); /* a lease that lapses fences this dispatcher out: see record */
    free(ids);
}

/* ---- attempts ---- */

/* Starts the attempt for s's event. Returns 0, or -1 (out of memory: tried again later). */
static int transfer_start(struct slot *s)
{
    struct whs_request rq = {s->w.url, s->w.key.data, s->w.key.len, s->ev_id, s->body, s->body_len};
    s->t = whs_start(&rq, s);
    return s->t != NULL ? 0 : -1;
}

/* The next event of s into its slot. Returns 1 when there is one, 0 when there is
 * nothing to send, -1 on a database failure. */
static int next_event(struct slot *s)
{
    if (s->qi >= s->q.n) {
        struct fetch_arg a = {s};
        s->qi = 0;
        if (db_run(fetch_fn, &a) < 0)
            return -1;
        if (log_enabled(LOG_DEBUG))
            log_json_steal(LOG_DEBUG,
                           json_pack("{s:s, s:s, s:I, s:I, s:i}", "msg", "webhook events read",
                                     "webhook_id", s->w.id, "after", (json_int_t)s->w.last_event_id,
                                     "upto", (json_int_t)wh.hz.upto, "events", s->q.n));
        if (s->q.n == 0)
            return 0;
    }
    const struct db_event_row *row = &s->q.rows[s->qi++];
    char *body = wh_payload(s->w.slack, row->doc);
    if (body == NULL)
        return -1;
    event_clear(s);
    s->body = body;
    s->body_len = strlen(body);
    s->ev_id = row->id;
    snprintf(s->ev_type, sizeof s->ev_type, "%s", row->type);
    if (s->w.retry_event_id == row->id) { /* a retry another dispatcher scheduled */
        s->attempts = s->w.attempts;
        s->first_attempt_us = s->w.first_attempt_us;
    }
    s->w.retry_event_id = 0;
    s->due_us = 0;
    return 1;
}

/* An attempt ended. A delivered one is queued for flush and the slot moves on at once; a
 * failed one is recorded now, after what the webhook delivered before it. Returns 1 when
 * the event was given up (recorded: the webhook is disabled). */
static int transfer_done(void *owner, const struct whs_result *res)
{
    struct slot *s = owner;
    if (slot_find(s) < 0)
        return 0;
    int64_t now = util_now_us();
    long latency_ms = (long)(res->latency_us / 1000);
    int rcode = res->response_code;
    s->attempts++;
    if (s->first_attempt_us == 0)
        s->first_attempt_us = now;
    transfer_end(s);
    if (res->ok) {
        if (pending_add(s, rcode, latency_ms) != 0) {
            slot_drop(s, 0); /* out of memory: sent again by whoever holds it next */
            return 0;
        }
        s->w.last_event_id = s->ev_id;
        s->delivered++;
        event_clear(s);
        return 0;
    }
    flush(); /* what it delivered before this attempt comes first */
    if (slot_find(s) < 0)
        return 0; /* fenced out meanwhile */
    char reason[ERROR_MAX + 1] = "", event_reason[160] = "";
    struct db_webhook_attempt a = {.id = s->w.id,
                                   .owner = wh.owner,
                                   .generation = s->w.generation,
                                   .event_id = s->ev_id,
                                   .event_type = s->ev_type,
                                   .outcome = DB_WH_DELIVERED,
                                   .attempts = s->attempts,
                                   .first_attempt_us = s->first_attempt_us,
                                   .response_code = rcode,
                                   .latency_ms = latency_ms,
                                   .lease_s = wh.lease_s,
                                   .error = res->error};
    {
        int64_t deadline = s->first_attempt_us + (int64_t)wh.cfg.retry_max_s * 1000000;
        if (res->gone) {
            a.outcome = DB_WH_FAILED;
            snprintf(reason, sizeof reason, "the receiver answered 410 Gone to event %lld",
                     (long long)s->ev_id);
            snprintf(event_reason, sizeof event_reason,
                     "the receiver answered 410 Gone to event %lld", (long long)s->ev_id);
        } else if (now >= deadline) {
            a.outcome = DB_WH_FAILED;
            char tmp[ERROR_MAX * 2];
            snprintf(tmp, sizeof tmp,
                     "event %lld could not be delivered in %d s (%d attempts); last error: %s",
                     (long long)s->ev_id, wh.cfg.retry_max_s, s->attempts, res->error);
            utf8_clean(tmp, strlen(tmp), reason, sizeof reason);
            /* for every viewer and webhook: the class, never the receiver's answer */
            snprintf(event_reason, sizeof event_reason,
                     "event %lld could not be delivered in %d s (%d attempts); last error: %s",
                     (long long)s->ev_id, wh.cfg.retry_max_s, s->attempts,
                     res->error_kind ? res->error_kind : "other");
        } else {
            a.outcome = DB_WH_RETRYING;
            int64_t d = wh_backoff_ms(s->attempts, wh.cfg.retry_base_ms, RETRY_CAP_MS);
            if (now + d * 1000 > deadline)
                d = (deadline - now + 999) / 1000;
            a.retry_in_ms = d;
            a.keep_lease = d <= KEEP_RETRY_MS; /* a short wait: keep the webhook */
        }
        a.reason = reason;
        a.event_reason = event_reason;
        a.error_class = res->error_kind ? res->error_kind : "other";
    }
    struct record_arg ra = {&a, 0};
    enum db_status st = db_run(record_fn, &ra);
    {
        json_t *line = json_pack(
            "{s:s, s:s, s:I, s:i, s:i, s:I}", "msg",
            a.outcome == DB_WH_FAILED ? "webhook disabled" : "webhook delivery failed",
            "webhook_id", s->w.id, "event_id", (json_int_t)s->ev_id, "attempt", s->attempts,
            "response_code", a.response_code, "latency_ms", (json_int_t)latency_ms);
        /* The class of the failure, never the receiver's answer. */
        if (line != NULL)
            json_object_set_new(line, "error", json_string(res->error_class));
        if (line != NULL && (st < 0 || ra.recorded == 0))
            json_object_set_new(line, "recorded", json_false());
        log_json_steal(a.outcome == DB_WH_FAILED ? LOG_WARN : LOG_INFO, line);
    }
    if (st < 0 || ra.recorded == 0) {
        /* Fenced out (gone, replayed, disabled, lease lost) or unrecorded: drop the
         * webhook; whoever holds it next starts from the stored cursor. */
        slot_drop(s, st >= 0);
        return 0;
    }
    if (a.outcome == DB_WH_RETRYING && a.keep_lease) {
        s->due_us = util_mono_us() + a.retry_in_ms * 1000;
        return 0;
    }
    slot_drop(s, 0); /* the record gave the lease back */
    return a.outcome == DB_WH_FAILED;
}

/* Moves slot i on: next event, or start its attempt. Returns 0 when slots were freed (the
 * caller looks at index i again). */
static int slot_step(int i, int64_t now)
{
    struct slot *s = wh.slots[i];
    if (s->t != NULL)
        return 1;
    if (s->ev_id == 0) {
        if (s->delivered >= SLOT_BATCH) { /* let the other webhooks have a turn */
            slot_drop(s, 1);
            wh.claim_now = 1;
            return 0;
        }
        /* Nothing to send: look again when events of its types settle; give it back
         * after a while. */
        if (s->idle_since != 0) {
            if (now - s->idle_since < IDLE_KEEP_US)
                return 1;
            slot_drop(s, 1);
            return 0;
        }
        int r = next_event(s);
        if (r < 0) {
            slot_drop(s, 1);
            return 0;
        }
        if (r == 0) {
            s->idle_since = now;
            return 1;
        }
    }
    if (now < s->due_us)
        return 1;
    if (transfer_start(s) != 0)
        s->due_us = now + 1000000; /* out of memory: try again in a second */
    return 1;
}

/* ---- the loop ---- */

static void *run(void *arg)
{
    (void)arg;
    struct db_listener *l = db_listen(wh.url, "gpufleet_events");
    int64_t next_scan = 0, next_renew = 0, next_idle = 0, next_claim = 0;
    int notified = 1, claim_due = 0;
    while (!atomic_load(&wh.stopping)) {
        int64_t now = util_mono_us();
        if (notified || now >= next_scan) {
            if (whh_advance(&wh.hz, now))
                claim_due = 1;
            for (int i = 0; i < wh.nslots; i++)
                if (wh.slots[i]->types & wh.hz.new_types)
                    wh.slots[i]->idle_since = 0; /* it may have something to send now */
            wh.hz.new_types = 0;
            if (now >= next_scan) {
                claim_due = 1; /* retries and replays that came due */
                next_scan = now + POLL_US;
            }
            notified = 0;
        }
        /* New events wake the webhooks that are not held at most every CLAIM_US. */
        if ((claim_due && now >= next_claim) || wh.claim_now) {
            claim();
            claim_due = wh.claim_now = 0;
            next_claim = now + CLAIM_US;
        }
        if (now >= next_renew) {
            renew();
            next_renew = now + (int64_t)wh.lease_s * 1000000 / 3;
        }
        if (now >= next_idle && wh.hz.known) {
            int64_t h = wh.hz.upto;
            db_run(idle_fn, &h);
            next_idle = now + ADVANCE_US;
        }
        for (int i = 0; i < wh.nslots;)
            i += slot_step(i, now) ? 1 : 0;
        int finished = whs_perform(transfer_done);
        flush();
        if (finished)
            continue; /* the slots that delivered move on at once */
        /* Sleep until a transfer needs attention, an event is notified, a retry is due,
         * the next scan, or a missing id's wait ends. */
        int64_t wake = next_scan;
        if (next_renew < wake)
            wake = next_renew;
        if (claim_due && next_claim < wake)
            wake = next_claim;
        for (int i = 0; i < wh.nslots; i++) {
            const struct slot *s = wh.slots[i];
            int64_t due = s->t != NULL    ? wake
                          : s->ev_id != 0 ? s->due_us                     /* a retry */
                                          : s->idle_since + IDLE_KEEP_US; /* give it back */
            if (due < wake)
                wake = due;
        }
        int64_t gap_end = whh_gap_deadline(&wh.hz);
        if (gap_end != 0 && gap_end < wake)
            wake = gap_end;
        now = util_mono_us();
        int timeout = wake <= now ? 0 : (int)((wake - now + 999) / 1000);
        if (whs_wait(l ? db_listener_fd(l) : -1, timeout) && db_listener_drain(l) > 0)
            notified = 1;
        if (gap_end != 0 && util_mono_us() >= gap_end)
            notified = 1;
    }
    flush();
    while (wh.nslots > 0)
        slot_drop(wh.slots[wh.nslots - 1], 0);
    free(wh.pend);
    struct lease_arg all = {NULL, NULL};
    db_run(release_fn, &all); /* every lease this process held */
    db_listener_free(l);
    return NULL;
}

int svc_webhooks_start(const struct svc_webhooks_config *cfg)
{
    if (wh.running)
        return -1;
    wh.cfg = *cfg;
    if (wh.cfg.concurrency < 1)
        wh.cfg.concurrency = 1;
    wh.lease_s = 2 * (cfg->timeout_ms / 1000) + 30;
    util_uuid4(wh.owner);
    wh.url = strdup(cfg->database_url);
    wh.slots = calloc((size_t)wh.cfg.concurrency, sizeof *wh.slots);
    if (wh.url == NULL || wh.slots == NULL || whs_init(cfg->allow_cidrs, cfg->timeout_ms) != 0)
        goto fail;
    atomic_store(&wh.stopping, 0);
    if (pthread_create(&wh.thread, NULL, run, NULL) != 0) {
        whs_cleanup();
        goto fail;
    }
    wh.running = 1;
    log_json_steal(LOG_INFO,
                   json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i}", "msg", "webhook dispatcher",
                             "owner", wh.owner, "timeout_ms", cfg->timeout_ms, "retry_base_ms",
                             cfg->retry_base_ms, "retry_max_s", cfg->retry_max_s, "concurrency",
                             wh.cfg.concurrency, "lease_s", wh.lease_s));
    return 0;
fail:
    free(wh.url);
    free(wh.slots);
    memset(&wh, 0, sizeof wh);
    return -1;
}

void svc_webhooks_stop(void)
{
    if (!wh.running)
        return;
    atomic_store(&wh.stopping, 1);
    whs_wakeup();
    pthread_join(wh.thread, NULL);
    whs_cleanup();
    free(wh.url);
    free(wh.slots);
    memset(&wh, 0, sizeof wh);
}

void svc_webhooks_metrics(struct sbuf *b)
{
    sbuf_printf(b,
                "# HELP gpufleet_webhook_leases Webhooks whose lease this replica's dispatcher "
                "holds now (at most GPUFLEET_WEBHOOK_CONCURRENCY).\n"
                "# TYPE gpufleet_webhook_leases gauge\ngpufleet_webhook_leases %d\n",
                atomic_load(&leased));
    whs_metrics(b);
}
