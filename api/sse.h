/* sse.h — the event stream's wire format: Server-Sent Events (text/event-stream). Each
 * event is one frame "id: N\nevent: TYPE\ndata: JSON\n\n" (the data on one line); a
 * stream opens with the client's reconnection delay ("retry: 3000"), hears a comment
 * (": heartbeat") every heartbeat period, and a slow consumer's stream ends with an
 * "error" event naming slow_consumer (no id: a client that reconnects with its
 * Last-Event-ID resumes from the log); a stream whose token expires or is revoked ends
 * with an "error" event naming token_expired or token_revoked. The event hub (service/events_hub.h)
 * renders with it; the composition root hands it over. */
#ifndef GPUFLEET_API_SSE_H
#define GPUFLEET_API_SSE_H

#include "service/events_hub.h"

extern const struct ev_wire api_sse_wire;

#endif
