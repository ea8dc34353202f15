/* SSH engine, the loop (see ssh_internal.h): one epoll set, one deadline heap and one
 * kick list for all conns; an iteration drives only the conns with a socket event, a
 * deadline reached or a kick. */
#include "provisioner/ssh/ssh_internal.h"

#include <errno.h>
#include <unistd.h>

static int64_t conn_next_deadline(const struct prov_ssh_conn *c)
{
    int64_t d = 0;
    if (c->deadline_us && c->st != CS_READY && c->st != CS_FAILED)
        d = c->deadline_us;
    if (c->st == CS_READY) {
        if (c->ex_head == NULL && c->keepalive_us && (!d || c->keepalive_us < d))
            d = c->keepalive_us;
        for (const struct exec *e = c->ex_head; e; e = e->next) {
            int64_t x = 0;
            if (!e->cb_fired)
                x = e->deadline_us;
            else if (e->st == EX_FREE && !e->abandoned)
                x = e->free_deadline_us;
            if (x && (!d || x < d))
                d = x;
        }
    }
    return d;
}

/* The epoll events a conn waits for now: 0 when it waits for nothing on its socket (an
 * idle ready session, a failed one). */
static uint32_t conn_interest(const struct prov_ssh_conn *c)
{
    switch (c->st) {
    case CS_CONNECTING: return EPOLLOUT;
    case CS_HANDSHAKE:
    case CS_AUTH:
    case CS_CLOSE_CHANNELS:
    case CS_DISCONNECT: break;
    case CS_READY:
        if (!c->ex_head)
            return 0; /* idle: nothing to read for */
        break;
    default: return 0;
    }
    int d = c->sess ? libssh2_session_block_directions(c->sess) : 0;
    uint32_t ev = 0;
    if (d & LIBSSH2_SESSION_BLOCK_INBOUND)
        ev |= EPOLLIN;
    if (d & LIBSSH2_SESSION_BLOCK_OUTBOUND)
        ev |= EPOLLOUT;
    return ev ? ev : EPOLLIN;
}

/* ------------------------------------------------------- loop bookkeeping */

/* Keeps the epoll set's entry for c equal to what c waits for now. */
static void conn_watch(struct prov_ssh_conn *c)
{
    uint32_t ev = c->fd >= 0 ? conn_interest(c) : 0;
    if (c->reg_fd >= 0 && (c->reg_fd != c->fd || ev == 0))
        prov_ssh_conn_unwatch(c);
    if (ev == 0 || (c->reg_fd == c->fd && c->reg_ev == ev))
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    int op = c->reg_fd == c->fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int rc = epoll_ctl(c->loop->ep, op, c->fd, &e);
    if (rc != 0 && op == EPOLL_CTL_ADD && errno == EEXIST)
        rc = epoll_ctl(c->loop->ep, EPOLL_CTL_MOD, c->fd, &e);
    c->loop->stats.interest_changes++;
    if (rc != 0) { /* not watched (out of kernel memory): driven every iteration instead */
        epoll_ctl(c->loop->ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->reg_fd = -1;
        c->reg_ev = 0;
        prov_ssh_conn_kick(c);
        return;
    }
    c->reg_fd = c->fd;
    c->reg_ev = ev;
}

/* Puts c in the heap under its deadline d (0: none). Out of memory: the conn is kicked
 * instead, so that it is looked at on every iteration until the heap has room. */
static void heap_set(struct prov_ssh_loop *l, struct prov_ssh_conn *c, int64_t d)
{
    if (dheap_set(&l->heap, &c->due, d) != 0)
        prov_ssh_conn_kick(c);
}

/* After a conn was driven: its socket interest, its deadline, and whether it is gone. */
static void conn_sync(struct prov_ssh_conn *c)
{
    struct prov_ssh_loop *l = c->loop;
    if (c->st == CS_GONE) {
        prov_ssh_conn_unwatch(c);
        dheap_remove(&l->heap, &c->due);
        if (!c->gone_counted) {
            c->gone_counted = 1;
            l->gone++;
        }
        return;
    }
    if (c->st == CS_TEARDOWN)
        prov_ssh_conn_kick(c);
    conn_watch(c);
    heap_set(l, c, conn_next_deadline(c));
}

/* ------------------------------------------------------- public API */

struct prov_ssh_loop *prov_ssh_loop_new(void)
{
    struct prov_ssh_loop *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) {
        free(l);
        return NULL;
    }
    return l;
}

int prov_ssh_loop_wake_on(struct prov_ssh_loop *l, int fd)
{
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &e) == 0)
        return 0;
    return errno == EEXIST && epoll_ctl(l->ep, EPOLL_CTL_MOD, fd, &e) == 0 ? 0 : -1;
}

void prov_ssh_loop_stats(const struct prov_ssh_loop *l, struct prov_ssh_loop_stats *out)
{
    *out = l->stats;
}

/* Frees the conns that are gone (none on the kick list: they are dropped from it first). */
static void loop_sweep(struct prov_ssh_loop *l)
{
    struct prov_ssh_conn **pp = &l->head, *last = NULL;
    while (*pp) {
        struct prov_ssh_conn *c = *pp;
        if (c->st == CS_GONE && !c->kick) {
            *pp = c->next;
            l->count--;
            l->gone--;
            prov_ssh_conn_free(c);
        } else {
            last = c;
            pp = &c->next;
        }
    }
    l->tail = last;
}

static void turn_stats(struct prov_ssh_loop *l, const struct prov_ssh_conn *c)
{
    if (c->turn_bytes > l->stats.max_turn_bytes)
        l->stats.max_turn_bytes = c->turn_bytes;
    l->stats.budget_yields += c->turn_spent != 0;
}

int prov_ssh_loop_run_once(struct prov_ssh_loop *l, int max_wait_ms)
{
    int64_t t = now_us();
    int wait = max_wait_ms < 0 ? 0 : max_wait_ms;
    if (l->kick_head != NULL)
        wait = 0;
    else if (dheap_top(&l->heap) != NULL) {
        int64_t ms = (dheap_top(&l->heap)->due - t + 999) / 1000;
        if (ms < wait)
            wait = ms < 0 ? 0 : (int)ms;
    }
    int n = epoll_wait(l->ep, l->evs, LOOP_EVENTS, wait);
    l->stats.wakeups++;
    for (int i = 0; i < n; i++)
        if (l->evs[i].data.ptr != NULL) /* NULL: a prov_ssh_loop_wake_on() fd */
            prov_ssh_conn_kick(l->evs[i].data.ptr);
    t = now_us();
    struct dheap_node *top;
    while ((top = dheap_pop_due(&l->heap, t)) != NULL)
        prov_ssh_conn_kick(DHEAP_OWNER(top, struct prov_ssh_conn, due));
    /* the conns kicked so far; those a callback kicks meanwhile wait for the next call
     * (which then does not wait) */
    struct prov_ssh_conn *due = l->kick_head;
    l->kick_head = NULL;
    while (due != NULL) {
        struct prov_ssh_conn *c = due;
        due = c->kick_next;
        c->kick_next = NULL;
        c->kick = 0;
        l->stats.drives++;
        prov_ssh_conn_drive(c);
        turn_stats(l, c);
        if (prov_ssh_conn_check_timeouts(c, now_us())) {
            prov_ssh_conn_drive(c);
            turn_stats(l, c);
        }
        conn_sync(c);
    }
    if (l->gone > 0)
        loop_sweep(l);
    return l->count;
}

void prov_ssh_loop_free(struct prov_ssh_loop *l)
{
    if (!l)
        return;
    for (struct prov_ssh_conn *c = l->head; c; c = c->next)
        prov_ssh_close(c);
    int64_t end = now_us() + (int64_t)(CLOSE_GRACE_MS + 100) * 1000;
    while (l->head && now_us() < end)
        prov_ssh_loop_run_once(l, 50);
    while (l->head) {
        struct prov_ssh_conn *c = l->head;
        l->head = c->next;
        prov_ssh_conn_free(c);
    }
    dheap_free(&l->heap);
    close(l->ep);
    free(l);
}
