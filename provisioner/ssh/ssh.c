/* SSH engine: see ssh.h. Model: curl lib/vssh/libssh2.c.
 *
 * Structure
 *   loop ─┬─ conn (state enum, one function per state) ─┬─ exec (state enum, one channel)
 *         └─ conn …                                      └─ exec …
 *
 * Every state function returns STEP_OK (state advanced: call again), STEP_AGAIN
 * (wait for the socket / a deadline) or STEP_ERR (c->fail_* holds the error).
 * Errors of libssh2 and of the socket are classified in map_err() only.
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
#include "provisioner/ssh/ssh.h"
#include "common/dheap.h"
#include "common/netpolicy.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAIL_CAP             8192
#define DEFAULT_CONNECT_MS   5000
#define DEFAULT_HANDSHAKE_MS 10000
#define DEFAULT_AUTH_MS      10000
#define DEFAULT_EXEC_MS      60000
#define CLOSE_GRACE_MS       1000 /* graceful close: channel frees + disconnect */
#define CHANNEL_FREE_MS      2000 /* after this a closing channel stops holding a slot */
#define KEEPALIVE_S          60   /* an idle session sends an SSH keepalive this often */
#define LOOP_EVENTS          256  /* socket events taken per epoll_wait */

/* Terrapin (CVE-2023-48795) mitigation for libssh2 1.10 (no strict kex): no
 * chacha20-poly1305, no CBC, no *-etm MACs. libssh2 1.10 has no aes-gcm and
 * no rsa-sha2-* host keys (checked with libssh2_session_supported_algs). */
static const char PREF_KEX[] = "curve25519-sha256,curve25519-sha256@libssh.org,"
                               "ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,"
                               "diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,"
                               "diffie-hellman-group14-sha256";
static const char PREF_HOSTKEY[] =
    "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521";
static const char PREF_CIPHER[] = "aes256-ctr,aes192-ctr,aes128-ctr";
static const char PREF_MAC[] = "hmac-sha2-256,hmac-sha2-512";

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

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static char *dup_s(const char *s)
{
    return s ? dup_n(s, strlen(s)) : NULL;
}

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

static const char *hostkey_type_name(int type)
{
    switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
    case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
    default: return "unknown";
    }
}

/* ------------------------------------------------------- error mapping */

int prov_ssh_err_transient(enum prov_ssh_err e)
{
    return e == PROV_SSH_REFUSED || e == PROV_SSH_TIMEOUT || e == PROV_SSH_RESET ||
           e == PROV_SSH_DISCONNECT;
}

const char *prov_ssh_err_name(enum prov_ssh_err e)
{
    switch (e) {
    case PROV_SSH_OK: return "ok";
    case PROV_SSH_REFUSED: return "refused";
    case PROV_SSH_TIMEOUT: return "timed_out";
    case PROV_SSH_RESET: return "reset";
    case PROV_SSH_DISCONNECT: return "disconnected";
    case PROV_SSH_AUTH_FAILED: return "auth_failed";
    case PROV_SSH_HOSTKEY_MISMATCH: return "host_key_mismatch";
    case PROV_SSH_ADDRESS_NOT_ALLOWED: return "address_not_allowed";
    case PROV_SSH_PROTOCOL: return "protocol";
    case PROV_SSH_NO_MEMORY: return "no_memory";
    }
    return "unknown";
}

/* THE one place where libssh2 return codes and socket errnos become error
 * classes. rc: a libssh2 code (< 0) or 0 when only sys_errno applies.
 * *session_dead (may be NULL) says whether the whole session is unusable
 * (1) or only the one channel failed (0). */
static enum prov_ssh_err map_err(enum phase ph, int rc, int sys_errno, int peer_eof,
                                 int *session_dead)
{
    int dead = 1;
    enum prov_ssh_err e;

    if (rc == LIBSSH2_ERROR_ALLOC || sys_errno == ENOMEM || sys_errno == ENOBUFS) {
        e = PROV_SSH_NO_MEMORY;
    } else if (rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_SOCKET_TIMEOUT ||
               sys_errno == ETIMEDOUT) {
        e = PROV_SSH_TIMEOUT;
    } else if (sys_errno == ECONNREFUSED || sys_errno == EHOSTUNREACH || sys_errno == ENETUNREACH ||
               sys_errno == EADDRNOTAVAIL) {
        e = PROV_SSH_REFUSED;
    } else if (sys_errno == ECONNRESET || sys_errno == EPIPE || sys_errno == ECONNABORTED) {
        e = PROV_SSH_RESET;
    } else if (peer_eof || rc == LIBSSH2_ERROR_SOCKET_DISCONNECT ||
               rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_SEND ||
               rc == LIBSSH2_ERROR_BANNER_RECV || rc == LIBSSH2_ERROR_BANNER_SEND ||
               rc == LIBSSH2_ERROR_BAD_SOCKET || sys_errno != 0) {
        e = PROV_SSH_DISCONNECT;
    } else if (ph == PH_AUTH &&
               (rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED ||
                rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED || rc == LIBSSH2_ERROR_FILE ||
                rc == LIBSSH2_ERROR_METHOD_NONE || rc == LIBSSH2_ERROR_METHOD_NOT_SUPPORTED ||
                rc == LIBSSH2_ERROR_PUBLICKEY_PROTOCOL || rc == LIBSSH2_ERROR_KEYFILE_AUTH_FAILED ||
                rc == LIBSSH2_ERROR_PASSWORD_EXPIRED || rc == LIBSSH2_ERROR_INVAL ||
                rc == LIBSSH2_ERROR_PROTO /* 1.10: unparseable key, "key too short" */)) {
        e = PROV_SSH_AUTH_FAILED;
    } else {
        /* kex/MAC/decrypt failures, protocol violations, channel failures */
        e = PROV_SSH_PROTOCOL;
        if (ph == PH_CHANNEL &&
            ((rc <= LIBSSH2_ERROR_CHANNEL_OUTOFORDER && rc >= LIBSSH2_ERROR_CHANNEL_EOF_SENT) ||
             rc == LIBSSH2_ERROR_CHANNEL_WINDOW_FULL || rc == LIBSSH2_ERROR_REQUEST_DENIED))
            dead = 0;
    }
    if (session_dead)
        *session_dead = dead;
    return e;
}

/* Records the failure of a state function; the text never contains key
 * material (libssh2's messages are static strings about the protocol). */
static enum step conn_set_fail(struct prov_ssh_conn *c, enum prov_ssh_err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum step conn_set_fail(struct prov_ssh_conn *c, enum prov_ssh_err e, const char *fmt, ...)
{
    va_list ap;
    c->fail_err = e;
    va_start(ap, fmt);
    vsnprintf(c->fail_msg, sizeof c->fail_msg, fmt, ap);
    va_end(ap);
    return STEP_ERR;
}

static const char *lib_errmsg(LIBSSH2_SESSION *s)
{
    char *m = NULL;
    if (!s)
        return "";
    libssh2_session_last_error(s, &m, NULL, 0);
    return m ? m : "";
}

static enum step conn_fail_rc(struct prov_ssh_conn *c, enum phase ph, int rc, const char *what)
{
    enum prov_ssh_err e = map_err(ph, rc, c->sock_errno, c->peer_eof, NULL);
    if (c->sock_errno)
        return conn_set_fail(c, e, "%s: %s", what, strerror(c->sock_errno));
    if (c->peer_eof)
        return conn_set_fail(c, e, "%s: connection closed by peer", what);
    return conn_set_fail(c, e, "%s: %s (libssh2 %d)", what, lib_errmsg(c->sess), rc);
}

/* ------------------------------------------------------- socket callbacks */

static ssize_t sock_recv(libssh2_socket_t fd, void *buf, size_t len, int flags, void **abstract)
{
    struct prov_ssh_conn *c = *abstract;
    ssize_t n = recv(fd, buf, len, flags);
    if (n < 0) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)
            return -EAGAIN;
        c->sock_errno = e;
        return -e;
    }
    if (n == 0)
        c->peer_eof = 1;
    return n;
}

static ssize_t sock_send(libssh2_socket_t fd, const void *buf, size_t len, int flags,
                         void **abstract)
{
    struct prov_ssh_conn *c = *abstract;
    ssize_t n = send(fd, buf, len, flags | MSG_NOSIGNAL);
    if (n < 0) {
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)
            return -EAGAIN;
        c->sock_errno = e;
        return -e;
    }
    return n;
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
static void execs_fire_all(struct prov_ssh_conn *c, enum prov_ssh_err err, const char *msg)
{
    for (struct exec *e = c->ex_head; e; e = e->next)
        exec_fire(c, e, err, 0, msg);
}

static void conn_fire(struct prov_ssh_conn *c, enum prov_ssh_err err, const char *msg)
{
    if (c->cb_fired)
        return;
    c->cb_fired = 1;
    c->status.err = err;
    snprintf(c->status.message, sizeof c->status.message, "%s", msg);
    if (c->cb)
        c->cb(c, &c->status, c->ctx);
}

/* ------------------------------------------------------- teardown */

/* Frees channels and the session without ever blocking: the socket is shut
 * down first, so every libssh2 send/recv fails at once instead of EAGAIN,
 * and blocking mode makes libssh2 finish its internal states in one call. */
static void conn_unwatch(struct prov_ssh_conn *c);

static void conn_hard_teardown(struct prov_ssh_conn *c)
{
    conn_unwatch(c); /* before close: a forked child's copy would keep it in the set */
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    if (c->sess) {
        libssh2_session_set_blocking(c->sess, 1);
        for (struct exec *e = c->ex_head; e; e = e->next) {
            if (e->ch) {
                libssh2_channel_free(e->ch);
                e->ch = NULL;
            }
        }
        libssh2_session_free(c->sess);
        c->sess = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->out_owner = NULL;
}

/* Reports c->fail_* (connect cb and every pending exec cb), tears down. */
static void conn_fail(struct prov_ssh_conn *c)
{
    char msg[256];
    enum prov_ssh_err err = c->fail_err;
    snprintf(msg, sizeof msg, "%s", c->fail_msg);
    conn_hard_teardown(c);
    c->st = CS_FAILED;
    if (!c->cb_fired) {
        conn_fire(c, err, msg);
    } else {
        c->status.err = err;
        snprintf(c->status.message, sizeof c->status.message, "%s", msg);
    }
    execs_fire_all(c, err, msg);
}

/* ------------------------------------------------------- connect states */

static enum step st_start(struct prov_ssh_conn *c)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int one = 1;

    memset(&ss, 0, sizeof ss);
    if (net_address_forbidden(c->address))
        return conn_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED,
                             "address %s is not allowed as an SSH target", c->address);
    if (c->port < 1 || c->port > 65535)
        return conn_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED, "invalid port %d", c->port);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, c->address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)c->port);
        sl = sizeof *a4;
    } else if (inet_pton(AF_INET6, c->address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)c->port);
        sl = sizeof *a6;
    } else {
        return conn_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED, "not a literal IP address");
    }
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return conn_set_fail(c, map_err(PH_CONNECT, 0, errno, 0, NULL), "socket: %s",
                             strerror(errno));
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = 30, intvl = 10, cnt = 3;
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);

    c->deadline_us = now_us() + (int64_t)c->connect_ms * 1000;
    c->st = CS_CONNECTING;
    if (connect(c->fd, (struct sockaddr *)&ss, sl) == 0)
        return STEP_OK; /* CS_CONNECTING sees SO_ERROR == 0 */
    if (errno == EINPROGRESS || errno == EINTR)
        return STEP_AGAIN;
    int e = errno;
    return conn_set_fail(c, map_err(PH_CONNECT, 0, e, 0, NULL), "connect %s port %d: %s",
                         c->address, c->port, strerror(e));
}

static enum step st_connecting(struct prov_ssh_conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    int soerr = 0;
    socklen_t l = sizeof soerr;

    if (poll(&p, 1, 0) == 0)
        return STEP_AGAIN;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) != 0)
        soerr = errno;
    if (soerr == EINPROGRESS || soerr == EALREADY)
        return STEP_AGAIN;
    if (soerr)
        return conn_set_fail(c, map_err(PH_CONNECT, 0, soerr, 0, NULL), "connect %s port %d: %s",
                             c->address, c->port, strerror(soerr));

    c->sess = libssh2_session_init_ex(NULL, NULL, NULL, c);
    if (!c->sess)
        return conn_set_fail(c, PROV_SSH_NO_MEMORY, "libssh2_session_init failed");
    libssh2_session_callback_set(c->sess, LIBSSH2_CALLBACK_RECV, (void *)sock_recv);
    libssh2_session_callback_set(c->sess, LIBSSH2_CALLBACK_SEND, (void *)sock_send);
    libssh2_session_set_blocking(c->sess, 0);
    static const struct {
        int type;
        const char *pref;
    } prefs[] = {
        {LIBSSH2_METHOD_KEX, PREF_KEX},         {LIBSSH2_METHOD_HOSTKEY, PREF_HOSTKEY},
        {LIBSSH2_METHOD_CRYPT_CS, PREF_CIPHER}, {LIBSSH2_METHOD_CRYPT_SC, PREF_CIPHER},
        {LIBSSH2_METHOD_MAC_CS, PREF_MAC},      {LIBSSH2_METHOD_MAC_SC, PREF_MAC},
        {LIBSSH2_METHOD_COMP_CS, "none"},       {LIBSSH2_METHOD_COMP_SC, "none"},
    };
    for (size_t i = 0; i < sizeof prefs / sizeof prefs[0]; i++) {
        int rc = libssh2_session_method_pref(c->sess, prefs[i].type, prefs[i].pref);
        if (rc)
            return conn_fail_rc(c, PH_HANDSHAKE, rc, "method preference");
    }
    c->deadline_us = now_us() + (int64_t)c->handshake_ms * 1000;
    c->st = CS_HANDSHAKE;
    return STEP_OK;
}

static enum step st_handshake(struct prov_ssh_conn *c)
{
    int rc = libssh2_session_handshake(c->sess, c->fd);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    if (rc)
        return conn_fail_rc(c, PH_HANDSHAKE, rc, "SSH handshake");
    c->st = CS_HOSTKEY;
    return STEP_OK;
}

/* SHA256 of the host key blob, "SHA256:" + base64 without padding: the
 * same text as `ssh-keygen -lf`. Then a constant-time compare with the pin. */
static enum step st_hostkey(struct prov_ssh_conn *c)
{
    size_t len = 0;
    int type = 0;
    unsigned char md[32];
    unsigned int mdlen = 0;
    unsigned char b64[48];

    const char *blob = libssh2_session_hostkey(c->sess, &len, &type);
    if (!blob || len == 0)
        return conn_set_fail(c, PROV_SSH_PROTOCOL, "server presented no host key");
    if (!EVP_Digest(blob, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != sizeof md)
        return conn_set_fail(c, PROV_SSH_NO_MEMORY, "SHA256 of the host key failed");
    int n = EVP_EncodeBlock(b64, md, (int)sizeof md); /* 44 chars, one '=' */
    while (n > 0 && b64[n - 1] == '=')
        n--;
    snprintf(c->status.host_key_sha256, sizeof c->status.host_key_sha256, "SHA256:%.*s", n,
             (const char *)b64);
    c->status.host_key_type = hostkey_type_name(type);
    const char *kx = libssh2_session_methods(c->sess, LIBSSH2_METHOD_KEX);
    const char *cs = libssh2_session_methods(c->sess, LIBSSH2_METHOD_CRYPT_CS);
    const char *mc = libssh2_session_methods(c->sess, LIBSSH2_METHOD_MAC_CS);
    snprintf(c->status.algorithms, sizeof c->status.algorithms,
             "kex=%s hostkey=%s cipher=%s mac=%s", kx ? kx : "?", c->status.host_key_type,
             cs ? cs : "?", mc ? mc : "?");

    if (c->pin) {
        size_t pl = strlen(c->pin);
        while (pl > 0 && c->pin[pl - 1] == '=')
            pl--;
        size_t fl = strlen(c->status.host_key_sha256);
        if (pl != fl || CRYPTO_memcmp(c->pin, c->status.host_key_sha256, fl) != 0)
            return conn_set_fail(c, PROV_SSH_HOSTKEY_MISMATCH,
                                 "host key mismatch: server presented %s %s, pinned %.80s",
                                 c->status.host_key_type, c->status.host_key_sha256, c->pin);
    }
    c->deadline_us = now_us() + (int64_t)c->auth_ms * 1000;
    c->st = CS_AUTH;
    return STEP_OK;
}

static void exec_arm(struct prov_ssh_conn *c, struct exec *e, int64_t now);

static enum step st_auth(struct prov_ssh_conn *c)
{
    int rc = libssh2_userauth_publickey_frommemory(c->sess, c->user, strlen(c->user), NULL, 0,
                                                   c->key, c->key_len, NULL);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    if (rc)
        return conn_fail_rc(c, PH_AUTH, rc, "public key authentication");
    /* the key is no longer needed: wipe it now */
    explicit_bzero(c->key, c->key_len);
    free(c->key);
    c->key = NULL;
    c->key_len = 0;
    c->st = CS_READY;
    c->deadline_us = 0;
    int64_t t = now_us();
    /* a long-lived session (the health monitor's) stays open through NAT and firewalls
     * between its commands, and a dead peer shows up as a failed send */
    libssh2_keepalive_config(c->sess, 1, KEEPALIVE_S);
    c->keepalive_us = t + (int64_t)KEEPALIVE_S * 1000000;
    for (struct exec *e = c->ex_head; e; e = e->next)
        exec_arm(c, e, t);
    conn_fire(c, PROV_SSH_OK, "connected");
    return STEP_OK; /* CS_READY starts queued execs (unless closed in the cb) */
}

/* ------------------------------------------------------- exec states */

static void exec_arm(struct prov_ssh_conn *c, struct exec *e, int64_t now)
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
    enum prov_ssh_err err = map_err(PH_CHANNEL, rc, c->sock_errno, c->peer_eof, &dead);
    if (dead) {
        conn_fail_rc(c, PH_CHANNEL, rc, what);
        return EXS_FATAL;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s (libssh2 %d)", what, lib_errmsg(c->sess), rc);
    e->st = e->ch ? EX_FREE : EX_DONE;
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
    e->st = next;
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
        e->st = EX_FREE;
        return EXS_OK;
    }
    e->st = EX_EXEC;
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
        if (n1 > 0 || n2 > 0)
            continue;
        if (libssh2_channel_eof(e->ch) || (n1 == 0 && n2 == 0)) {
            e->st = EX_CLOSE;
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
        map_err(PH_CHANNEL, rc, c->sock_errno, c->peer_eof, &dead);
        if (dead)
            return exec_err(c, e, rc, "wait for channel close");
        /* e.g. closed without EOF: the exit status is still meaningful */
    }
    e->st = EX_FREE;
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
    e->st = EX_DONE;
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
            e->st = EX_OPEN;
            e->start_us = now_us();
            return;
        }
    }
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
            free(e->command);
            free(e);
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
        return conn_fail_rc(c, PH_CHANNEL, rc, "keepalive");
    c->keepalive_us = t + (int64_t)(next_s > 0 ? next_s : KEEPALIVE_S) * 1000000;
    return STEP_OK;
}

static enum step st_ready(struct prov_ssh_conn *c)
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
    } while (progress && !c->closing);
    return c->closing ? STEP_OK : STEP_AGAIN;
}

/* ------------------------------------------------------- closing states */

static enum step st_close_channels(struct prov_ssh_conn *c)
{
    int pending = 0;
    for (struct exec *e = c->ex_head; e; e = e->next) {
        if (!e->ch)
            continue;
        if (c->out_owner && c->out_owner != e) {
            pending = 1;
            continue;
        }
        int rc = libssh2_channel_free(e->ch);
        if (rc == LIBSSH2_ERROR_EAGAIN) {
            pending = 1;
            if (libssh2_session_block_directions(c->sess) & LIBSSH2_SESSION_BLOCK_OUTBOUND)
                c->out_owner = e;
            continue;
        }
        if (c->out_owner == e)
            c->out_owner = NULL;
        e->ch = NULL;
    }
    if (pending)
        return STEP_AGAIN;
    c->st = CS_DISCONNECT;
    return STEP_OK;
}

static enum step st_disconnect(struct prov_ssh_conn *c)
{
    int rc = libssh2_session_disconnect(c->sess, "closing");
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    c->st = CS_TEARDOWN;
    return STEP_OK;
}

static enum step st_teardown(struct prov_ssh_conn *c)
{
    conn_hard_teardown(c);
    c->st = CS_GONE;
    return STEP_AGAIN;
}

/* ------------------------------------------------------- conn driver */

/* Moves a conn the caller closed into its closing states. */
static void conn_begin_close(struct prov_ssh_conn *c)
{
    if (c->st >= CS_CLOSE_CHANNELS)
        return;
    if (c->st == CS_READY && c->sess) {
        c->st = CS_CLOSE_CHANNELS;
        c->deadline_us = now_us() + (int64_t)CLOSE_GRACE_MS * 1000;
    } else {
        c->st = CS_TEARDOWN; /* mid-connect or failed: nothing to be graceful about */
    }
}

static void conn_drive(struct prov_ssh_conn *c)
{
    for (;;) {
        enum step r;
        if (c->closing)
            conn_begin_close(c);
        switch (c->st) {
        case CS_START: r = st_start(c); break;
        case CS_CONNECTING: r = st_connecting(c); break;
        case CS_HANDSHAKE: r = st_handshake(c); break;
        case CS_HOSTKEY: r = st_hostkey(c); break;
        case CS_AUTH: r = st_auth(c); break;
        case CS_READY: r = st_ready(c); break;
        case CS_CLOSE_CHANNELS: r = st_close_channels(c); break;
        case CS_DISCONNECT: r = st_disconnect(c); break;
        case CS_TEARDOWN: r = st_teardown(c); break;
        case CS_FAILED:
        case CS_GONE:
        default: return;
        }
        if (r == STEP_AGAIN)
            return;
        if (r == STEP_ERR) {
            if (c->st >= CS_CLOSE_CHANNELS) { /* failure while closing: just finish */
                c->st = CS_TEARDOWN;
                continue;
            }
            conn_fail(c);
        }
    }
}

/* Enforces phase and exec deadlines. Returns 1 if something changed. */
static int conn_check_timeouts(struct prov_ssh_conn *c, int64_t t)
{
    int changed = 0;
    if (c->deadline_us && t >= c->deadline_us) {
        switch (c->st) {
        case CS_CONNECTING:
            conn_set_fail(c, map_err(PH_CONNECT, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                          "connect timed out after %d ms", c->connect_ms);
            conn_fail(c);
            return 1;
        case CS_HANDSHAKE:
            conn_set_fail(c, map_err(PH_HANDSHAKE, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                          "SSH handshake timed out after %d ms", c->handshake_ms);
            conn_fail(c);
            return 1;
        case CS_AUTH:
            conn_set_fail(c, map_err(PH_AUTH, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                          "authentication timed out after %d ms", c->auth_ms);
            conn_fail(c);
            return 1;
        case CS_CLOSE_CHANNELS:
        case CS_DISCONNECT: c->st = CS_TEARDOWN; return 1;
        default: break;
        }
    }
    if (c->st != CS_READY)
        return 0;
    for (struct exec *e = c->ex_head; e; e = e->next) {
        if (!e->cb_fired && e->deadline_us && t >= e->deadline_us) {
            char msg[96];
            snprintf(msg, sizeof msg, "command timed out after %d ms", e->timeout_ms);
            /* an open in flight must finish (the open state is per session) */
            if (e->st == EX_QUEUED)
                e->st = EX_DONE;
            else if (e->st != EX_OPEN && e->st < EX_FREE)
                e->st = EX_FREE;
            e->free_deadline_us = t + (int64_t)CHANNEL_FREE_MS * 1000;
            exec_fire(c, e, map_err(PH_CHANNEL, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL), 1, msg);
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

static void conn_unwatch(struct prov_ssh_conn *c)
{
    if (c->reg_fd < 0)
        return;
    epoll_ctl(c->loop->ep, EPOLL_CTL_DEL, c->reg_fd, NULL);
    c->reg_fd = -1;
    c->reg_ev = 0;
}

static void conn_kick(struct prov_ssh_conn *c);

/* Keeps the epoll set's entry for c equal to what c waits for now. */
static void conn_watch(struct prov_ssh_conn *c)
{
    uint32_t ev = c->fd >= 0 ? conn_interest(c) : 0;
    if (c->reg_fd >= 0 && (c->reg_fd != c->fd || ev == 0))
        conn_unwatch(c);
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
        conn_kick(c);
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
        conn_kick(c);
}

static void conn_kick(struct prov_ssh_conn *c)
{
    if (c->kick)
        return;
    c->kick = 1;
    c->kick_next = c->loop->kick_head;
    c->loop->kick_head = c;
}

/* After a conn was driven: its socket interest, its deadline, and whether it is gone. */
static void conn_sync(struct prov_ssh_conn *c)
{
    struct prov_ssh_loop *l = c->loop;
    if (c->st == CS_GONE) {
        conn_unwatch(c);
        dheap_remove(&l->heap, &c->due);
        if (!c->gone_counted) {
            c->gone_counted = 1;
            l->gone++;
        }
        return;
    }
    if (c->st == CS_TEARDOWN)
        conn_kick(c);
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

static void conn_free(struct prov_ssh_conn *c)
{
    conn_hard_teardown(c);
    struct exec *e = c->ex_head;
    while (e) {
        struct exec *n = e->next;
        free(e->command);
        free(e);
        e = n;
    }
    if (c->key) {
        explicit_bzero(c->key, c->key_len);
        free(c->key);
    }
    free(c->address);
    free(c->user);
    free(c->pin);
    free(c);
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
            conn_free(c);
        } else {
            last = c;
            pp = &c->next;
        }
    }
    l->tail = last;
}

struct prov_ssh_conn *prov_ssh_connect(struct prov_ssh_loop *l, const struct prov_ssh_target *t,
                                       prov_ssh_conn_cb cb, void *ctx)
{
    assert(l && t);
    struct prov_ssh_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = l;
    c->fd = -1;
    c->reg_fd = -1;
    c->due = (struct dheap_node)DHEAP_NODE_INIT;
    c->port = t->port ? t->port : 22;
    c->address = dup_s(t->address ? t->address : "");
    c->user = dup_s(t->user ? t->user : "");
    c->key = t->private_key ? dup_n(t->private_key, t->private_key_len) : dup_s("");
    c->key_len = t->private_key ? t->private_key_len : 0;
    c->pin = t->pinned_host_key_sha256 ? dup_s(t->pinned_host_key_sha256) : NULL;
    if (!c->address || !c->user || !c->key || (t->pinned_host_key_sha256 && !c->pin)) {
        conn_free(c);
        return NULL;
    }
    c->connect_ms = t->connect_timeout_ms > 0 ? t->connect_timeout_ms : DEFAULT_CONNECT_MS;
    c->handshake_ms = t->handshake_timeout_ms > 0 ? t->handshake_timeout_ms : DEFAULT_HANDSHAKE_MS;
    c->auth_ms = t->auth_timeout_ms > 0 ? t->auth_timeout_ms : DEFAULT_AUTH_MS;
    c->cb = cb;
    c->ctx = ctx;
    c->st = CS_START;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
    conn_kick(c);
    return c;
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
    e->st = EX_QUEUED;
    if (c->st == CS_READY)
        exec_arm(c, e, now_us());
    if (c->ex_tail)
        c->ex_tail->next = e;
    else
        c->ex_head = e;
    c->ex_tail = e;
    conn_kick(c);
    return 0;
}

void prov_ssh_close(struct prov_ssh_conn *c)
{
    if (!c || c->closing)
        return;
    c->closing = 1;
    conn_kick(c);
    conn_fire(c, PROV_SSH_DISCONNECT, "closed by caller before connecting");
    execs_fire_all(c, PROV_SSH_DISCONNECT, "session closed by caller");
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
            conn_kick(l->evs[i].data.ptr);
    t = now_us();
    struct dheap_node *top;
    while ((top = dheap_pop_due(&l->heap, t)) != NULL)
        conn_kick(DHEAP_OWNER(top, struct prov_ssh_conn, due));
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
        conn_drive(c);
        if (conn_check_timeouts(c, now_us()))
            conn_drive(c);
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
        conn_free(c);
    }
    dheap_free(&l->heap);
    close(l->ep);
    free(l);
}
