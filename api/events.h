/* events.h — GET /v1/events (Server-Sent Events) and POST /v1/event-tickets.
 *
 * A stream is authenticated by Authorization: Bearer, or — for browsers' EventSource,
 * which cannot send headers — by ?ticket=: a random, single-use ticket that lives
 * GPUFLEET_EVENT_TICKET_TTL_SECONDS, minted for the caller by POST /v1/event-tickets and
 * stored only as its SHA-256, so any replica can redeem it. A JWT is never accepted in
 * the URL. The stream is a subscriber of the event hub (service/events_hub.h); this file
 * plugs it into MHD: the content reader, suspending and resuming the connection, and the
 * stream's figures in the access log. */
#ifndef GPUFLEET_API_EVENTS_H
#define GPUFLEET_API_EVENTS_H

#include "api/http.h"

void api_events_configure(int ticket_ttl_s);

enum MHD_Result api_events_stream(struct api_req *r);
enum MHD_Result api_event_tickets_create(struct api_req *r);

/* For routes flagged ROUTE_TICKET, before bearer authentication: refuses a token in the
 * query string (400) and redeems ?ticket= when there is no Authorization header.
 * Returns 1 when r is now authenticated (principal set), 0 when bearer authentication
 * applies, -1 after queueing a reply. */
int api_ticket_authenticate(struct api_req *r);

#endif
