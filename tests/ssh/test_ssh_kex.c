/* SSH engine test: a server that stops in the middle of the key exchange. It sends its
 * banner and a KEXINIT, reads the client's KEXINIT and key-exchange init (libssh2 has made
 * its curve25519 key pair by then), and never answers. The handshake times out and the
 * session is freed mid-exchange: libssh2 1.10 forgets the key pair there, and the engine's
 * allocator (common/ptrset.h, provisioner/ssh/connect.c) frees it with the session, so
 * LeakSanitizer (this binary's ASan build, in make test) finds nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "provisioner/ssh/ssh.h"
#include "tests/ssh/harness.h"

static size_t put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
    return 4;
}

static size_t put_list(unsigned char *p, const char *s)
{
    size_t n = strlen(s);
    put_u32(p, (uint32_t)n);
    memcpy(p + 4, s, n);
    return 4 + n;
}

/* The server's banner and an unencrypted KEXINIT packet (RFC 4253 §6, §7.1) offering what
 * the engine prefers: curve25519-sha256, ssh-ed25519, aes256-ctr, hmac-sha2-256. */
static size_t kexinit(unsigned char *out)
{
    static const char *lists[] = {
        "curve25519-sha256", "ssh-ed25519", "aes256-ctr", "aes256-ctr", "hmac-sha2-256",
        "hmac-sha2-256",     "none",        "none",       "",           ""};
    unsigned char payload[512];
    size_t n = 0;
    payload[n++] = 20; /* SSH_MSG_KEXINIT */
    memset(payload + n, 0x5a, 16);
    n += 16;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        n += put_list(payload + n, lists[i]);
    payload[n++] = 0; /* first_kex_packet_follows */
    n += put_u32(payload + n, 0);
    size_t pad = 8 - (4 + 1 + n) % 8;
    if (pad < 4)
        pad += 8;
    static const char banner[] = "SSH-2.0-OpenSSH_9.2p1 stalled-kex\r\n";
    size_t m = strlen(banner);
    memcpy(out, banner, m);
    m += put_u32(out + m, (uint32_t)(1 + n + pad));
    out[m++] = (unsigned char)pad;
    memcpy(out + m, payload, n);
    m += n;
    memset(out + m, 0, pad);
    return m + pad;
}

struct stall {
    int ls;
    size_t got; /* bytes the client sent before it closed */
};

static void *stall_server(void *arg)
{
    struct stall *s = arg;
    int fd = accept(s->ls, NULL, NULL);
    if (fd < 0)
        return NULL;
    unsigned char hello[600], buf[4096];
    size_t n = kexinit(hello);
    if (write(fd, hello, n) == (ssize_t)n) {
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) /* until the client gives up */
            s->got += (size_t)r;
    }
    close(fd);
    return NULL;
}

void test_kex_stall(void)
{
    struct stall s = {.ls = socket(AF_INET, SOCK_STREAM, 0)};
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.230.252", &sa.sin_addr);
    socklen_t sl = sizeof sa;
    pthread_t th;
    if (s.ls < 0 || bind(s.ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s.ls, 4) != 0 ||
        getsockname(s.ls, (struct sockaddr *)&sa, &sl) != 0 ||
        pthread_create(&th, NULL, stall_server, &s) != 0) {
        CHECK(0, "stalled-kex server: %s", strerror(errno));
        if (s.ls >= 0)
            close(s.ls);
        return;
    }
    struct prov_ssh_target t = target_for(host_nth("h100x8", 0), 1);
    t.address = "127.0.230.252";
    t.port = ntohs(sa.sin_port);
    t.handshake_timeout_ms = 1500;
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
    run_until(l, &cr.fired, 1, 10000);
    CHECK(cr.fired == 1 && cr.st.err == PROV_SSH_TIMEOUT && strstr(cr.st.message, "handshake"),
          "stalled key exchange: want a handshake timeout, got %s (%s)",
          prov_ssh_err_name(cr.st.err), cr.st.message);
    prov_ssh_close(c);
    prov_ssh_loop_free(l); /* the session is freed here, in the middle of the exchange */
    pthread_join(th, NULL);
    close(s.ls);
    /* the client sent its banner, its KEXINIT and its key-exchange init (a 32-byte
     * curve25519 public key): the exchange was under way when it was cut */
    CHECK(s.got > 64 + 32, "stalled key exchange: the client sent %zu bytes", s.got);
}
