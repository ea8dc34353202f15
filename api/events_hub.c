/* events_hub.c — see events_hub.h.
 *
 * Locks: subs_mu guards the subscriber registry; each subscriber's mu guards its cursor,
 * buffer and flags; ring_lock (read by streams, written by the hub thread) guards the
 * ring. Order: subs_mu is never held while taking a subscriber's mu (the hub works on a
 * referenced snapshot); a subscriber's mu may be held while taking ring_lock (read) and
 * while calling MHD_suspend_connection / MHD_resume_connection. Nothing that MHD may call
 * with its own locks held (the free callback, the completion callback) takes a
 * subscriber's mu. */
#include "api/events_hub.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "db/db.h"
#include "db/events.h"

const char *const ev_type_names[] = {
    "host.created",
    "host.state",
    "host.updated",
    "host.deleted",
    "job.state",
    "job.step",
    "gate.verdict",
    "diagnostics.verdict",
    "recommendation.opened",
    "recommendation.withdrawn",
    "work_reports.ingested",
};
const int ev_ntypes = (int)(sizeof ev_type_names / sizeof ev_type_names[0]);

#define RING_MAX_BYTES  ((size_t)8 << 20) /* frames held at most, whatever the count */
#define FETCH_LIMIT     1000              /* events read per query */
#define BACKLOG_LIMIT   256               /* backlog events loaded per subscriber per turn */
#define POLL_MS         1000              /* fallback poll when no notification arrives */
#define PRUNE_EVERY_US  (60 * 1000000LL)
#define PRUNE_BATCH     5000
#define PRUNE_BATCHES   20
#define RETRY_FRAME     "retry: 3000\n\n"
#define HEARTBEAT_FRAME ": heartbeat\n\n"
#define SLOW_FRAME      "event: error\ndata: {\"code\":\"slow_consumer\"}\n\n"

int ev_type_index(const char *name)
{
    for (int i = 0; i < ev_ntypes; i++)
        if (strcmp(ev_type_names[i], name) == 0)
            return i;
    return -1;
}

enum ev_end { END_CLIENT = 0, END_SLOW, END_SHUTDOWN };
static const char *const end_names[] = {"client", "slow_consumer", "shutdown"};

struct ev_ent {
    int64_t id;
    int type; /* index in ev_type_names, -1 when unknown */
    char pool[37], host[37];
    char *frame;
    size_t len;
};

struct ev_sub {
    pthread_mutex_t mu;
    atomic_int refs;
    atomic_int closed; /* the response was freed: conn is gone */
    atomic_uint_fast64_t sent;
    atomic_int end;
    struct MHD_Connection *conn;
    struct ev_filter f;
    int64_t cursor;   /* the last event id examined */
    int live;         /* reads from the ring (a cursor the ring overwrote means: cut) */
    int suspended;    /* its connection is suspended */
    int need_backlog; /* waits for the hub to load events after cursor from the database */
    int hb;           /* a heartbeat is due */
    int cut;          /* slow consumer: send the error frame, then end */
    int ending;       /* the last frame is queued: end once pend is drained */
    char *pend;       /* bytes to send before anything else */
    size_t pend_len, pend_off, pend_cap;
    size_t idx; /* position in the registry */
    char request_id[129];
    char principal[129];
};

static struct {
    struct ev_hub_config cfg;
    char *url;
    pthread_t thread;
    int running;
    atomic_int stopping;
    atomic_int ending; /* streams are being ended (shutdown) */
    atomic_int ready;  /* the position in the event log is known */
    atomic_int backlog_wanted;
    int wake[2];
    /* The ring: every delivered event with an id > floor, oldest first. */
    pthread_rwlock_t ring_lock;
    struct ev_ent *ents;
    size_t cap, head, count, bytes;
    int64_t floor, last;
    int64_t gap_since; /* when the hub started waiting for id last + 1 (0: not waiting) */
    /* Subscribers. */
    pthread_mutex_t subs_mu;
    struct ev_sub **subs;
    size_t nsubs, subs_cap;
    struct ev_sub **snap; /* hub thread only */
    size_t snap_cap;
    atomic_uint_fast64_t delivered, cut;
} hub = {.ring_lock = PTHREAD_RWLOCK_INITIALIZER,
         .subs_mu = PTHREAD_MUTEX_INITIALIZER,
         .wake = {-1, -1}};

/* ---- subscribers: references, buffer ---- */

static void sub_unref(struct ev_sub *s)
{
    if (atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->pend);
    free(s);
}

static int pend_add(struct ev_sub *s, const char *p, size_t n)
{
    if (s->pend_off > 0 && s->pend_off == s->pend_len)
        s->pend_off = s->pend_len = 0;
    if (s->pend_len + n > s->pend_cap) {
        size_t cap = s->pend_cap ? s->pend_cap : 256;
        while (cap < s->pend_len + n)
            cap *= 2;
        char *np = realloc(s->pend, cap);
        if (np == NULL)
            return -1;
        s->pend = np;
        s->pend_cap = cap;
    }
    memcpy(s->pend + s->pend_len, p, n);
    s->pend_len += n;
    return 0;
}

/* Copies pending bytes into buf; returns how many. */
static size_t pend_drain(struct ev_sub *s, char *buf, size_t max)
{
    size_t n = s->pend_len - s->pend_off;
    if (n == 0)
        return 0;
    if (n > max)
        n = max;
    memcpy(buf, s->pend + s->pend_off, n);
    s->pend_off += n;
    if (s->pend_off == s->pend_len) {
        s->pend_off = s->pend_len = 0;
        if (s->pend_cap > 64 * 1024) { /* a backlog chunk: give the memory back */
            free(s->pend);
            s->pend = NULL;
            s->pend_cap = 0;
        }
    }
    return n;
}

static void kick(void)
{
    if (hub.wake[1] >= 0) {
        char c = 1;
        ssize_t w = write(hub.wake[1], &c, 1);
        (void)w; /* a full pipe already wakes the hub */
    }
}

/* Marks s cut off (once), with a log line. Called with s->mu held. */
static void mark_cut(struct ev_sub *s)
{
    if (s->cut)
        return;
    s->cut = 1;
    atomic_store(&s->end, END_SLOW);
    atomic_fetch_add(&hub.cut, 1);
    json_t *line =
        json_pack("{s:s, s:s, s:s, s:I, s:I}", "msg", "event stream cut off: slow consumer",
                  "request_id", s->request_id, "principal", s->principal, "cursor",
                  (json_int_t)s->cursor, "ring_floor", (json_int_t)hub.floor);
    log_json_steal(LOG_WARN, line);
}

static int sub_matches(const struct ev_sub *s, const struct ev_ent *e)
{
    if (s->f.types != 0 && (e->type < 0 || !(s->f.types & (1u << e->type))))
        return 0;
    if (s->f.pool_id[0] != '\0' && strcmp(s->f.pool_id, e->pool) != 0)
        return 0;
    if (s->f.host_id[0] != '\0' && strcmp(s->f.host_id, e->host) != 0)
        return 0;
    return 1;
}

static struct ev_ent *ring_at(size_t i)
{
    return &hub.ents[(hub.head + i) % hub.cap];
}

/* Index of the first ring entry with an id greater than cursor (hub.count when none).
 * Called with ring_lock held, or by the hub thread (the ring's only writer). */
static size_t ring_after(int64_t cursor)
{
    size_t lo = 0, hi = hub.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring_at(mid)->id <= cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Copies ring frames after s->cursor that match into buf[n..max). Called with s->mu held
 * and pend empty. Sets *want_backlog when the cursor is older than the ring. */
static size_t copy_ring(struct ev_sub *s, char *buf, size_t max, size_t n, int *want_backlog)
{
    pthread_rwlock_rdlock(&hub.ring_lock);
    if (s->cursor < hub.floor) {
        if (s->live)
            mark_cut(s);
        else
            *want_backlog = 1;
        goto done;
    }
    s->live = 1;
    for (size_t i = ring_after(s->cursor); i < hub.count && n < max; i++) {
        const struct ev_ent *e = ring_at(i);
        if (!sub_matches(s, e)) {
            s->cursor = e->id;
            continue;
        }
        if (e->len > max - n) {
            if (n > 0)
                break;
            /* A frame larger than MHD's buffer: send a part, keep the rest. */
            memcpy(buf, e->frame, max);
            if (pend_add(s, e->frame + max, e->len - max) != 0)
                break;
            n = max;
        } else {
            memcpy(buf + n, e->frame, e->len);
            n += e->len;
        }
        s->cursor = e->id;
        atomic_fetch_add(&s->sent, 1);
        atomic_fetch_add(&hub.delivered, 1);
    }
done:
    pthread_rwlock_unlock(&hub.ring_lock);
    return n;
}

ssize_t ev_sub_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct ev_sub *s = cls;
    pthread_mutex_lock(&s->mu);
    size_t n = pend_drain(s, buf, max);
    if (n == max)
        goto out;
    if (s->ending)
        goto out; /* everything is sent: end */
    if (atomic_load(&hub.ending)) {
        atomic_store(&s->end, END_SHUTDOWN);
        s->ending = 1;
        goto out;
    }
    if (s->hb) {
        s->hb = 0;
        pend_add(s, HEARTBEAT_FRAME, strlen(HEARTBEAT_FRAME));
        n += pend_drain(s, buf + n, max - n);
    }
    if (!s->cut && !s->need_backlog && n < max) {
        int want = 0;
        n = copy_ring(s, buf, max, n, &want);
        if (want) {
            s->need_backlog = 1;
            atomic_store(&hub.backlog_wanted, 1);
            kick();
        }
    }
    if (s->cut && !s->ending) {
        /* No id: a client that reconnects with its Last-Event-ID resumes from the log. */
        pend_add(s, SLOW_FRAME, strlen(SLOW_FRAME));
        s->ending = 1;
        n += pend_drain(s, buf + n, max - n);
    }
out:
    if (n > 0) {
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->ending) {
        pthread_mutex_unlock(&s->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    /* Nothing to send: park the connection until the hub resumes it. */
    s->suspended = 1;
    MHD_suspend_connection(s->conn);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Resumes s if it is parked. Called with s->mu held. */
static void resume_locked(struct ev_sub *s)
{
    if (s->suspended && !atomic_load(&s->closed)) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    }
}

struct ev_sub *ev_sub_open(struct MHD_Connection *conn, const struct ev_filter *f, int64_t after,
                           const char *request_id, const char *principal)
{
    if (!hub.running || !atomic_load(&hub.ready) || atomic_load(&hub.ending))
        return NULL;
    struct ev_sub *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->refs, 2);
    s->conn = conn;
    s->f = *f;
    snprintf(s->request_id, sizeof s->request_id, "%s", request_id);
    snprintf(s->principal, sizeof s->principal, "%s", principal);
    pthread_rwlock_rdlock(&hub.ring_lock);
    s->cursor = after >= 0 ? after : hub.last;
    pthread_rwlock_unlock(&hub.ring_lock);
    if (pend_add(s, RETRY_FRAME, strlen(RETRY_FRAME)) != 0)
        goto fail;
    pthread_mutex_lock(&hub.subs_mu);
    if (hub.nsubs == hub.subs_cap) {
        size_t cap = hub.subs_cap ? hub.subs_cap * 2 : 64;
        struct ev_sub **ns = realloc(hub.subs, cap * sizeof *ns);
        if (ns == NULL) {
            pthread_mutex_unlock(&hub.subs_mu);
            goto fail;
        }
        hub.subs = ns;
        hub.subs_cap = cap;
    }
    s->idx = hub.nsubs;
    hub.subs[hub.nsubs++] = s;
    pthread_mutex_unlock(&hub.subs_mu);
    return s;
fail:
    pthread_mutex_destroy(&s->mu);
    free(s->pend);
    free(s);
    return NULL;
}

void ev_sub_release(void *cls)
{
    struct ev_sub *s = cls;
    atomic_store(&s->closed, 1);
    pthread_mutex_lock(&hub.subs_mu);
    if (s->idx < hub.nsubs && hub.subs[s->idx] == s) {
        hub.subs[s->idx] = hub.subs[--hub.nsubs];
        hub.subs[s->idx]->idx = s->idx;
    }
    pthread_mutex_unlock(&hub.subs_mu);
    sub_unref(s);
}

void ev_sub_done(void *cls, json_t *line)
{
    struct ev_sub *s = cls;
    if (line != NULL) {
        json_object_set_new(line, "events_sent", json_integer((json_int_t)atomic_load(&s->sent)));
        json_object_set_new(line, "stream_end", json_string(end_names[atomic_load(&s->end)]));
    }
    sub_unref(s);
}

/* A referenced copy of the registry (hub thread only); release with snap_release. */
static size_t snap_take(void)
{
    pthread_mutex_lock(&hub.subs_mu);
    if (hub.nsubs > hub.snap_cap) {
        struct ev_sub **ns = realloc(hub.snap, hub.nsubs * sizeof *ns);
        if (ns == NULL) {
            pthread_mutex_unlock(&hub.subs_mu);
            return 0;
        }
        hub.snap = ns;
        hub.snap_cap = hub.nsubs;
    }
    size_t n = hub.nsubs;
    for (size_t i = 0; i < n; i++) {
        hub.snap[i] = hub.subs[i];
        atomic_fetch_add(&hub.snap[i]->refs, 1);
    }
    pthread_mutex_unlock(&hub.subs_mu);
    return n;
}

static void snap_release(size_t n)
{
    for (size_t i = 0; i < n; i++)
        sub_unref(hub.snap[i]);
}

/* Wakes the subscribers that have something to do: new events, a cut, a heartbeat. */
static void wake_subs(int heartbeat)
{
    size_t n = snap_take();
    for (size_t i = 0; i < n; i++) {
        struct ev_sub *s = hub.snap[i];
        pthread_mutex_lock(&s->mu);
        if (heartbeat)
            s->hb = 1;
        /* Behind the ring: a parked stream had sent everything it had, so it keeps up and
         * only a burst outran it: it reads the rest from the log. A stream that is not
         * parked is still writing what it had: its client is too slow. */
        if (s->live && s->cursor < hub.floor) {
            if (s->suspended)
                s->live = 0;
            else
                mark_cut(s);
        }
        /* A parked stream whose filter selects none of the new events just moves on:
         * no wake-up, and a burst of other events never makes it a slow consumer. */
        if (s->live && s->suspended && !s->cut && !s->need_backlog && s->cursor < hub.last) {
            size_t k = ring_after(s->cursor);
            while (k < hub.count && !sub_matches(s, ring_at(k)))
                k++;
            if (k == hub.count)
                s->cursor = hub.last;
        }
        if (heartbeat || s->cut || (!s->need_backlog && s->cursor < hub.last))
            resume_locked(s);
        pthread_mutex_unlock(&s->mu);
    }
    snap_release(n);
}

/* ---- the ring (written by the hub thread only) ---- */

/* Appends one SSE frame for row to b. */
static void render_frame(struct sbuf *b, const struct db_event_row *row)
{
    size_t start = b->len;
    sbuf_printf(b, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)row->id, row->type, row->doc);
    if (b->failed)
        return;
    /* One line of data: PostgreSQL escapes control characters in JSON text; a stray line
     * break would split the frame, so it cannot stay. (The type matches a CHECK pattern.) */
    char *data = b->p + b->len - 2 - strlen(row->doc);
    for (char *p = data; p < b->p + b->len - 2 && p >= b->p + start; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static int ring_append(const struct db_event_row *row)
{
    struct sbuf b;
    sbuf_init(&b, strlen(row->doc) + 64);
    render_frame(&b, row);
    size_t w;
    char *frame = sbuf_take(&b, &w);
    if (frame == NULL)
        return -1;
    while (hub.count > 0 && (hub.count == hub.cap || hub.bytes + w > RING_MAX_BYTES)) {
        struct ev_ent *old = ring_at(0);
        hub.floor = old->id;
        hub.bytes -= old->len;
        free(old->frame);
        old->frame = NULL;
        hub.head = (hub.head + 1) % hub.cap;
        hub.count--;
    }
    struct ev_ent *e = ring_at(hub.count);
    e->id = row->id;
    e->type = ev_type_index(row->type);
    snprintf(e->pool, sizeof e->pool, "%s", row->pool_id);
    snprintf(e->host, sizeof e->host, "%s", row->host_id);
    e->frame = frame;
    e->len = w;
    hub.count++;
    hub.bytes += w;
    hub.last = row->id;
    return 0;
}

struct fetch_arg {
    int64_t after;
    struct db_event_rows ev;
};

/* Events read per query: FETCH_LIMIT, and never more than half the ring, so that one read
 * cannot outrun the streams by itself. */
static int fetch_limit(void)
{
    size_t half = hub.cap / 2;
    return half < FETCH_LIMIT ? (int)(half > 0 ? half : 1) : FETCH_LIMIT;
}

static enum db_status fetch_fn(struct db_conn *c, void *arg)
{
    struct fetch_arg *a = arg;
    return db_events_after(c, a->after, fetch_limit(), &a->ev);
}

/* Reads up to FETCH_LIMIT new events into the ring, in id order, holding back past a
 * missing id for up to EV_GAP_WAIT_US. *more is set when more are waiting (the caller
 * wakes the streams first, so that a burst does not overrun them at once). Returns how
 * many were appended, or -1 on a database error. */
static int fetch_new(int *more)
{
    *more = 0;
    struct fetch_arg a = {hub.last, {0}};
    if (db_run(fetch_fn, &a) < 0)
        return -1;
    int rows = a.ev.n, taken = 0, held = 0;
    pthread_rwlock_wrlock(&hub.ring_lock);
    for (int i = 0; i < rows; i++) {
        const struct db_event_row *row = &a.ev.rows[i];
        if (row->id != hub.last + 1) {
            int64_t now = util_mono_us();
            if (hub.gap_since == 0)
                hub.gap_since = now;
            if (now - hub.gap_since < EV_GAP_WAIT_US) {
                held = 1;
                break;
            }
            log_msg(LOG_INFO, "events: ids %lld to %lld never committed; skipped",
                    (long long)hub.last + 1, (long long)row->id - 1);
        }
        hub.gap_since = 0;
        if (ring_append(row) != 0) {
            held = 1; /* out of memory: try again later */
            break;
        }
        taken++;
    }
    pthread_rwlock_unlock(&hub.ring_lock);
    db_event_rows_free(&a.ev);
    *more = !held && rows == fetch_limit();
    return taken;
}

/* ---- backlogs ---- */

struct backlog_arg {
    int64_t after, upto;
    const char *types, *pool, *host;
    struct db_event_rows ev;
};

static enum db_status backlog_fn(struct db_conn *c, void *arg)
{
    struct backlog_arg *a = arg;
    return db_events_backlog(c, a->after, a->upto, a->types, a->pool, a->host, BACKLOG_LIMIT,
                             &a->ev);
}

/* "{host.state,job.state}" for a type mask (every name is a known, plain word). */
static void types_literal(uint32_t mask, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "{");
    for (int i = 0; i < ev_ntypes; i++)
        if (mask & (1u << i))
            used += (size_t)snprintf(out + used, len - used, "%s%s", used > 1 ? "," : "",
                                     ev_type_names[i]);
    snprintf(out + used, len - used, "}");
}

/* Loads one chunk of backlog for every subscriber that waits for one. Returns -1 when the
 * database failed (the subscribers keep waiting). */
static int serve_backlogs(void)
{
    if (!atomic_exchange(&hub.backlog_wanted, 0))
        return 0;
    int rc = 0;
    size_t n = snap_take();
    for (size_t i = 0; i < n; i++) {
        struct ev_sub *s = hub.snap[i];
        pthread_mutex_lock(&s->mu);
        int want = s->need_backlog && !atomic_load(&s->closed);
        int64_t after = s->cursor;
        struct ev_filter f = s->f;
        pthread_mutex_unlock(&s->mu);
        if (!want)
            continue;
        int64_t upto = hub.floor;
        struct sbuf b;
        sbuf_init(&b, 4096);
        int rows = 0;
        if (after < upto) {
            char types[512];
            types_literal(f.types, types, sizeof types);
            struct backlog_arg a = {after,
                                    upto,
                                    f.types ? types : NULL,
                                    f.pool_id[0] ? f.pool_id : NULL,
                                    f.host_id[0] ? f.host_id : NULL,
                                    {0}};
            if (db_run(backlog_fn, &a) < 0) {
                free(sbuf_take(&b, NULL));
                rc = -1;
                continue;
            }
            rows = a.ev.n;
            for (int k = 0; k < rows; k++) {
                render_frame(&b, &a.ev.rows[k]);
                if (k == rows - 1 && rows == BACKLOG_LIMIT)
                    upto = a.ev.rows[k].id; /* more to come */
            }
            db_event_rows_free(&a.ev);
        }
        size_t len;
        char *text = sbuf_take(&b, &len);
        pthread_mutex_lock(&s->mu);
        if (text != NULL && (len == 0 || pend_add(s, text, len) == 0)) {
            if (upto > s->cursor)
                s->cursor = upto;
            s->need_backlog = 0;
            atomic_fetch_add(&s->sent, (uint_fast64_t)rows);
            atomic_fetch_add(&hub.delivered, (uint_fast64_t)rows);
            resume_locked(s);
        } else {
            rc = -1;
        }
        pthread_mutex_unlock(&s->mu);
        free(text);
    }
    snap_release(n);
    if (rc < 0)
        atomic_store(&hub.backlog_wanted, 1);
    return rc;
}

/* ---- housekeeping ---- */

static enum db_status max_fn(struct db_conn *c, void *arg)
{
    return db_events_max_id(c, arg);
}

struct flush_arg {
    long throttle_s, emitted;
};

static enum db_status flush_fn(struct db_conn *c, void *arg)
{
    struct flush_arg *a = arg;
    return db_events_ingest_flush(c, a->throttle_s, &a->emitted);
}

struct prune_arg {
    long retention_s, deleted;
};

static enum db_status prune_fn(struct db_conn *c, void *arg)
{
    struct prune_arg *a = arg;
    return db_events_prune(c, a->retention_s, PRUNE_BATCH, &a->deleted);
}

static enum db_status prune_tickets_fn(struct db_conn *c, void *arg)
{
    return db_event_tickets_prune(c, arg);
}

static void prune(void)
{
    long total = 0;
    for (int i = 0; i < PRUNE_BATCHES; i++) {
        struct prune_arg a = {hub.cfg.retention_s, 0};
        if (db_run(prune_fn, &a) < 0)
            break;
        total += a.deleted;
        if (a.deleted < PRUNE_BATCH)
            break;
    }
    long tickets = 0;
    db_run(prune_tickets_fn, &tickets);
    if (total > 0 || tickets > 0)
        log_msg(LOG_INFO, "events: pruned %ld events older than %ld s and %ld expired tickets",
                total, hub.cfg.retention_s, tickets);
}

static void *hub_main(void *arg)
{
    (void)arg;
    struct db_listener *l = db_listen(hub.url, "gpufleet_events");
    int64_t hb_every = (int64_t)hub.cfg.heartbeat_s * 1000000;
    int64_t next_hb = util_mono_us() + hb_every, next_prune = 0;
    int more = 0;
    while (!atomic_load(&hub.stopping)) {
        if (!atomic_load(&hub.ready)) {
            int64_t max = 0;
            if (db_run(max_fn, &max) >= 0) {
                pthread_rwlock_wrlock(&hub.ring_lock);
                hub.floor = hub.last = max;
                pthread_rwlock_unlock(&hub.ring_lock);
                atomic_store(&hub.ready, 1);
                log_msg(LOG_INFO, "events: hub following the event log from id %lld",
                        (long long)max);
            }
        }
        int64_t now = util_mono_us();
        int timeout = more ? 5 : POLL_MS; /* a burst: let the streams read, then go on */
        if (hub.gap_since != 0) {
            int64_t left = (hub.gap_since + EV_GAP_WAIT_US - now) / 1000 + 1;
            if (left < timeout)
                timeout = left < 1 ? 1 : (int)left;
        }
        int64_t hb_left = next_hb - now;
        int hb_ms = hb_left <= 0 ? 0 : (int)(hb_left / 1000 + 1);
        if (hb_ms < timeout)
            timeout = hb_ms;
        struct pollfd pf[2] = {{hub.wake[0], POLLIN, 0}, {l ? db_listener_fd(l) : -1, POLLIN, 0}};
        if (poll(pf, 2, timeout) < 0 && errno != EINTR)
            usleep(100 * 1000);
        if (pf[0].revents & POLLIN) {
            char buf[256];
            while (read(hub.wake[0], buf, sizeof buf) > 0)
                ;
        }
        if (atomic_load(&hub.stopping))
            break;
        if (l != NULL)
            db_listener_drain(l); /* reconnects when the connection was lost */
        if (!atomic_load(&hub.ready))
            continue;
        struct flush_arg fa = {hub.cfg.ingest_throttle_s, 0};
        db_run(flush_fn, &fa);
        if (fetch_new(&more) > 0)
            wake_subs(0);
        serve_backlogs();
        now = util_mono_us();
        if (now >= next_hb) {
            wake_subs(1);
            next_hb = now + hb_every;
        }
        if (now >= next_prune) {
            prune();
            next_prune = now + PRUNE_EVERY_US;
        }
    }
    db_listener_free(l);
    return NULL;
}

int ev_hub_start(const struct ev_hub_config *cfg)
{
    if (hub.running)
        return 0;
    hub.cfg = *cfg;
    hub.url = strdup(cfg->database_url);
    hub.cap = (size_t)(cfg->ring_events > 0 ? cfg->ring_events : 4096);
    hub.ents = calloc(hub.cap, sizeof *hub.ents);
    if (hub.url == NULL || hub.ents == NULL || pipe(hub.wake) != 0)
        goto fail;
    for (int i = 0; i < 2; i++)
        fcntl(hub.wake[i], F_SETFL, fcntl(hub.wake[i], F_GETFL) | O_NONBLOCK);
    atomic_store(&hub.stopping, 0);
    atomic_store(&hub.ending, 0);
    if (pthread_create(&hub.thread, NULL, hub_main, NULL) != 0)
        goto fail;
    hub.running = 1;
    return 0;
fail:
    free(hub.url);
    free(hub.ents);
    hub.url = NULL;
    hub.ents = NULL;
    for (int i = 0; i < 2; i++)
        if (hub.wake[i] >= 0)
            close(hub.wake[i]);
    hub.wake[0] = hub.wake[1] = -1;
    return -1;
}

void ev_hub_end_streams(int wait_ms)
{
    if (!hub.running)
        return;
    atomic_store(&hub.ending, 1);
    /* Whoever parks after this sees the flag; whoever parked before is resumed here. */
    pthread_mutex_lock(&hub.subs_mu);
    for (size_t i = 0; i < hub.nsubs; i++)
        atomic_fetch_add(&hub.subs[i]->refs, 1);
    size_t n = hub.nsubs;
    struct ev_sub **all = n ? malloc(n * sizeof *all) : NULL;
    if (all != NULL)
        memcpy(all, hub.subs, n * sizeof *all);
    pthread_mutex_unlock(&hub.subs_mu);
    if (all == NULL && n > 0) {
        log_msg(LOG_ERROR, "events: out of memory while ending %zu streams", n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&all[i]->mu);
        resume_locked(all[i]);
        pthread_mutex_unlock(&all[i]->mu);
        sub_unref(all[i]);
    }
    free(all);
    /* Let the readers run and end their streams; a client that does not read keeps its
     * connection (not suspended) until MHD closes it. */
    for (int waited = 0; waited < wait_ms; waited += 20) {
        pthread_mutex_lock(&hub.subs_mu);
        size_t left = hub.nsubs;
        pthread_mutex_unlock(&hub.subs_mu);
        if (left == 0)
            break;
        usleep(20 * 1000);
    }
}

void ev_hub_stop(void)
{
    if (!hub.running)
        return;
    atomic_store(&hub.stopping, 1);
    kick();
    pthread_join(hub.thread, NULL);
    hub.running = 0;
    atomic_store(&hub.ready, 0);
    for (size_t i = 0; i < hub.count; i++)
        free(ring_at(i)->frame);
    free(hub.ents);
    hub.ents = NULL;
    hub.count = hub.head = hub.bytes = 0;
    free(hub.url);
    hub.url = NULL;
    free(hub.snap);
    hub.snap = NULL;
    hub.snap_cap = 0;
    pthread_mutex_lock(&hub.subs_mu);
    free(hub.subs); /* empty: the HTTP daemon, stopped first, released every stream */
    hub.subs = NULL;
    hub.nsubs = hub.subs_cap = 0;
    pthread_mutex_unlock(&hub.subs_mu);
    close(hub.wake[0]);
    close(hub.wake[1]);
    hub.wake[0] = hub.wake[1] = -1;
}

void ev_hub_metrics(struct sbuf *b)
{
    pthread_mutex_lock(&hub.subs_mu);
    size_t n = hub.nsubs;
    pthread_mutex_unlock(&hub.subs_mu);
    sbuf_printf(b,
                "# HELP gpufleet_event_streams Open event streams (GET /v1/events).\n"
                "# TYPE gpufleet_event_streams gauge\ngpufleet_event_streams %zu\n"
                "# HELP gpufleet_events_delivered_total Events written to event streams.\n"
                "# TYPE gpufleet_events_delivered_total counter\n"
                "gpufleet_events_delivered_total %llu\n"
                "# HELP gpufleet_event_streams_cut_total Event streams cut off because the "
                "client fell behind the ring (slow consumer).\n"
                "# TYPE gpufleet_event_streams_cut_total counter\n"
                "gpufleet_event_streams_cut_total %llu\n",
                n, (unsigned long long)atomic_load(&hub.delivered),
                (unsigned long long)atomic_load(&hub.cut));
}
