/* events_hub.c — the event hub's thread: it follows the event log into the ring (gap
 * waiting included), wakes the subscribers (events_sub.c), has their backlogs loaded,
 * and keeps the events table in shape (ingest throttling, retention). See events_hub.h;
 * the locks are in events_internal.h. */
#include "service/events_hub.h"

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
#include "service/events_internal.h"

#define FETCH_LIMIT    1000 /* events read per query */
#define POLL_MS        1000 /* fallback poll when no notification arrives */
#define PRUNE_EVERY_US (60 * 1000000LL)
#define PRUNE_BATCH    5000
#define PRUNE_BATCHES  20

static struct {
    struct ev_hub_config cfg;
    char *url;
    pthread_t thread;
    int running;
    atomic_int stopping;
    int wake[2];
    int64_t gap_since; /* when the hub started waiting for id last + 1 (0: not waiting) */
} hub = {.wake = {-1, -1}};

/* Wakes the hub thread (the subscribers' kick). */
static void hub_kick(void)
{
    if (hub.wake[1] >= 0) {
        char c = 1;
        ssize_t w = write(hub.wake[1], &c, 1);
        (void)w; /* a full pipe already wakes the hub */
    }
}

/* ---- following the log ---- */

struct fetch_arg {
    int64_t after;
    struct db_event_rows ev;
};

/* Events read per query: FETCH_LIMIT, and never more than half the ring, so that one read
 * cannot outrun the streams by itself. */
static int fetch_limit(void)
{
    size_t half = ev_ring.cap / 2;
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
    struct fetch_arg a = {ev_ring.last, {0}};
    if (db_run(fetch_fn, &a) < 0)
        return -1;
    int rows = a.ev.n, taken = 0, held = 0;
    pthread_rwlock_wrlock(&ev_ring.lock);
    for (int i = 0; i < rows; i++) {
        const struct db_event_row *row = &a.ev.rows[i];
        if (row->id != ev_ring.last + 1) {
            int64_t now = util_mono_us();
            if (hub.gap_since == 0)
                hub.gap_since = now;
            if (now - hub.gap_since < EV_GAP_WAIT_US) {
                held = 1;
                break;
            }
            log_msg(LOG_INFO, "events: ids %lld to %lld never committed; skipped",
                    (long long)ev_ring.last + 1, (long long)row->id - 1);
        }
        hub.gap_since = 0;
        if (ev_ring_append(row) != 0) {
            held = 1; /* out of memory: try again later */
            break;
        }
        taken++;
    }
    pthread_rwlock_unlock(&ev_ring.lock);
    db_event_rows_free(&a.ev);
    *more = !held && rows == fetch_limit();
    return taken;
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

/* ---- the thread ---- */

static void *hub_main(void *arg)
{
    (void)arg;
    struct db_listener *l = db_listen(hub.url, "gpufleet_events");
    int64_t hb_every = (int64_t)hub.cfg.heartbeat_s * 1000000;
    int64_t next_hb = util_mono_us() + hb_every, next_prune = 0, next_cred = 0;
    int more = 0;
    while (!atomic_load(&hub.stopping)) {
        if (!ev_ring_ready()) {
            int64_t max = 0;
            if (db_run(max_fn, &max) >= 0) {
                ev_ring_set_position(max);
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
        if (!ev_ring_ready())
            continue;
        struct flush_arg fa = {hub.cfg.ingest_throttle_s, 0};
        db_run(flush_fn, &fa);
        if (fetch_new(&more) > 0)
            ev_subs_wake(0);
        ev_subs_serve_backlogs();
        now = util_mono_us();
        if (now >= next_cred) {
            ev_subs_check_creds();
            next_cred = now + 1000000;
        }
        if (now >= next_hb) {
            ev_subs_wake(1);
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
    size_t cap = (size_t)(cfg->ring_events > 0 ? cfg->ring_events : 4096);
    if (hub.url == NULL || ev_ring_alloc(cap, cfg->wire) != 0 || pipe(hub.wake) != 0)
        goto fail;
    for (int i = 0; i < 2; i++)
        fcntl(hub.wake[i], F_SETFL, fcntl(hub.wake[i], F_GETFL) | O_NONBLOCK);
    atomic_store(&hub.stopping, 0);
    ev_subs_open(hub_kick);
    if (pthread_create(&hub.thread, NULL, hub_main, NULL) != 0)
        goto fail;
    hub.running = 1;
    return 0;
fail:
    free(hub.url);
    hub.url = NULL;
    ev_ring_free();
    ev_subs_clear();
    for (int i = 0; i < 2; i++)
        if (hub.wake[i] >= 0)
            close(hub.wake[i]);
    hub.wake[0] = hub.wake[1] = -1;
    return -1;
}

void ev_hub_end_streams(int wait_ms)
{
    if (hub.running)
        ev_subs_end(wait_ms);
}

void ev_hub_stop(void)
{
    if (!hub.running)
        return;
    atomic_store(&hub.stopping, 1);
    hub_kick();
    pthread_join(hub.thread, NULL);
    hub.running = 0;
    ev_ring_free();
    free(hub.url);
    hub.url = NULL;
    ev_subs_clear();
    close(hub.wake[0]);
    close(hub.wake[1]);
    hub.wake[0] = hub.wake[1] = -1;
}
