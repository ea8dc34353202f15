/* test_events_sub.c — when the event ring overtakes a stream (service/events_sub.c): a
 * stream that a burst woke but the server has not served yet (a busy server) reads the rest
 * from the log, and so does one whose socket has room; a stream whose client has taken
 * nothing for EV_SLOW_AFTER_US (its socket is full, or there is none) is cut off as a slow
 * consumer. The sockets are real (socketpair); the ring and the subscribers are the
 * server's own; no database is reached (the backlog is only asked for). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "service/events_internal.h"
#include "tests/unit/unit.h"

static void wire_event(struct sbuf *b, const struct db_event_row *row)
{
    sbuf_printf(b, "id: %lld\n\n", (long long)row->id);
}

static const struct ev_wire wire = {wire_event,         ":open\n\n",          ":hb\n\n",
                                    "event: error\n\n", "event: expired\n\n", "event: revoked\n\n"};

static int parks, wakes, kicks;
static void park(void *ctx)
{
    (void)ctx;
    parks++;
}
static void wake(void *ctx)
{
    (void)ctx;
    wakes++;
}
static void kick(void)
{
    kicks++;
}
static const struct ev_sub_ops ops = {park, wake};

/* Appends events up to id last (the hub's part). */
static void append_upto(int64_t last)
{
    pthread_rwlock_wrlock(&ev_ring.lock);
    for (int64_t id = ev_ring.last + 1; id <= last; id++) {
        struct db_event_row row = {id, "host.state", "", "", "", "{}"};
        ev_ring_append(&row);
    }
    pthread_rwlock_unlock(&ev_ring.lock);
}

/* Opens a stream on fd and reads until it parks (everything sent). */
static struct ev_sub *open_parked(int fd)
{
    struct ev_filter f;
    memset(&f, 0, sizeof f);
    struct ev_cred cred = {INT64_MAX / 2, INT64_MIN, "", "unit"};
    struct ev_sub *s = ev_sub_open(&f, -1, fd, "req", &cred, &ops, NULL);
    if (s == NULL)
        return NULL;
    char buf[4096];
    while (ev_sub_read(s, buf, sizeof buf) > 0)
        ;
    return s;
}

/* Fills fd's send side until the kernel takes no more. */
static void fill(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    static char junk[65536];
    while (write(fd, junk, sizeof junk) > 0)
        ;
}

static void overtaken(void)
{
    parks = wakes = kicks = 0;
    CHECK(ev_ring_alloc(8, &wire) == 0);
    ev_ring_set_position(100);
    ev_subs_open(kick);
    int room[2], full[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, room) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, full) == 0);
    fill(full[0]);
    struct ev_sub *a = open_parked(room[0]); /* a client that takes what comes */
    struct ev_sub *b = open_parked(full[0]); /* a client that takes nothing */
    struct ev_sub *c = open_parked(-1);      /* no socket to ask */
    struct ev_sub *d = open_parked(full[0]); /* parked: it had sent everything */
    CHECK(a && b && c && d && parks == 4);
    /* A burst: the hub wakes a, b and c; the server serves none of them yet (d is read
     * and parks again). */
    append_upto(104);
    ev_subs_wake(0);
    CHECK(wakes == 4);
    char buf[4096];
    CHECK(ev_sub_read(d, buf, sizeof buf) > 0);
    CHECK(ev_sub_read(d, buf, sizeof buf) == 0);
    /* The burst goes on past the ring (8 events) while they wait: too soon to judge. */
    append_upto(120);
    ev_subs_wake(0);
    CHECK(ev_sub_read(d, buf, sizeof buf) == 0); /* d asks for the backlog and parks */
    CHECK_STR(ev_sub_end_reason(a), "client");
    CHECK_STR(ev_sub_end_reason(b), "client");
    CHECK_STR(ev_sub_end_reason(c), "client");
    /* A second later, still unserved: a has room, b's socket is full, c has none. */
    usleep((useconds_t)(EV_SLOW_AFTER_US + 100000));
    append_upto(121);
    ev_subs_wake(0);
    CHECK_STR(ev_sub_end_reason(a), "client");
    CHECK_STR(ev_sub_end_reason(b), "slow_consumer");
    CHECK_STR(ev_sub_end_reason(c), "slow_consumer");
    CHECK_STR(ev_sub_end_reason(d), "client");
    /* a reads: it asks for the backlog (the hub loads it from the log), no error frame. */
    int k = kicks;
    CHECK(ev_sub_read(a, buf, sizeof buf) == 0);
    CHECK(kicks == k + 1);
    /* b reads what it had, then the error frame, then the end. */
    ssize_t n = ev_sub_read(b, buf, sizeof buf);
    CHECK(n > 0 && memmem(buf, (size_t)n, "event: error", 12) != NULL);
    CHECK(ev_sub_read(b, buf, sizeof buf) == EV_SUB_END);
    struct ev_sub *all[] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        ev_sub_close(all[i]);
        ev_sub_unref(all[i]);
    }
    for (int i = 0; i < 2; i++) {
        close(room[i]);
        close(full[i]);
    }
    ev_subs_clear();
    ev_ring_free();
}

UNIT_SUITE(events_sub_tests) = {
    {"events: overtaken by a burst, a stream the server has not served yet is not cut; "
     "one whose client took nothing for a second is",
     overtaken},
    UNIT_END,
};
