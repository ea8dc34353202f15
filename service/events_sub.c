/* events_sub.c — the event hub's subscribers: the registry, each subscriber's cursor into
 * the ring and its pending bytes, reading, parking and waking, backlogs, the end of
 * streams and their figures. See events_hub.h; the locks are in events_internal.h.
 *
 * Each subscriber's mu guards its cursor, buffer and flags; subs.mu guards the registry. */
#include "service/events_hub.h"

#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "db/db.h"
#include "db/events.h"
#include "service/events_internal.h"
#include "service/tokens.h"

#define BACKLOG_LIMIT 256 /* backlog events loaded per subscriber per turn */

enum ev_end { END_CLIENT = 0, END_SLOW, END_SHUTDOWN, END_EXPIRED, END_REVOKED };
static const char *const end_names[] = {"client", "slow_consumer", "shutdown", "token_expired",
                                        "token_revoked"};

struct ev_sub {
    pthread_mutex_t mu;
    atomic_int refs;
    atomic_int closed; /* ev_sub_close ran: ops and ctx are gone */
    atomic_uint_fast64_t sent;
    atomic_int end;
    const struct ev_sub_ops *ops;
    void *ctx;
    struct ev_filter f; /* f.projects points to projects_text (or is NULL) */
    char *projects_text;
    int nprojects; /* -1: every event (f.projects NULL) */
    struct ev_project projects[EV_MAX_PROJECTS];
    int64_t cursor;   /* the last event id examined */
    int fd;           /* the transport's socket (polled for room), or -1 */
    int64_t read_us;  /* when the transport last asked for bytes (util_mono_us) */
    int live;         /* reads from the ring (0: from the database until it catches up) */
    int suspended;    /* it is parked */
    int need_backlog; /* waits for the hub to load events after cursor from the database */
    int hb;           /* a heartbeat is due */
    int cut;          /* slow consumer: send the error frame, then end */
    int cred_end;     /* END_EXPIRED or END_REVOKED: send that frame, then end */
    int ending;       /* the last frame is queued: end once pend is drained */
    char *pend;       /* bytes to send before anything else */
    size_t pend_len, pend_off, pend_cap;
    size_t idx; /* position in the registry */
    char request_id[129];
    struct ev_cred cred;
};

static struct {
    pthread_mutex_t mu;
    struct ev_sub **all;
    size_t n, cap;
    struct ev_sub **snap; /* hub thread only */
    size_t snap_cap;
    atomic_int ending; /* streams are being ended (shutdown) */
    atomic_int backlog_wanted;
    void (*kick)(void); /* wakes the hub thread (ev_subs_open) */
    atomic_uint_fast64_t delivered, cut;
} subs = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- references, buffer ---- */

void ev_sub_hold(struct ev_sub *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void ev_sub_unref(struct ev_sub *s)
{
    if (atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->pend);
    free(s->projects_text);
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

/* Queues a fixed frame and copies what fits into buf[n..max); returns the new n. */
static size_t pend_frame(struct ev_sub *s, const char *frame, char *buf, size_t n, size_t max)
{
    pend_add(s, frame, strlen(frame));
    return n + pend_drain(s, buf + n, max - n);
}

/* ---- reading ---- */

/* Marks s cut off (once), with a log line. Called with s->mu held. */
static void mark_cut(struct ev_sub *s)
{
    if (s->cut)
        return;
    s->cut = 1;
    atomic_store(&s->end, END_SLOW);
    atomic_fetch_add(&subs.cut, 1);
    json_t *line =
        json_pack("{s:s, s:s, s:s, s:I, s:I}", "msg", "event stream cut off: slow consumer",
                  "request_id", s->request_id, "principal", s->cred.sub, "cursor",
                  (json_int_t)s->cursor, "ring_floor", (json_int_t)ev_ring.floor);
    log_json_steal(LOG_WARN, line);
}

/* Whether e is of one of s's projects (every event when s has no project set). */
static int in_projects(const struct ev_sub *s, const struct ev_ent *e)
{
    if (s->nprojects < 0)
        return 1;
    if (!e->has_project)
        return 0;
    for (int i = 0; i < s->nprojects; i++)
        if (memcmp(s->projects[i].b, e->project.b, sizeof e->project.b) == 0)
            return 1;
    return 0;
}

static int sub_matches(const struct ev_sub *s, const struct ev_ent *e)
{
    if (s->f.types != 0 && (e->type < 0 || !(s->f.types & (1u << e->type))))
        return 0;
    if (!in_projects(s, e))
        return 0;
    if (s->f.pool_id[0] != '\0' && strcmp(s->f.pool_id, e->pool) != 0)
        return 0;
    if (s->f.host_id[0] != '\0' && strcmp(s->f.host_id, e->host) != 0)
        return 0;
    return 1;
}

/* Copies ring frames after s->cursor that match into buf[n..max). Called with s->mu held
 * and pend empty. Sets *want_backlog when the cursor is older than the ring. */
static size_t copy_ring(struct ev_sub *s, char *buf, size_t max, size_t n, int *want_backlog)
{
    pthread_rwlock_rdlock(&ev_ring.lock);
    if (s->cursor < ev_ring.floor) {
        /* Overtaken, yet its transport asks for bytes: it takes them, so it reads the
         * rest from the database (a client that took nothing is cut in ev_subs_wake). */
        s->live = 0;
        *want_backlog = 1;
        goto done;
    }
    s->live = 1;
    for (size_t i = ev_ring_after(s->cursor); i < ev_ring.count && n < max; i++) {
        const struct ev_ent *e = ev_ring_at(i);
        if (!sub_matches(s, e)) {
            s->cursor = e->id;
            continue;
        }
        if (e->len > max - n) {
            if (n > 0)
                break;
            /* A frame larger than the caller's buffer: send a part, keep the rest. */
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
        atomic_fetch_add(&subs.delivered, 1);
    }
done:
    pthread_rwlock_unlock(&ev_ring.lock);
    return n;
}

ssize_t ev_sub_read(struct ev_sub *s, char *buf, size_t max)
{
    pthread_mutex_lock(&s->mu);
    s->read_us = util_mono_us();
    size_t n = pend_drain(s, buf, max);
    if (n == max)
        goto out;
    if (s->ending)
        goto out; /* everything is sent: end */
    if (atomic_load(&subs.ending)) {
        atomic_store(&s->end, END_SHUTDOWN);
        s->ending = 1;
        goto out;
    }
    if (s->hb) {
        s->hb = 0;
        n = pend_frame(s, ev_ring.wire->heartbeat, buf, n, max);
    }
    if (!s->cut && !s->cred_end && !s->need_backlog && n < max) {
        int want = 0;
        n = copy_ring(s, buf, max, n, &want);
        if (want) {
            s->need_backlog = 1;
            atomic_store(&subs.backlog_wanted, 1);
            if (subs.kick != NULL)
                subs.kick();
        }
    }
    if (s->cred_end && !s->ending) {
        /* No id either: a client that reconnects needs a valid token, then resumes. */
        n = pend_frame(s,
                       s->cred_end == END_EXPIRED ? ev_ring.wire->expired : ev_ring.wire->revoked,
                       buf, n, max);
        s->ending = 1;
    }
    if (s->cut && !s->ending) {
        /* No id: a client that reconnects with its Last-Event-ID resumes from the log. */
        n = pend_frame(s, ev_ring.wire->cut, buf, n, max);
        s->ending = 1;
    }
out:
    if (n > 0) {
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->ending) {
        pthread_mutex_unlock(&s->mu);
        return EV_SUB_END;
    }
    /* Nothing to send: park until the hub wakes s. */
    s->suspended = 1;
    s->ops->park(s->ctx);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Wakes s if it is parked. Called with s->mu held. */
static void wake_locked(struct ev_sub *s)
{
    if (s->suspended && !atomic_load(&s->closed)) {
        s->suspended = 0;
        s->ops->wake(s->ctx);
    }
}

/* ---- the registry ---- */

/* Takes f->projects (a uuid[] literal, or NULL: every event) into s. Returns 0, or -1 when
 * it is not such a literal or names more than EV_MAX_PROJECTS projects. */
static int sub_projects(struct ev_sub *s, const char *text)
{
    s->nprojects = -1;
    s->f.projects = NULL;
    if (text == NULL)
        return 0;
    size_t len = strlen(text);
    if (len < 2 || text[0] != '{' || text[len - 1] != '}')
        return -1;
    s->projects_text = strdup(text);
    if (s->projects_text == NULL)
        return -1;
    s->f.projects = s->projects_text;
    s->nprojects = 0;
    for (const char *p = text + 1; *p != '}';) {
        char id[37];
        size_t n = strcspn(p, ",}");
        if (n != 36 || s->nprojects == EV_MAX_PROJECTS)
            return -1;
        memcpy(id, p, 36);
        id[36] = '\0';
        if (ev_project_parse(id, &s->projects[s->nprojects++]) != 0)
            return -1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

struct ev_sub *ev_sub_open(const struct ev_filter *f, int64_t after, int fd, const char *request_id,
                           const struct ev_cred *cred, const struct ev_sub_ops *ops, void *ctx)
{
    if (!ev_ring_ready() || atomic_load(&subs.ending))
        return NULL;
    struct ev_sub *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->refs, 1);
    s->ops = ops;
    s->ctx = ctx;
    s->fd = fd;
    s->read_us = util_mono_us();
    s->f = *f;
    if (sub_projects(s, f->projects) != 0)
        goto fail;
    snprintf(s->request_id, sizeof s->request_id, "%s", request_id);
    s->cred = *cred;
    pthread_rwlock_rdlock(&ev_ring.lock);
    s->cursor = after >= 0 ? after : ev_ring.last;
    pthread_rwlock_unlock(&ev_ring.lock);
    if (pend_add(s, ev_ring.wire->open, strlen(ev_ring.wire->open)) != 0)
        goto fail;
    pthread_mutex_lock(&subs.mu);
    if (subs.n == subs.cap) {
        size_t cap = subs.cap ? subs.cap * 2 : 64;
        struct ev_sub **ns = realloc(subs.all, cap * sizeof *ns);
        if (ns == NULL) {
            pthread_mutex_unlock(&subs.mu);
            goto fail;
        }
        subs.all = ns;
        subs.cap = cap;
    }
    s->idx = subs.n;
    subs.all[subs.n++] = s;
    pthread_mutex_unlock(&subs.mu);
    return s;
fail:
    pthread_mutex_destroy(&s->mu);
    free(s->pend);
    free(s->projects_text);
    free(s);
    return NULL;
}

void ev_sub_close(struct ev_sub *s)
{
    atomic_store(&s->closed, 1);
    pthread_mutex_lock(&subs.mu);
    if (s->idx < subs.n && subs.all[s->idx] == s) {
        subs.all[s->idx] = subs.all[--subs.n];
        subs.all[s->idx]->idx = s->idx;
    }
    pthread_mutex_unlock(&subs.mu);
}

uint64_t ev_sub_sent(const struct ev_sub *s)
{
    return (uint64_t)atomic_load(&s->sent);
}

const char *ev_sub_end_reason(const struct ev_sub *s)
{
    return end_names[atomic_load(&s->end)];
}

/* A referenced copy of the registry (hub thread only); release with snap_release. */
static size_t snap_take(void)
{
    pthread_mutex_lock(&subs.mu);
    if (subs.n > subs.snap_cap) {
        struct ev_sub **ns = realloc(subs.snap, subs.n * sizeof *ns);
        if (ns == NULL) {
            pthread_mutex_unlock(&subs.mu);
            return 0;
        }
        subs.snap = ns;
        subs.snap_cap = subs.n;
    }
    size_t n = subs.n;
    for (size_t i = 0; i < n; i++) {
        subs.snap[i] = subs.all[i];
        ev_sub_hold(subs.snap[i]);
    }
    pthread_mutex_unlock(&subs.mu);
    return n;
}

static void snap_release(size_t n)
{
    for (size_t i = 0; i < n; i++)
        ev_sub_unref(subs.snap[i]);
}

void ev_subs_open(void (*kick)(void))
{
    subs.kick = kick;
    atomic_store(&subs.ending, 0);
}

void ev_subs_clear(void)
{
    free(subs.snap);
    subs.snap = NULL;
    subs.snap_cap = 0;
    pthread_mutex_lock(&subs.mu);
    free(subs.all); /* empty: the HTTP daemon, stopped first, closed every subscriber */
    subs.all = NULL;
    subs.n = subs.cap = 0;
    pthread_mutex_unlock(&subs.mu);
    subs.kick = NULL;
}

/* ---- the hub thread's turns ---- */

/* Whether s's client has taken nothing for EV_SLOW_AFTER_US: its transport has not asked
 * for bytes that long and its socket has no room (poll, no wait). A socket that cannot be
 * polled (none, closed) counts as having none. Called with s->mu held. */
static int client_stalled(const struct ev_sub *s, int64_t now)
{
    if (now - s->read_us < EV_SLOW_AFTER_US)
        return 0;
    if (s->fd < 0)
        return 1;
    struct pollfd pf = {s->fd, POLLOUT, 0};
    int rc = poll(&pf, 1, 0);
    return !(rc == 1 && (pf.revents & (POLLOUT | POLLNVAL | POLLERR | POLLHUP)) == POLLOUT);
}

void ev_subs_wake(int heartbeat)
{
    int64_t now = util_mono_us();
    size_t n = snap_take();
    for (size_t i = 0; i < n; i++) {
        struct ev_sub *s = subs.snap[i];
        pthread_mutex_lock(&s->mu);
        if (heartbeat)
            s->hb = 1;
        /* Behind the ring, it reads the rest from the log, unless its client takes
         * nothing: a stream still writing (not parked) whose socket has had no room for
         * EV_SLOW_AFTER_US is cut off. A parked stream had sent everything, and one woken
         * but not yet served (a busy server) is behind through no fault of its client. */
        if (s->cursor < ev_ring.floor && !s->cut) {
            if (!s->suspended && client_stalled(s, now))
                mark_cut(s);
            else
                s->live = 0;
        }
        /* A parked stream whose filter selects none of the new events just moves on:
         * no wake-up, and a burst of other events never makes it a slow consumer. */
        if (s->live && s->suspended && !s->cut && !s->need_backlog && s->cursor < ev_ring.last) {
            size_t k = ev_ring_after(s->cursor);
            while (k < ev_ring.count && !sub_matches(s, ev_ring_at(k)))
                k++;
            if (k == ev_ring.count)
                s->cursor = ev_ring.last;
        }
        if (heartbeat || s->cut || (!s->need_backlog && s->cursor < ev_ring.last))
            wake_locked(s);
        pthread_mutex_unlock(&s->mu);
    }
    snap_release(n);
}

void ev_subs_check_creds(void)
{
    int64_t now = (int64_t)time(NULL);
    size_t n = snap_take();
    for (size_t i = 0; i < n; i++) {
        struct ev_sub *s = subs.snap[i];
        pthread_mutex_lock(&s->mu);
        if (!s->cred_end && !s->ending) {
            /* At exp itself (a request's check allows 60 s for clock skew, api/auth.h;
             * the stream ends on the verifying machine's clock). */
            if (s->cred.exp <= now)
                s->cred_end = END_EXPIRED;
            else if (svc_token_revoked(s->cred.jti, s->cred.sub, s->cred.iat) == 1)
                s->cred_end = END_REVOKED;
            if (s->cred_end) {
                atomic_store(&s->end, s->cred_end);
                log_json_steal(LOG_INFO,
                               json_pack("{s:s, s:s, s:s, s:s}", "msg", "event stream ended",
                                         "reason", end_names[s->cred_end], "request_id",
                                         s->request_id, "principal", s->cred.sub));
                wake_locked(s);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    snap_release(n);
}

struct backlog_arg {
    int64_t after, upto;
    const char *types, *pool, *host, *projects;
    struct db_event_rows ev;
};

static enum db_status backlog_fn(struct db_conn *c, void *arg)
{
    struct backlog_arg *a = arg;
    return db_events_backlog(c, a->after, a->upto, a->types, a->pool, a->host, a->projects,
                             BACKLOG_LIMIT, &a->ev);
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

/* Renders into b the next chunk of f's events after after, up to *upto (lowered to the
 * last one rendered when the chunk is full). *rows: how many. Returns -1 when the
 * database failed. */
static int load_backlog(int64_t after, int64_t *upto, const struct ev_filter *f, struct sbuf *b,
                        int *rows)
{
    *rows = 0;
    if (after >= *upto)
        return 0;
    char types[512];
    types_literal(f->types, types, sizeof types);
    struct backlog_arg a = {after,
                            *upto,
                            f->types ? types : NULL,
                            f->pool_id[0] ? f->pool_id : NULL,
                            f->host_id[0] ? f->host_id : NULL,
                            f->projects,
                            {0}};
    if (db_run(backlog_fn, &a) < 0)
        return -1;
    *rows = a.ev.n;
    for (int k = 0; k < a.ev.n; k++) {
        ev_ring_render(b, &a.ev.rows[k]);
        if (k == a.ev.n - 1 && a.ev.n == BACKLOG_LIMIT)
            *upto = a.ev.rows[k].id; /* more to come */
    }
    db_event_rows_free(&a.ev);
    return 0;
}

int ev_subs_serve_backlogs(void)
{
    if (!atomic_exchange(&subs.backlog_wanted, 0))
        return 0;
    int rc = 0;
    size_t n = snap_take();
    for (size_t i = 0; i < n; i++) {
        struct ev_sub *s = subs.snap[i];
        pthread_mutex_lock(&s->mu);
        int want = s->need_backlog && !atomic_load(&s->closed);
        int64_t after = s->cursor;
        struct ev_filter f = s->f;
        pthread_mutex_unlock(&s->mu);
        if (!want)
            continue;
        int64_t upto = ev_ring.floor;
        struct sbuf b;
        sbuf_init(&b, 4096);
        int rows;
        if (load_backlog(after, &upto, &f, &b, &rows) != 0) {
            free(sbuf_take(&b, NULL));
            rc = -1;
            continue;
        }
        size_t len;
        char *text = sbuf_take(&b, &len);
        pthread_mutex_lock(&s->mu);
        if (text != NULL && (len == 0 || pend_add(s, text, len) == 0)) {
            if (upto > s->cursor)
                s->cursor = upto;
            s->need_backlog = 0;
            atomic_fetch_add(&s->sent, (uint_fast64_t)rows);
            atomic_fetch_add(&subs.delivered, (uint_fast64_t)rows);
            wake_locked(s);
        } else {
            rc = -1;
        }
        pthread_mutex_unlock(&s->mu);
        free(text);
    }
    snap_release(n);
    if (rc < 0)
        atomic_store(&subs.backlog_wanted, 1);
    return rc;
}

/* ---- the end, figures ---- */

void ev_subs_end(int wait_ms)
{
    atomic_store(&subs.ending, 1);
    /* Whoever parks after this sees the flag; whoever parked before is woken here. */
    pthread_mutex_lock(&subs.mu);
    for (size_t i = 0; i < subs.n; i++)
        ev_sub_hold(subs.all[i]);
    size_t n = subs.n;
    struct ev_sub **all = n ? malloc(n * sizeof *all) : NULL;
    if (all != NULL)
        memcpy(all, subs.all, n * sizeof *all);
    pthread_mutex_unlock(&subs.mu);
    if (all == NULL && n > 0) {
        log_msg(LOG_ERROR, "events: out of memory while ending %zu streams", n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&all[i]->mu);
        wake_locked(all[i]);
        pthread_mutex_unlock(&all[i]->mu);
        ev_sub_unref(all[i]);
    }
    free(all);
    /* Let the readers run and end their streams; a client that does not read keeps its
     * connection (not parked) until its transport closes it. */
    for (int waited = 0; waited < wait_ms; waited += 20) {
        pthread_mutex_lock(&subs.mu);
        size_t left = subs.n;
        pthread_mutex_unlock(&subs.mu);
        if (left == 0)
            break;
        usleep(20 * 1000);
    }
}

void ev_hub_metrics(struct sbuf *b)
{
    pthread_mutex_lock(&subs.mu);
    size_t n = subs.n;
    pthread_mutex_unlock(&subs.mu);
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
                n, (unsigned long long)atomic_load(&subs.delivered),
                (unsigned long long)atomic_load(&subs.cut));
}
