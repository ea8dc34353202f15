/* SSH engine, what its parts share (see ssh_internal.h): the one libssh2 error map and a
 * session's failure, and the two calls by which a session asks the loop to look at it
 * again (kick) or to stop watching its socket (unwatch). The loop (loop.c) drives the
 * conns (connect.c), which drive their commands (exec.c); all three stand on this file,
 * and none of them calls one above it. */
#include "provisioner/ssh/ssh_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

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
enum prov_ssh_err prov_ssh_map_err(enum phase ph, int rc, int sys_errno, int peer_eof,
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
enum step prov_ssh_set_fail(struct prov_ssh_conn *c, enum prov_ssh_err e, const char *fmt, ...)
{
    va_list ap;
    c->fail_err = e;
    va_start(ap, fmt);
    vsnprintf(c->fail_msg, sizeof c->fail_msg, fmt, ap);
    va_end(ap);
    return STEP_ERR;
}

const char *prov_ssh_lib_errmsg(LIBSSH2_SESSION *s)
{
    char *m = NULL;
    if (!s)
        return "";
    libssh2_session_last_error(s, &m, NULL, 0);
    return m ? m : "";
}

enum step prov_ssh_fail_rc(struct prov_ssh_conn *c, enum phase ph, int rc, const char *what)
{
    enum prov_ssh_err e = prov_ssh_map_err(ph, rc, c->sock_errno, c->peer_eof, NULL);
    if (c->sock_errno)
        return prov_ssh_set_fail(c, e, "%s: %s", what, strerror(c->sock_errno));
    if (c->peer_eof)
        return prov_ssh_set_fail(c, e, "%s: connection closed by peer", what);
    return prov_ssh_set_fail(c, e, "%s: %s (libssh2 %d)", what, prov_ssh_lib_errmsg(c->sess), rc);
}

/* ------------------------------------------------------- loop bookkeeping */

void prov_ssh_conn_kick(struct prov_ssh_conn *c)
{
    if (c->kick)
        return;
    c->kick = 1;
    c->kick_next = c->loop->kick_head;
    c->loop->kick_head = c;
}

void prov_ssh_conn_unwatch(struct prov_ssh_conn *c)
{
    if (c->reg_fd < 0)
        return;
    epoll_ctl(c->loop->ep, EPOLL_CTL_DEL, c->reg_fd, NULL);
    c->reg_fd = -1;
    c->reg_ev = 0;
}
