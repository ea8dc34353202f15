/* SSH engine, the execs (see ssh_internal.h): one channel per command on a ready conn,
 * their state setter, one function per exec state, the ready state that starts and
 * drives them, their deadlines, the output tails, and prov_ssh_exec. */
#include "provisioner/ssh/ssh_internal.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>

static void tail_add(struct tail *t, const char *p, size_t n)
{
    if (n > TAIL_CAP) { /* only the last TAIL_CAP bytes can survive */
        t->total += n - TAIL_CAP;
        p += n - TAIL_CAP;
        n = TAIL_CAP;
    }
    while (n > 0) {
        size_t pos = t->total % TAIL_CAP;
        size_t k = TAIL_CAP - pos < n ? TAIL_CAP - pos : n;
        memcpy(t->buf + pos, p, k);
        t->total += k;
        p += k;
        n -= k;
    }
}

/* Copies the tail in order into dst (TAIL_CAP + 1 bytes), NUL-terminated. */
static void tail_copy(const struct tail *t, char *dst)
{
    size_t len = t->total < TAIL_CAP ? t->total : TAIL_CAP;
    size_t start = (t->total - len) % TAIL_CAP;
    size_t first = TAIL_CAP - start < len ? TAIL_CAP - start : len;
    memcpy(dst, t->buf + start, first);
    memcpy(dst + first, t->buf, len - first);
    dst[len] = '\0';
}

/* ------------------------------------------------------- state setter */

/* The one place an exec changes state: forwards only, like the conn's. */
static void exec_set_state(struct exec *e, enum exec_state st)
{
    assert(st >= e->st);
    e->st = st;
}

/* ------------------------------------------------------- exec callbacks */

static void exec_fire(struct prov_ssh_conn *c, struct exec *e, enum prov_ssh_err err, int timed_out,
                      const char *msg)
{
    struct prov_ssh_exec_result r;
    char *sig = NULL;

    if (e->cb_fired)
        return;
    e->cb_fired = 1;
    memset(&r, 0, offsetof(struct prov_ssh_exec_result, out_tail));
    r.err = err;
    r.timed_out = timed_out;
    r.exec_sent = e->exec_sent;
    r.exit_status = -1;
    r.exit_signal = NULL;
    if (err == PROV_SSH_OK && e->ch && c->sess) {
        size_t siglen = 0;
        if (libssh2_channel_get_exit_signal(e->ch, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 &&
            sig && siglen > 0)
            r.exit_signal = sig;
        else
            r.exit_status = libssh2_channel_get_exit_status(e->ch);
    }
    tail_copy(&e->out, r.out_tail);
    tail_copy(&e->err, r.err_tail);
    r.out_total = e->out.total;
    r.err_total = e->err.total;
    r.duration_us = e->start_us ? now_us() - e->start_us : 0;
    snprintf(r.message, sizeof r.message, "%s", msg ? msg : "");
    if (e->cb)
        e->cb(c, &r, e->ctx);
    if (sig)
        libssh2_free(c->sess, sig);
}

/* Fires every exec callback not yet fired (a failed or closed session). */
void prov_ssh_execs_fire_all(struct prov_ssh_conn *c, enum prov_ssh_err err, const char *msg)
{
    for (struct exec *e = c->ex_head; e; e = e->next)
        exec_fire(c, e, err, 0, msg);
}

/* ------------------------------------------------------- exec states */

void prov_ssh_exec_arm(struct prov_ssh_conn *c, struct exec *e, int64_t now)
{
    (void)c;
    if (e->deadline_us == 0)
        e->deadline_us = now + (int64_t)e->timeout_ms * 1000;
}

/* Result of one exec state function: like enum step, plus the session-level
 * failure (STEP_ERR with c->fail_* set) vs. an exec-level one (EXS_FAILED,
 * exec already reported). */
enum exstep { EXS_OK, EXS_AGAIN, EXS_FAILED, EXS_FATAL };

static enum exstep exec_err(struct prov_ssh_conn *c, struct exec *e, int rc, const char *what)
{
    int dead = 1;
    enum prov_ssh_err err = prov_ssh_map_err(PH_CHANNEL, rc, c->sock_errno, c->peer_eof, &dead);
    if (dead) {
        prov_ssh_fail_rc(c, PH_CHANNEL, rc, what);
        return EXS_FATAL;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s (libssh2 %d)", what, prov_ssh_lib_errmsg(c->sess), rc);
    exec_set_state(e, e->ch ? EX_FREE : EX_DONE);
    e->free_deadline_us = now_us() + (int64_t)CHANNEL_FREE_MS * 1000;
    exec_fire(c, e, err, 0, msg);
    return EXS_FAILED;
}

/* One libssh2 call's outcome: wait, fail through exec_err, or move to next. */
static enum exstep ex_advance(struct prov_ssh_conn *c, struct exec *e, int rc, const char *what,
                              enum exec_state next)
{
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return EXS_AGAIN;
    if (rc)
        return exec_err(c, e, rc, what);
    exec_set_state(e, next);
    return EXS_OK;
}

static enum exstep ex_open(struct prov_ssh_conn *c, struct exec *e)
{
    e->ch = libssh2_channel_open_session(c->sess);
    if (!e->ch) {
        int rc = libssh2_session_last_errno(c->sess);
        if (rc == LIBSSH2_ERROR_EAGAIN)
            return EXS_AGAIN;
        return exec_err(c, e, rc, "channel open");
    }
    if (e->cb_fired) { /* timed out while the open was in flight */
        exec_set_state(e, EX_FREE);
        return EXS_OK;
    }
    exec_set_state(e, EX_EXEC);
    return EXS_OK;
}

static enum exstep ex_exec(struct prov_ssh_conn *c, struct exec *e)
{
    enum exstep r =
        ex_advance(c, e, libssh2_channel_exec(e->ch, e->command), "exec request", EX_EOF);
    if (r == EXS_OK)
        e->exec_sent = 1; /* libssh2 waited for the server's CHANNEL_SUCCESS */
    return r;
}

/* stdin gets EOF at once: commands that read stdin must not wait for it */
static enum exstep ex_eof(struct prov_ssh_conn *c, struct exec *e)
{
    return ex_advance(c, e, libssh2_channel_send_eof(e->ch), "send eof", EX_READ);
}

static enum exstep ex_read(struct prov_ssh_conn *c, struct exec *e)
{
    char buf[16384];
    for (;;) {
        if (c->turn_bytes >= TURN_BYTES) { /* the session's budget: others' turn now */
            c->turn_spent = 1;
            return EXS_AGAIN;
        }
        ssize_t n1 = libssh2_channel_read_ex(e->ch, 0, buf, sizeof buf);
        if (n1 > 0)
            tail_add(&e->out, buf, (size_t)n1);
        else if (n1 < 0 && n1 != LIBSSH2_ERROR_EAGAIN)
            return exec_err(c, e, (int)n1, "read stdout");
        ssize_t n2 = libssh2_channel_read_ex(e->ch, SSH_EXTENDED_DATA_STDERR, buf, sizeof buf);
        if (n2 > 0)
            tail_add(&e->err, buf, (size_t)n2);
        else if (n2 < 0 && n2 != LIBSSH2_ERROR_EAGAIN)
            return exec_err(c, e, (int)n2, "read stderr");
        c->turn_bytes += (n1 > 0 ? (size_t)n1 : 0) + (n2 > 0 ? (size_t)n2 : 0);
        if (n1 > 0 || n2 > 0)
            continue;
        if (libssh2_channel_eof(e->ch) || (n1 == 0 && n2 == 0)) {
            exec_set_state(e, EX_CLOSE);
            return EXS_OK;
        }
        return EXS_AGAIN;
    }
}

static enum exstep ex_close(struct prov_ssh_conn *c, struct exec *e)
{
    return ex_advance(c, e, libssh2_channel_close(e->ch), "channel close", EX_WAIT_CLOSED);
}

static enum exstep ex_wait_closed(struct prov_ssh_conn *c, struct exec *e)
{
    int rc = libssh2_channel_wait_closed(e->ch);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return EXS_AGAIN;
    if (rc) {
        int dead = 1;
        prov_ssh_map_err(PH_CHANNEL, rc, c->sock_errno, c->peer_eof, &dead);
        if (dead)
            return exec_err(c, e, rc, "wait for channel close");
        /* e.g. closed without EOF: the exit status is still meaningful */
    }
    exec_set_state(e, EX_FREE);
    e->free_deadline_us = now_us() + (int64_t)CHANNEL_FREE_MS * 1000;
    exec_fire(c, e, PROV_SSH_OK, 0, NULL);
    return EXS_OK;
}

static enum exstep ex_free(struct prov_ssh_conn *c, struct exec *e)
{
    (void)c;
    int rc = libssh2_channel_free(e->ch);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return EXS_AGAIN;
    e->ch = NULL; /* freed, whatever rc says */
    exec_set_state(e, EX_DONE);
    return EXS_OK;
}

/* Runs one exec's state machine until it waits. Returns EXS_OK if it made
 * any progress, EXS_AGAIN if none, EXS_FATAL if the session failed. */
static enum exstep exec_drive(struct prov_ssh_conn *c, struct exec *e)
{
    int progress = 0;
    for (;;) {
        enum exstep r;
        if (c->closing)
            return progress ? EXS_OK : EXS_AGAIN;
        switch (e->st) {
        case EX_OPEN: r = ex_open(c, e); break;
        case EX_EXEC: r = ex_exec(c, e); break;
        case EX_EOF: r = ex_eof(c, e); break;
        case EX_READ: {
            size_t before = e->out.total + e->err.total;
            r = ex_read(c, e);
            if (e->out.total + e->err.total != before)
                progress = 1;
            break;
        }
        case EX_CLOSE: r = ex_close(c, e); break;
        case EX_WAIT_CLOSED: r = ex_wait_closed(c, e); break;
        case EX_FREE: r = ex_free(c, e); break;
        case EX_QUEUED:
        case EX_DONE:
        default: return progress ? EXS_OK : EXS_AGAIN;
        }
        if (r == EXS_FATAL)
            return EXS_FATAL;
        if (r == EXS_AGAIN) {
            /* half-sent packet: nobody else may send until this op finishes */
            if (c->sess &&
                (libssh2_session_block_directions(c->sess) & LIBSSH2_SESSION_BLOCK_OUTBOUND))
                c->out_owner = e;
            else if (c->out_owner == e)
                c->out_owner = NULL;
            return progress ? EXS_OK : EXS_AGAIN;
        }
        if (c->out_owner == e)
            c->out_owner = NULL;
        progress = 1;
    }
}

static int exec_holds_slot(const struct exec *e)
{
    return e->st != EX_QUEUED && e->st != EX_DONE && !e->abandoned;
}

/* Starts queued execs up to the cap; at most one channel open in flight. */
static void execs_start(struct prov_ssh_conn *c)
{
    int active = 0, opening = 0;
    for (struct exec *e = c->ex_head; e; e = e->next) {
        active += exec_holds_slot(e);
        opening |= e->st == EX_OPEN;
    }
    if (opening || active >= PROV_SSH_MAX_CHANNELS)
        return;
    for (struct exec *e = c->ex_head; e; e = e->next) {
        if (e->st == EX_QUEUED && !e->cb_fired) {
            exec_set_state(e, EX_OPEN);
            e->start_us = now_us();
            return;
        }
    }
}

static void exec_free(struct exec *e)
{
    free(e->command);
    free(e);
}

/* Unlinks and frees execs that are finished and reported. */
static void execs_sweep(struct prov_ssh_conn *c)
{
    struct exec **pp = &c->ex_head, *last = NULL;
    while (*pp) {
        struct exec *e = *pp;
        if (e->cb_fired && !e->ch && (e->st == EX_DONE || e->st == EX_QUEUED)) {
            *pp = e->next;
            if (c->out_owner == e)
                c->out_owner = NULL;
            exec_free(e);
        } else {
            last = e;
            pp = &e->next;
        }
    }
    c->ex_tail = last;
}

/* Sends a keepalive when an idle session is due one. STEP_AGAIN while its packet is half
 * sent (nothing else may be sent meanwhile), STEP_ERR when the session is dead. */
static enum step keepalive(struct prov_ssh_conn *c)
{
    int64_t t = now_us();
    if (!c->keepalive_pending &&
        (c->ex_head != NULL || c->out_owner != NULL || t < c->keepalive_us))
        return STEP_OK;
    int next_s = 0;
    int rc = libssh2_keepalive_send(c->sess, &next_s);
    c->keepalive_pending = rc == LIBSSH2_ERROR_EAGAIN;
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    if (rc)
        return prov_ssh_fail_rc(c, PH_CHANNEL, rc, "keepalive");
    c->keepalive_us = t + (int64_t)(next_s > 0 ? next_s : KEEPALIVE_S) * 1000000;
    return STEP_OK;
}

enum step prov_ssh_st_ready(struct prov_ssh_conn *c)
{
    enum step ka = keepalive(c);
    if (ka != STEP_OK)
        return ka;
    int progress;
    do {
        progress = 0;
        execs_start(c);
        for (struct exec *e = c->ex_head; e && !c->closing; e = e->next) {
            if (c->out_owner && c->out_owner != e)
                continue;
            enum exstep r = exec_drive(c, e);
            if (r == EXS_FATAL)
                return STEP_ERR;
            if (r == EXS_OK || r == EXS_FAILED)
                progress = 1;
        }
        execs_sweep(c);
    } while (progress && !c->closing && !c->turn_spent);
    if (c->turn_spent && !c->closing)
        prov_ssh_conn_kick(c); /* libssh2 may hold the rest already: no socket event comes */
    return c->closing ? STEP_OK : STEP_AGAIN;
}

/* ------------------------------------------------------- exec deadlines */

int prov_ssh_execs_check_timeouts(struct prov_ssh_conn *c, int64_t t)
{
    int changed = 0;
    for (struct exec *e = c->ex_head; e; e = e->next) {
        if (!e->cb_fired && e->deadline_us && t >= e->deadline_us) {
            char msg[96];
            snprintf(msg, sizeof msg, "command timed out after %d ms", e->timeout_ms);
            /* an open in flight must finish (the open state is per session) */
            if (e->st == EX_QUEUED)
                exec_set_state(e, EX_DONE);
            else if (e->st != EX_OPEN && e->st < EX_FREE)
                exec_set_state(e, EX_FREE);
            e->free_deadline_us = t + (int64_t)CHANNEL_FREE_MS * 1000;
            exec_fire(c, e, prov_ssh_map_err(PH_CHANNEL, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL), 1,
                      msg);
            changed = 1;
            if (c->closing || c->st != CS_READY)
                return 1;
        }
        if (e->st == EX_FREE && !e->abandoned && e->free_deadline_us && t >= e->free_deadline_us) {
            e->abandoned = 1; /* still driven, no longer holds a slot */
            changed = 1;
        }
    }
    return changed;
}

/* ------------------------------------------------------- exec lifetime, public API */

void prov_ssh_execs_free(struct prov_ssh_conn *c)
{
    struct exec *e = c->ex_head;
    while (e) {
        struct exec *n = e->next;
        exec_free(e);
        e = n;
    }
    c->ex_head = c->ex_tail = NULL;
    c->out_owner = NULL;
}

int prov_ssh_exec(struct prov_ssh_conn *c, const char *command, int timeout_ms, prov_ssh_exec_cb cb,
                  void *ctx)
{
    if (!c || !command || c->closing || c->st > CS_READY)
        return -1;
    struct exec *e = calloc(1, sizeof *e);
    if (!e)
        return -1;
    e->command = dup_s(command);
    if (!e->command) {
        free(e);
        return -1;
    }
    e->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_EXEC_MS;
    e->cb = cb;
    e->ctx = ctx;
    exec_set_state(e, EX_QUEUED);
    if (c->st == CS_READY)
        prov_ssh_exec_arm(c, e, now_us());
    if (c->ex_tail)
        c->ex_tail->next = e;
    else
        c->ex_head = e;
    c->ex_tail = e;
    prov_ssh_conn_kick(c);
    return 0;
}
