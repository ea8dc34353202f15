/* events_internal.h — what the three parts of the event hub share. Not a public API: for
 * service/events_ring.c (the ring of rendered events), service/events_hub.c (the hub
 * thread, which writes the ring) and service/events_sub.c (the subscribers, which read
 * it) only. The hub calls the ring and the subscribers; the subscribers call the ring;
 * the ring calls neither (the subscribers wake the hub through the kick it gave them).
 *
 * Locks: the subscriber registry's mutex is never held while taking a subscriber's lock
 * (the hub thread works on a referenced snapshot); a subscriber's lock may be held while
 * taking ev_ring.lock (read) and while calling its park/wake ops. Nothing that a
 * transport may call with its own locks held (ev_sub_close, ev_sub_unref, the figures)
 * takes a subscriber's lock. */
#ifndef GPUFLEET_SERVICE_EVENTS_INTERNAL_H
#define GPUFLEET_SERVICE_EVENTS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"
#include "db/events.h"
#include "service/events_hub.h"

/* ---- the ring (events_ring.c) ---- */

/* A project id as 16 bytes (compared with memcmp by every subscriber: cheap). */
struct ev_project {
    unsigned char b[16];
};
/* Parses a UUID's text into p. Returns 0, or -1 when it is not one. */
int ev_project_parse(const char *text, struct ev_project *p);

struct ev_ent {
    int64_t id;
    int type; /* index in ev_type_names, -1 when unknown */
    char pool[37], host[37];
    int has_project; /* 0: the platform's own event (platform admins only) */
    struct ev_project project;
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
    atomic_int ready; /* floor and last are the event log's position: subscribers may open */
    const struct ev_wire *wire;
};
extern struct ev_ring ev_ring;

/* Allocates cap entries and takes the wire format. Returns 0, or -1 out of memory. */
int ev_ring_alloc(size_t cap, const struct ev_wire *wire);
/* Frees the entries and forgets the position (hub thread stopped). */
void ev_ring_free(void);
/* The position in the event log is max: the ring starts empty after it (hub thread). */
void ev_ring_set_position(int64_t max);
int ev_ring_ready(void);
/* Renders row and appends it, dropping the oldest entries to make room. Called by the hub
 * thread with ev_ring.lock held (write). Returns 0, or -1 out of memory. */
int ev_ring_append(const struct db_event_row *row);
/* Entry i (0: the oldest). */
struct ev_ent *ev_ring_at(size_t i);
/* Index of the first entry with an id greater than cursor (ev_ring.count when none).
 * Called with ev_ring.lock held, or by the hub thread. */
size_t ev_ring_after(int64_t cursor);
/* Appends the frame of row to b (the wire's event). */
void ev_ring_render(struct sbuf *b, const struct db_event_row *row);

/* ---- the subscribers (events_sub.c), for the hub thread ---- */

/* Accepts subscribers; kick wakes the hub thread (a subscriber wants a backlog). */
void ev_subs_open(void (*kick)(void));
/* Wakes the subscribers that have something to do: new events, a cut, a heartbeat. */
void ev_subs_wake(int heartbeat);
/* Ends the streams whose token has expired or been revoked (about once a second). */
void ev_subs_check_creds(void);
/* Loads one chunk of backlog for every subscriber that waits for one. Returns -1 when the
 * database failed (the subscribers keep waiting). */
int ev_subs_serve_backlogs(void);
/* Ends every stream and waits for the transports to close them (ev_hub_end_streams). */
void ev_subs_end(int wait_ms);
/* Forgets the (closed) subscribers and the kick (ev_hub_stop). */
void ev_subs_clear(void);

#endif
