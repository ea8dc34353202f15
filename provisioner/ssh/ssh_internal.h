/* Internals of the SSH engine (provisioner/ssh/): the state enums, the conn, exec and
 * loop structures, and the functions the three files call across. Not a public API
 * (that is ssh.h). Model: curl lib/vssh/libssh2.c.
 *
 * Structure
 *   loop ─┬─ conn (state enum, one function per state) ─┬─ exec (state enum, one channel)
 *         └─ conn …                                      └─ exec …
 *
 *   connect.c  the conn: the one libssh2 error map, its one state setter, the connect and
 *              closing states, the conn driver and its phase deadlines, connect/close
 *   exec.c     the execs on a ready conn: their one state setter, one function per exec
 *              state, the ready state that drives them, their deadlines, exec
 *   loop.c     the loop: epoll interest, the deadline heap, the kick list, run_once
 *
 * Every state function returns STEP_OK (state advanced: call again), STEP_AGAIN
 * (wait for the socket / a deadline) or STEP_ERR (c->fail_* holds the error).
 * Errors of libssh2 and of the socket are classified in prov_ssh_map_err() only.
 * States change only through conn_set_state() (connect.c) and exec_set_state()
 * (exec.c), and only forwards.
 *
 * Re-entrancy rule: user callbacks may call prov_ssh_exec/close/connect. None
 * of those frees anything or touches libssh2: prov_ssh_close() only fires the
 * pending callbacks and sets c->closing; the loop tears down and frees. Code
 * that fires a callback returns right after it (no libssh2 handle is used
 * after a callback without re-checking state).
 *
 * libssh2 1.10 pitfalls handled here:
 *   - only one channel open may be in flight per session (the open state
 *     lives in the session): opens are serialised;
 *   - a packet half-sent on EAGAIN must be completed by the SAME call, any
 *     other sending call gets LIBSSH2_ERROR_BAD_USE: while a channel op left
 *     outbound data pending, only that exec is driven (c->out_owner);
 *   - a channel read drains the socket into libssh2's queue, also for other
 *     channels: execs are driven in passes until a pass makes no progress,
 *     otherwise queued data could wait for a poll wake-up that never comes;
 *   - errno is lost inside libssh2: our own recv/send callbacks record it
 *     (and use MSG_NOSIGNAL, so no SIGPIPE without touching signal state).
 */
#ifndef PROV_SSH_INTERNAL_H
#define PROV_SSH_INTERNAL_H

#include "common/dheap.h"
#include "common/ptrset.h"
#include "provisioner/ssh/ssh.h"

#include <libssh2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#define TAIL_CAP             8192
#define DEFAULT_CONNECT_MS   5000
#define DEFAULT_HANDSHAKE_MS 10000
#define DEFAULT_AUTH_MS      10000
#define DEFAULT_EXEC_MS      60000
#define CLOSE_GRACE_MS       1000 /* graceful close: channel frees + disconnect */
#define CHANNEL_FREE_MS      2000 /* after this a closing channel stops holding a slot */
#define KEEPALIVE_S          60   /* an idle session sends an SSH keepalive this often */
#define LOOP_EVENTS          256  /* socket events taken per epoll_wait */
#define TURN_BYTES           PROV_SSH_TURN_BYTES

enum step { STEP_OK, STEP_AGAIN, STEP_ERR };

enum phase { PH_CONNECT, PH_HANDSHAKE, PH_AUTH, PH_CHANNEL, PH_CLOSE };

enum conn_state {
    CS_START,          /* socket + non-blocking connect() */
    CS_CONNECTING,     /* wait for connect() completion */
    CS_HANDSHAKE,      /* banner + kex */
    CS_HOSTKEY,        /* fingerprint check (no I/O) */
    CS_AUTH,           /* public key from memory */
    CS_READY,          /* execs run */
    CS_FAILED,         /* failure reported, session torn down; waits for close */
    CS_CLOSE_CHANNELS, /* graceful close: free open channels */
    CS_DISCONNECT,     /* graceful close: SSH_MSG_DISCONNECT */
    CS_TEARDOWN,       /* hard teardown (socket shut down first) */
    CS_GONE            /* freed by the loop's sweep */
};

enum exec_state {
    EX_QUEUED,
    EX_OPEN,
    EX_EXEC,
    EX_EOF,
    EX_READ,
    EX_CLOSE,
    EX_WAIT_CLOSED,
    EX_FREE,
    EX_DONE
};

struct tail {
    char buf[TAIL_CAP]; /* ring: the byte number n lives at buf[n % TAIL_CAP] */
    size_t total;
};

struct exec {
    struct exec *next;
    char *command; /* owned */
    int timeout_ms;
    prov_ssh_exec_cb cb;
    void *ctx;
    int cb_fired;
    int abandoned; /* timed out/failed before its open completed, or freeing too long */
    int exec_sent; /* the server accepted the exec request */
    enum exec_state st;
    LIBSSH2_CHANNEL *ch;
    int64_t start_us, deadline_us, free_deadline_us;
    struct tail out, err;
};

struct prov_ssh_conn {
    struct prov_ssh_loop *loop;
    struct prov_ssh_conn *next;
    enum conn_state st;
    int fd;
    LIBSSH2_SESSION *sess;
    struct ptrset mem; /* every block libssh2 holds for sess (see ssh_mem_* in connect.c) */
    char *address, *user, *pin; /* owned copies */
    char *key;                  /* owned copy, wiped before free */
    size_t key_len;
    int port;
    int connect_ms, handshake_ms, auth_ms;
    int64_t deadline_us; /* current phase (connect/handshake/auth/close) */
    prov_ssh_conn_cb cb;
    void *ctx;
    int cb_fired;
    int closing; /* prov_ssh_close() was called */
    int kick;    /* on the loop's kick list: driven on the next iteration */
    struct prov_ssh_conn *kick_next;
    int reg_fd;            /* the socket as registered with the loop's epoll; -1: not */
    uint32_t reg_ev;       /* its registered events */
    struct dheap_node due; /* its earliest deadline, in the loop's heap */
    int gone_counted;      /* counted in loop->gone (CS_GONE, waits for the sweep) */
    struct prov_ssh_conn_status status;
    struct exec *ex_head, *ex_tail;
    struct exec *out_owner; /* exec whose op left a half-sent packet */
    int64_t keepalive_us;   /* when an idle ready session sends its next keepalive */
    int keepalive_pending;  /* a keepalive packet is half sent: finish it first */
    size_t turn_bytes;      /* output read in this turn (prov_ssh_conn_drive) */
    int turn_spent;         /* TURN_BYTES reached: the rest waits for the next turn */
    /* recorded by our recv/send callbacks */
    int sock_errno;
    int peer_eof;
    /* failure being reported (set by state functions, acted on by conn_drive) */
    enum prov_ssh_err fail_err;
    char fail_msg[256];
};

/* The loop's work is proportional to what is ready, not to how many sessions it holds:
 * an epoll set holds each socket with the interest it needs now (updated after each time
 * its conn is driven; an idle ready session is not in it at all), a binary min-heap holds
 * each conn's earliest deadline, and a kick list holds the conns a call or a callback
 * woke. One iteration drives only the conns with a socket event, a deadline reached or a
 * kick. */
struct prov_ssh_loop {
    struct prov_ssh_conn *head, *tail;
    int count;
    int ep; /* epoll */
    struct epoll_event evs[LOOP_EVENTS];
    struct prov_ssh_conn *kick_head;
    struct dheap heap;
    int gone; /* conns in CS_GONE not yet swept */
    struct prov_ssh_loop_stats stats;
};

/* ---------------------------------------------------------------- helpers */

static inline int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static inline char *dup_s(const char *s)
{
    return s ? dup_n(s, strlen(s)) : NULL;
}

/* ------------------------------------------------------- connect.c */

/* THE one place where libssh2 return codes and socket errnos become error
 * classes (see connect.c). */
enum prov_ssh_err prov_ssh_map_err(enum phase ph, int rc, int sys_errno, int peer_eof,
                                   int *session_dead);
/* Records the failure of a state function in c->fail_*; returns STEP_ERR. */
enum step prov_ssh_set_fail(struct prov_ssh_conn *c, enum prov_ssh_err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, from a libssh2 code (and the errno / EOF our socket callbacks saw). */
enum step prov_ssh_fail_rc(struct prov_ssh_conn *c, enum phase ph, int rc, const char *what);
/* libssh2's last error text for s ("" when none; never key material). */
const char *prov_ssh_lib_errmsg(LIBSSH2_SESSION *s);
/* Runs c's state machine until it waits (the loop calls it for a kicked conn). */
void prov_ssh_conn_drive(struct prov_ssh_conn *c);
/* Enforces c's phase and exec deadlines at time t. Returns 1 if something changed. */
int prov_ssh_conn_check_timeouts(struct prov_ssh_conn *c, int64_t t);
/* Tears down and frees c with its execs (the loop's sweep). */
void prov_ssh_conn_free(struct prov_ssh_conn *c);

/* ------------------------------------------------------- exec.c */

/* Gives e its deadline, counted from now, once c is ready. */
void prov_ssh_exec_arm(struct prov_ssh_conn *c, struct exec *e, int64_t now);
/* Fires every exec callback not yet fired (a failed or closed session). */
void prov_ssh_execs_fire_all(struct prov_ssh_conn *c, enum prov_ssh_err err, const char *msg);
/* The CS_READY state: starts queued execs and drives them. */
enum step prov_ssh_st_ready(struct prov_ssh_conn *c);
/* Enforces the exec deadlines of a ready c at time t. Returns 1 if something changed. */
int prov_ssh_execs_check_timeouts(struct prov_ssh_conn *c, int64_t t);
/* Frees every exec of c (their channels are already gone). */
void prov_ssh_execs_free(struct prov_ssh_conn *c);

/* ------------------------------------------------------- loop.c */

/* Puts c on its loop's kick list: driven on the next iteration. */
void prov_ssh_conn_kick(struct prov_ssh_conn *c);
/* Takes c's socket out of the loop's epoll set. */
void prov_ssh_conn_unwatch(struct prov_ssh_conn *c);

#endif
