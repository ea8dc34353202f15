/* events_ring.c — the event hub's ring: every recent event rendered once in the wire
 * format (struct ev_wire), with what the subscribers filter it by, and the known event
 * types. Written by the hub thread (events_hub.c), read by the subscribers
 * (events_sub.c); see events_internal.h. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "db/events.h"
#include "service/events_hub.h"
#include "service/events_internal.h"

#define RING_MAX_BYTES ((size_t)8 << 20) /* frames held at most, whatever the count */

const char *const ev_type_names[] = {
#define EVENT_TYPE(name) name,
#include "db/event_types.def"
#undef EVENT_TYPE
};
const int ev_ntypes = (int)(sizeof ev_type_names / sizeof ev_type_names[0]);
_Static_assert(sizeof ev_type_names / sizeof ev_type_names[0] <= 32,
               "the stream's type filter is one bit per type in a uint32_t");

int ev_type_index(const char *name)
{
    for (int i = 0; i < ev_ntypes; i++)
        if (strcmp(ev_type_names[i], name) == 0)
            return i;
    return -1;
}

struct ev_ring ev_ring = {.lock = PTHREAD_RWLOCK_INITIALIZER};

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ev_project_parse(const char *text, struct ev_project *p)
{
    int n = 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-')
                return -1;
            continue;
        }
        int hi = hexval(text[i]), lo = hi < 0 ? -1 : hexval(text[++i]);
        if (lo < 0)
            return -1;
        p->b[n++] = (unsigned char)(hi << 4 | lo);
    }
    return text[36] == '\0' ? 0 : -1;
}

int ev_ring_alloc(size_t cap, const struct ev_wire *wire)
{
    ev_ring.cap = cap;
    ev_ring.wire = wire;
    ev_ring.ents = calloc(cap, sizeof *ev_ring.ents);
    return ev_ring.ents != NULL ? 0 : -1;
}

void ev_ring_free(void)
{
    atomic_store(&ev_ring.ready, 0);
    for (size_t i = 0; i < ev_ring.count; i++)
        free(ev_ring_at(i)->frame);
    free(ev_ring.ents);
    ev_ring.ents = NULL;
    ev_ring.count = ev_ring.head = ev_ring.bytes = 0;
}

void ev_ring_set_position(int64_t max)
{
    pthread_rwlock_wrlock(&ev_ring.lock);
    ev_ring.floor = ev_ring.last = max;
    pthread_rwlock_unlock(&ev_ring.lock);
    atomic_store(&ev_ring.ready, 1);
}

int ev_ring_ready(void)
{
    return atomic_load(&ev_ring.ready);
}

struct ev_ent *ev_ring_at(size_t i)
{
    return &ev_ring.ents[(ev_ring.head + i) % ev_ring.cap];
}

size_t ev_ring_after(int64_t cursor)
{
    size_t lo = 0, hi = ev_ring.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev_ring_at(mid)->id <= cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void ev_ring_render(struct sbuf *b, const struct db_event_row *row)
{
    ev_ring.wire->event(b, row);
}

int ev_ring_append(const struct db_event_row *row)
{
    struct sbuf b;
    sbuf_init(&b, strlen(row->doc) + 64);
    ev_ring_render(&b, row);
    size_t w;
    char *frame = sbuf_take(&b, &w);
    if (frame == NULL)
        return -1;
    while (ev_ring.count > 0 &&
           (ev_ring.count == ev_ring.cap || ev_ring.bytes + w > RING_MAX_BYTES)) {
        struct ev_ent *old = ev_ring_at(0);
        ev_ring.floor = old->id;
        ev_ring.bytes -= old->len;
        free(old->frame);
        old->frame = NULL;
        ev_ring.head = (ev_ring.head + 1) % ev_ring.cap;
        ev_ring.count--;
    }
    struct ev_ent *e = ev_ring_at(ev_ring.count);
    e->id = row->id;
    e->type = ev_type_index(row->type);
    snprintf(e->pool, sizeof e->pool, "%s", row->pool_id);
    snprintf(e->host, sizeof e->host, "%s", row->host_id);
    e->has_project = ev_project_parse(row->project_id, &e->project) == 0;
    e->frame = frame;
    e->len = w;
    ev_ring.count++;
    ev_ring.bytes += w;
    ev_ring.last = row->id;
    return 0;
}
