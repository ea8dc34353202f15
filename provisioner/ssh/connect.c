/* SSH engine, the conn (see ssh_internal.h): the conn's state setter, the socket callbacks, the
 * connect states (socket, handshake, host key, auth), the closing states, the conn driver with its
 * phase deadlines, and prov_ssh_connect/close. */
#include "common/netpolicy.h"
#include "provisioner/ssh/ssh_internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* ------------------------------------------------------- state setter */

/* The one place a conn changes state: states only move forwards (a failure, a close and
 * the teardown all lie ahead of any state they leave). */
static void conn_set_state(struct prov_ssh_conn *c, enum conn_state st)
{
    assert(st >= c->st);
    c->st = st;
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

/* ------------------------------------------------------- teardown */

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

/* libssh2's allocator for a session: every block it holds is in c->mem, so that what
 * libssh2 1.10 forgets when a session is freed in the middle of a key exchange (its
 * curve25519 key pair: a handshake that times out, a shutdown) is freed with the session
 * (see common/ptrset.h). Room in the set is made first, so a block is never untracked. */
static void *ssh_mem_alloc(size_t n, void **abstract)
{
    struct prov_ssh_conn *c = *abstract;
    if (ptrset_reserve(&c->mem) != 0)
        return NULL;
    void *p = malloc(n);
    if (p != NULL)
        (void)ptrset_add(&c->mem, p); /* reserved: cannot fail */
    return p;
}

static void ssh_mem_free(void *p, void **abstract)
{
    struct prov_ssh_conn *c = *abstract;
    if (p == NULL)
        return;
    (void)ptrset_del(&c->mem, p);
    free(p);
}

static void *ssh_mem_realloc(void *p, size_t n, void **abstract)
{
    struct prov_ssh_conn *c = *abstract;
    if (p == NULL)
        return ssh_mem_alloc(n, abstract);
    if (ptrset_reserve(&c->mem) != 0)
        return NULL;
    /* out of the set first (p is not looked at after realloc), then the block that holds
     * the data now: q, or p again when realloc failed (room was reserved: no failure) */
    (void)ptrset_del(&c->mem, p);
    void *q = realloc(p, n);
    (void)ptrset_add(&c->mem, q != NULL ? q : p);
    return q;
}

static void ssh_mem_release(void *p, void *arg)
{
    (void)arg;
    free(p);
}

/* Frees channels and the session without ever blocking: the socket is shut
 * down first, so every libssh2 send/recv fails at once instead of EAGAIN,
 * and blocking mode makes libssh2 finish its internal states in one call. */
static void conn_hard_teardown(struct prov_ssh_conn *c)
{
    prov_ssh_conn_unwatch(c); /* before close: a forked child's copy would keep it in the set */
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
    ptrset_drain(&c->mem, ssh_mem_release, NULL); /* what libssh2 left behind */
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
    conn_set_state(c, CS_FAILED);
    if (!c->cb_fired) {
        conn_fire(c, err, msg);
    } else {
        c->status.err = err;
        snprintf(c->status.message, sizeof c->status.message, "%s", msg);
    }
    prov_ssh_execs_fire_all(c, err, msg);
}

/* ------------------------------------------------------- connect states */

static enum step st_start(struct prov_ssh_conn *c)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int one = 1;

    memset(&ss, 0, sizeof ss);
    if (net_address_forbidden(c->address))
        return prov_ssh_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED,
                                 "address %s is not allowed as an SSH target", c->address);
    if (c->port < 1 || c->port > 65535)
        return prov_ssh_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED, "invalid port %d", c->port);
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
        return prov_ssh_set_fail(c, PROV_SSH_ADDRESS_NOT_ALLOWED, "not a literal IP address");
    }
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return prov_ssh_set_fail(c, prov_ssh_map_err(PH_CONNECT, 0, errno, 0, NULL), "socket: %s",
                                 strerror(errno));
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = 30, intvl = 10, cnt = 3;
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);

    c->deadline_us = now_us() + (int64_t)c->connect_ms * 1000;
    conn_set_state(c, CS_CONNECTING);
    if (connect(c->fd, (struct sockaddr *)&ss, sl) == 0)
        return STEP_OK; /* CS_CONNECTING sees SO_ERROR == 0 */
    if (errno == EINPROGRESS || errno == EINTR)
        return STEP_AGAIN;
    int e = errno;
    return prov_ssh_set_fail(c, prov_ssh_map_err(PH_CONNECT, 0, e, 0, NULL),
                             "connect %s port %d: %s", c->address, c->port, strerror(e));
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
        return prov_ssh_set_fail(c, prov_ssh_map_err(PH_CONNECT, 0, soerr, 0, NULL),
                                 "connect %s port %d: %s", c->address, c->port, strerror(soerr));

    c->sess = libssh2_session_init_ex(ssh_mem_alloc, ssh_mem_free, ssh_mem_realloc, c);
    if (!c->sess)
        return prov_ssh_set_fail(c, PROV_SSH_NO_MEMORY, "libssh2_session_init failed");
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
            return prov_ssh_fail_rc(c, PH_HANDSHAKE, rc, "method preference");
    }
    c->deadline_us = now_us() + (int64_t)c->handshake_ms * 1000;
    conn_set_state(c, CS_HANDSHAKE);
    return STEP_OK;
}

static enum step st_handshake(struct prov_ssh_conn *c)
{
    int rc = libssh2_session_handshake(c->sess, c->fd);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    if (rc)
        return prov_ssh_fail_rc(c, PH_HANDSHAKE, rc, "SSH handshake");
    conn_set_state(c, CS_HOSTKEY);
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
        return prov_ssh_set_fail(c, PROV_SSH_PROTOCOL, "server presented no host key");
    if (!EVP_Digest(blob, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != sizeof md)
        return prov_ssh_set_fail(c, PROV_SSH_NO_MEMORY, "SHA256 of the host key failed");
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
            return prov_ssh_set_fail(c, PROV_SSH_HOSTKEY_MISMATCH,
                                     "host key mismatch: server presented %s %s, pinned %.80s",
                                     c->status.host_key_type, c->status.host_key_sha256, c->pin);
    }
    c->deadline_us = now_us() + (int64_t)c->auth_ms * 1000;
    conn_set_state(c, CS_AUTH);
    return STEP_OK;
}

static enum step st_auth(struct prov_ssh_conn *c)
{
    int rc = libssh2_userauth_publickey_frommemory(c->sess, c->user, strlen(c->user), NULL, 0,
                                                   c->key, c->key_len, NULL);
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    if (rc)
        return prov_ssh_fail_rc(c, PH_AUTH, rc, "public key authentication");
    /* the key is no longer needed: wipe it now */
    explicit_bzero(c->key, c->key_len);
    free(c->key);
    c->key = NULL;
    c->key_len = 0;
    conn_set_state(c, CS_READY);
    c->deadline_us = 0;
    int64_t t = now_us();
    /* a long-lived session (the health monitor's) stays open through NAT and firewalls
     * between its commands, and a dead peer shows up as a failed send */
    libssh2_keepalive_config(c->sess, 1, KEEPALIVE_S);
    c->keepalive_us = t + (int64_t)KEEPALIVE_S * 1000000;
    for (struct exec *e = c->ex_head; e; e = e->next)
        prov_ssh_exec_arm(c, e, t);
    conn_fire(c, PROV_SSH_OK, "connected");
    return STEP_OK; /* CS_READY starts queued execs (unless closed in the cb) */
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
    conn_set_state(c, CS_DISCONNECT);
    return STEP_OK;
}

static enum step st_disconnect(struct prov_ssh_conn *c)
{
    int rc = libssh2_session_disconnect(c->sess, "closing");
    if (rc == LIBSSH2_ERROR_EAGAIN)
        return STEP_AGAIN;
    conn_set_state(c, CS_TEARDOWN);
    return STEP_OK;
}

static enum step st_teardown(struct prov_ssh_conn *c)
{
    conn_hard_teardown(c);
    conn_set_state(c, CS_GONE);
    return STEP_AGAIN;
}

/* ------------------------------------------------------- conn driver */

/* Moves a conn the caller closed into its closing states. */
static void conn_begin_close(struct prov_ssh_conn *c)
{
    if (c->st >= CS_CLOSE_CHANNELS)
        return;
    if (c->st == CS_READY && c->sess) {
        conn_set_state(c, CS_CLOSE_CHANNELS);
        c->deadline_us = now_us() + (int64_t)CLOSE_GRACE_MS * 1000;
    } else {
        conn_set_state(c, CS_TEARDOWN); /* mid-connect or failed: nothing to be graceful about */
    }
}

void prov_ssh_conn_drive(struct prov_ssh_conn *c)
{
    c->turn_bytes = 0; /* a new turn: a new output budget */
    c->turn_spent = 0;
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
        case CS_READY: r = prov_ssh_st_ready(c); break;
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
                conn_set_state(c, CS_TEARDOWN);
                continue;
            }
            conn_fail(c);
        }
    }
}

int prov_ssh_conn_check_timeouts(struct prov_ssh_conn *c, int64_t t)
{
    if (c->deadline_us && t >= c->deadline_us) {
        switch (c->st) {
        case CS_CONNECTING:
            prov_ssh_set_fail(c, prov_ssh_map_err(PH_CONNECT, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                              "connect timed out after %d ms", c->connect_ms);
            conn_fail(c);
            return 1;
        case CS_HANDSHAKE:
            prov_ssh_set_fail(c, prov_ssh_map_err(PH_HANDSHAKE, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                              "SSH handshake timed out after %d ms", c->handshake_ms);
            conn_fail(c);
            return 1;
        case CS_AUTH:
            prov_ssh_set_fail(c, prov_ssh_map_err(PH_AUTH, LIBSSH2_ERROR_TIMEOUT, 0, 0, NULL),
                              "authentication timed out after %d ms", c->auth_ms);
            conn_fail(c);
            return 1;
        case CS_CLOSE_CHANNELS:
        case CS_DISCONNECT: conn_set_state(c, CS_TEARDOWN); return 1;
        default: break;
        }
    }
    if (c->st != CS_READY)
        return 0;
    return prov_ssh_execs_check_timeouts(c, t);
}

/* ------------------------------------------------------- public API */

void prov_ssh_conn_free(struct prov_ssh_conn *c)
{
    conn_hard_teardown(c);
    prov_ssh_execs_free(c);
    if (c->key) {
        explicit_bzero(c->key, c->key_len);
        free(c->key);
    }
    free(c->address);
    free(c->user);
    free(c->pin);
    free(c);
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
        prov_ssh_conn_free(c);
        return NULL;
    }
    c->connect_ms = t->connect_timeout_ms > 0 ? t->connect_timeout_ms : DEFAULT_CONNECT_MS;
    c->handshake_ms = t->handshake_timeout_ms > 0 ? t->handshake_timeout_ms : DEFAULT_HANDSHAKE_MS;
    c->auth_ms = t->auth_timeout_ms > 0 ? t->auth_timeout_ms : DEFAULT_AUTH_MS;
    c->cb = cb;
    c->ctx = ctx;
    conn_set_state(c, CS_START);
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
    prov_ssh_conn_kick(c);
    return c;
}

void prov_ssh_close(struct prov_ssh_conn *c)
{
    if (!c || c->closing)
        return;
    c->closing = 1;
    prov_ssh_conn_kick(c);
    conn_fire(c, PROV_SSH_DISCONNECT, "closed by caller before connecting");
    prov_ssh_execs_fire_all(c, PROV_SSH_DISCONNECT, "session closed by caller");
}
