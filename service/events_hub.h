/* events_hub.h — the event hub: one thread per replica that follows the events table
 * (LISTEN gpufleet_events, with a 1 s poll as fallback), renders each event once in the
 * wire format its transport gave (struct ev_wire; api/sse.c: Server-Sent Events) into a
 * bounded in-memory ring, and wakes the subscribers. It knows no HTTP and no SSE:
 * a stream (GET /v1/events, api/events.c) is a subscriber that keeps a cursor into the
 * ring and pulls frames with ev_sub_read; with nothing to send the subscriber is parked
 * (its transport stops asking, e.g. the connection is suspended, so an idle stream holds
 * no HTTP thread) until the hub wakes it through the ops the transport supplied.
 *
 * A subscriber resuming from an id older than the ring gets the backlog from the database
 * first (loaded by the hub, in bounded chunks). When the ring overtakes a subscriber's
 * cursor, it reads the rest from the database the same way, unless its client has stopped
 * taking bytes: its socket has accepted nothing for EV_SLOW_AFTER_US (the send buffer is
 * full and the transport has not asked for more). Such a stream is cut off (slow
 * consumer). Being behind is not enough: a stream woken by a burst but not yet scheduled
 * on a busy server is behind through no fault of its client.
 *
 * Delivery is in id order without gaps: ids are taken from a sequence and may commit
 * out of order, so the hub waits up to EV_GAP_WAIT_US for a missing id before it skips
 * it (a rolled-back transaction leaves a hole forever). */
#ifndef GPUFLEET_SERVICE_EVENTS_HUB_H
#define GPUFLEET_SERVICE_EVENTS_HUB_H

#include <stdint.h>
#include <sys/types.h>

#include "common/sbuf.h"

#define EV_GAP_WAIT_US   1000000LL
#define EV_SLOW_AFTER_US 1000000LL /* a client that takes nothing this long, behind: cut */
#define EV_MAX_PROJECTS  64        /* projects in a subscriber's set */

/* The known event types; the types filter accepts exactly these. */
extern const char *const ev_type_names[];
extern const int ev_ntypes;
/* Index in ev_type_names, or -1. */
int ev_type_index(const char *name);

struct db_event_row;

/* How events and the stream's own frames look on the wire (api/sse.c). The hub renders
 * each event once, for every subscriber. */
struct ev_wire {
    /* Appends the frame of one event to b. */
    void (*event)(struct sbuf *b, const struct db_event_row *row);
    const char *open;      /* the first bytes of every stream */
    const char *heartbeat; /* sent every heartbeat_s to every stream */
    const char *cut;       /* the last frame of a stream cut off as a slow consumer */
    const char *expired;   /* the last frame of a stream whose token expired */
    const char *revoked;   /* the last frame of a stream whose token was revoked */
};

struct ev_hub_config {
    const char *database_url;
    int heartbeat_s;        /* heartbeat period */
    int ring_events;        /* ring capacity in events (bytes are capped too) */
    long retention_s;       /* events older than this are deleted */
    long ingest_throttle_s; /* work_reports.ingested: at most one per pool per this */
    const struct ev_wire *wire;
};
/* Starts the hub thread. Returns 0, or -1 when it cannot start. */
int ev_hub_start(const struct ev_hub_config *cfg);
/* Ends every stream cleanly (each subscriber's next read reports the end) and waits up
 * to wait_ms for their transports to close them (ev_sub_close); no subscriber stays
 * parked afterwards. Call before stopping the HTTP daemon. New subscribers are refused
 * from then on. */
void ev_hub_end_streams(int wait_ms);
/* Stops the thread (after the HTTP daemon is stopped: every subscriber is closed). */
void ev_hub_stop(void);

struct ev_filter {
    uint32_t types;                /* bit per ev_type_names index; 0: every type */
    char pool_id[37], host_id[37]; /* lowercase UUID, or "" for any */
    /* The projects whose events the subscriber may see: a uuid[] literal ("{a,b}", "{}"
     * for none), or NULL for every event, the platform's own (no project) included (a
     * platform admin). ev_sub_open copies it. Each subscriber skips the events outside its
     * set: the hub still renders every event once. */
    const char *projects;
};

/* How the hub parks and wakes a subscriber's transport. Both are called with the
 * subscriber's lock held, so a wake never overtakes the park it answers; they must not
 * call back into the hub. ctx is the one given to ev_sub_open. */
struct ev_sub_ops {
    void (*park)(void *ctx); /* nothing to send: stop reading until wake */
    void (*wake)(void *ctx); /* something to send (or the end): read again */
};

#define EV_SUB_END ((ssize_t)-1)

/* The credential a stream was opened with: the stream ends (its last frame the wire's
 * expired or revoked) once exp has passed or the token is revoked (service/tokens.h). The
 * hub checks every stream about once a second. */
struct ev_cred {
    int64_t exp;   /* Unix seconds */
    int64_t iat;   /* INT64_MIN when the token has none */
    char jti[129]; /* "" when none */
    char sub[129];
};

struct ev_sub;
/* Registers a subscriber. after: deliver events with a greater id (a client's
 * Last-Event-ID), or -1 for events from now on. fd: the transport's socket, polled (never
 * read or written) to tell a client that takes nothing (no room to send) from one the
 * server has not served yet; -1 when there is none (the room is then taken as gone). request_id and
 * cred are copied (the subject names the stream in the log). Returns NULL when the hub does not
 * know the current position yet (database unreachable since start), streams are ending, or
 * f->projects is not a uuid[] literal of at most EV_MAX_PROJECTS ids. The subscriber comes with one
 * reference, the caller's (ev_sub_unref); ev_sub_hold adds one. */
struct ev_sub *ev_sub_open(const struct ev_filter *f, int64_t after, int fd, const char *request_id,
                           const struct ev_cred *cred, const struct ev_sub_ops *ops, void *ctx);
/* Copies up to max bytes of frames into buf and returns how many. 0: nothing to send
 * now; ops->park was called and ops->wake will be. EV_SUB_END: the stream is over
 * (ended by ev_hub_end_streams, or cut off after its error frame). */
ssize_t ev_sub_read(struct ev_sub *s, char *buf, size_t max);
/* The transport is done with s: s leaves the registry and is woken no more. Only once s
 * is not parked (an HTTP server does not close a suspended connection before it resumes;
 * ev_hub_end_streams wakes them all before shutdown). Takes no subscriber lock (safe from
 * callbacks that hold the transport's locks); drops no reference. */
void ev_sub_close(struct ev_sub *s);
void ev_sub_hold(struct ev_sub *s);
void ev_sub_unref(struct ev_sub *s);
/* For the access log: events delivered, and why the stream ended ("client",
 * "slow_consumer", "shutdown", "token_expired", "token_revoked"). */
uint64_t ev_sub_sent(const struct ev_sub *s);
const char *ev_sub_end_reason(const struct ev_sub *s);

/* gpufleet_event_streams, gpufleet_events_delivered_total, gpufleet_event_streams_cut_total. */
void ev_hub_metrics(struct sbuf *b);

#endif
