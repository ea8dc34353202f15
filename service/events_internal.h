/* events_internal.h — what the two halves of the event hub share. Not a public API:
 * for service/events_hub.c (the hub thread and the ring it writes) and
 * service/events_sub.c (the subscribers, which read the ring) only.
 *
 * Locks: the subscriber registry's mutex is never held while taking a subscriber's lock
 * (the hub thread works on a referenced snapshot); a subscriber's lock may be held while
 * taking ev_ring.lock (read) and while calling its park/wake ops. Nothing that a
 * transport may call with its own locks held (ev_sub_close, ev_sub_unref, the figures)
 * takes a subscriber's lock. */
#ifndef GPUFLEET_SERVICE_EVENTS_INTERNAL_H
#define GPUFLEET_SERVICE_EVENTS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"
#include "db/events.h"
#include "service/events_hub.h"

/* ---- the ring (events_hub.c) ---- */

struct ev_ent {
    int64_t id;
    int type; /* index in ev_type_names, -1 when unknown */
    char pool[37], host[37];
    char *frame;
    size_t len;
};

/* Every delivered event with an id > floor, oldest first. Written by the hub thread only,
 * under lock (write); subscribers read it under lock (read); the hub thread reads it
 * without. */
struct ev_ring {
    pthread_rwlock_t lock;
    struct ev_ent *ents;
    size_t cap, head, count, bytes;
    int64_t floor, last;
};
extern struct ev_ring ev_ring;

/* Entry i (0: the oldest). */
struct ev_ent *ev_ring_at(size_t i);
/* Index of the first entry with an id greater than cursor (ev_ring.count when none).
 * Called with ev_ring.lock held, or by the hub thread. */
size_t ev_ring_after(int64_t cursor);
/* Appends one SSE frame for row to b. */
void ev_render_frame(struct sbuf *b, const struct db_event_row *row);

/* ---- the hub thread (events_hub.c), for the subscribers ---- */

/* The thread runs and knows its position in the event log: subscribers may open. */
int ev_hub_ready(void);
int ev_hub_running(void);
/* Wakes the hub thread (a subscriber wants a backlog). */
void ev_hub_kick(void);

/* ---- the subscribers (events_sub.c), for the hub thread ---- */

/* Wakes the subscribers that have something to do: new events, a cut, a heartbeat. */
void ev_subs_wake(int heartbeat);
/* Loads one chunk of backlog for every subscriber that waits for one. Returns -1 when the
 * database failed (the subscribers keep waiting). */
int ev_subs_serve_backlogs(void);
/* Forgets the (closed) subscribers and accepts new ones again (ev_hub_stop). */
void ev_subs_clear(void);

#endif
