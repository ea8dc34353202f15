/* sse.c — see sse.h. */
#include "api/sse.h"

#include <string.h>

#include "common/sbuf.h"
#include "db/events.h"

static void sse_event(struct sbuf *b, const struct db_event_row *row)
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

const struct ev_wire api_sse_wire = {
    .event = sse_event,
    .open = "retry: 3000\n\n",
    .heartbeat = ": heartbeat\n\n",
    .cut = "event: error\ndata: {\"code\":\"slow_consumer\"}\n\n",
    .expired = "event: error\ndata: {\"code\":\"token_expired\"}\n\n",
    .revoked = "event: error\ndata: {\"code\":\"token_revoked\"}\n\n",
};
