/* events_hub.h — the event hub: one thread per replica that follows the events table
 * (LISTEN gpufleet_events, with a 1 s poll as fallback), renders each event once as an
 * SSE frame into a bounded in-memory ring, and wakes the streams. Streams (GET /v1/events)
 * are subscribers: each keeps a cursor into the ring and pulls frames from its MHD
 * content-reader callback; with nothing to send it suspends its connection, so an idle
 * stream holds no MHD thread. A subscriber resuming from an id older than the ring gets
 * the backlog from the database first (loaded by the hub, in bounded chunks). When the
 * ring overtakes a subscriber's cursor, a parked one (it had sent everything) reads the
 * rest from the database the same way; one that is still writing is cut off: its client
 * does not keep up (slow consumer).
 *
 * Delivery is in id order without gaps: ids are taken from a sequence and may commit
 * out of order, so the hub waits up to EV_GAP_WAIT_US for a missing id before it skips
 * it (a rolled-back transaction leaves a hole forever). */
#ifndef GPUFLEET_API_EVENTS_HUB_H
#define GPUFLEET_API_EVENTS_HUB_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/sbuf.h"

#define EV_GAP_WAIT_US 1000000LL

/* The known event types; the types filter accepts exactly these. */
extern const char *const ev_type_names[];
extern const int ev_ntypes;
/* Index in ev_type_names, or -1. */
int ev_type_index(const char *name);

struct ev_hub_config {
    const char *database_url;
    int heartbeat_s;        /* ": heartbeat" comment period */
    int ring_events;        /* ring capacity in events (bytes are capped too) */
    long retention_s;       /* events older than this are deleted */
    long ingest_throttle_s; /* work_reports.ingested: at most one per pool per this */
};
/* Starts the hub thread. Returns 0, or -1 when it cannot start. */
int ev_hub_start(const struct ev_hub_config *cfg);
/* Ends every stream cleanly (each reader returns end-of-stream) and waits up to wait_ms
 * for them to finish; no connection stays suspended afterwards. Call before
 * MHD_stop_daemon. New streams are refused from then on. */
void ev_hub_end_streams(int wait_ms);
/* Stops the thread (after the HTTP daemon is stopped). */
void ev_hub_stop(void);

struct ev_filter {
    uint32_t types;                /* bit per ev_type_names index; 0: every type */
    char pool_id[37], host_id[37]; /* lowercase UUID, or "" for any */
};

struct ev_sub;
/* Registers a stream. after: deliver events with a greater id (a client's Last-Event-ID),
 * or -1 for events from now on. request_id and principal are copied (for the log).
 * Returns NULL when the hub does not know the current position yet (database
 * unreachable since start) or streams are ending. The subscriber holds two references:
 * one for the MHD response (ev_sub_release as its free callback) and one for the request
 * (ev_sub_done). */
struct ev_sub *ev_sub_open(struct MHD_Connection *conn, const struct ev_filter *f, int64_t after,
                           const char *request_id, const char *principal);
/* MHD_ContentReaderCallback; cls is the subscriber. */
ssize_t ev_sub_read(void *cls, uint64_t pos, char *buf, size_t max);
/* MHD_ContentReaderFreeCallback: the stream's connection is done with it. */
void ev_sub_release(void *cls);
/* The request ended: adds the stream's figures to its access-log line (line may be
 * NULL) and drops the request's reference. */
void ev_sub_done(void *cls, json_t *line);

/* gpufleet_event_streams, gpufleet_events_delivered_total, gpufleet_event_streams_cut_total. */
void ev_hub_metrics(struct sbuf *b);

#endif
