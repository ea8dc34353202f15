/* SSH engine tests against the simulated fleet (real sshd hosts).
 *
 * Usage: ssh-tests HOSTS_JSON [KEYDIR]
 *   HOSTS_JSON  simfleet hosts.json; needs, in this order of first
 *               appearance: h100x8 (≥ 5), hang, auth_refused,
 *               hostkey_changed, down (tests/ssh/run brings it up)
 *   KEYDIR      optional: id_rsa, id_ecdsa, id_rsa_pem whose public keys
 *               the runner added to the first healthy host
 *   SSH_BENCH=N instead of the tests: `nvidia-smi -L` once on the first N
 *               hosts of HOSTS_JSON from one loop; prints wall and CPU time
 *
 * Ends with "N passed, N failed". */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <libssh2.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "provisioner/ssh/ssh.h"

static int g_pass, g_fail;
static char g_msgs[64 * 1024]; /* every message the engine produced */
static size_t g_msgs_len;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (cond) {                                              \
            g_pass++;                                            \
        } else {                                                 \
            g_fail++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

struct host {
    char name[32], address[64], user[64], keypath[512], fp[80], profile[32];
    int port;
};
static struct host g_hosts[256];
static int g_nhosts;
static char *g_key;
static size_t g_key_len;
static char g_dir[512];

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (cap + 4096) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, 4096, f);
        n += k;
        if (k == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static void note_msg(const char *m)
{
    size_t l = strlen(m);
    if (g_msgs_len + l + 2 < sizeof g_msgs) {
        memcpy(g_msgs + g_msgs_len, m, l);
        g_msgs_len += l;
        g_msgs[g_msgs_len++] = '\n';
        g_msgs[g_msgs_len] = '\0';
    }
}

static int load_hosts(const char *path)
{
    json_error_t je;
    json_t *a = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!a || !json_is_array(a)) {
        fprintf(stderr, "cannot read %s: %s\n", path, je.text);
        json_decref(a);
        return -1;
    }
    size_t i;
    json_t *h;
    json_array_foreach(a, i, h)
    {
        if (g_nhosts >= (int)(sizeof g_hosts / sizeof g_hosts[0]))
            break;
        struct host *x = &g_hosts[g_nhosts++];
        snprintf(x->name, sizeof x->name, "%s", json_string_value(json_object_get(h, "name")));
        snprintf(x->address, sizeof x->address, "%s",
                 json_string_value(json_object_get(h, "address")));
        snprintf(x->user, sizeof x->user, "%s", json_string_value(json_object_get(h, "user")));
        snprintf(x->keypath, sizeof x->keypath, "%s",
                 json_string_value(json_object_get(h, "private_key_path")));
        snprintf(x->fp, sizeof x->fp, "%s",
                 json_string_value(json_object_get(h, "host_key_sha256")));
        snprintf(x->profile, sizeof x->profile, "%s",
                 json_string_value(json_object_get(h, "profile")));
        x->port = (int)json_integer_value(json_object_get(h, "port"));
    }
    json_decref(a);
    if (g_nhosts == 0)
        return -1;
    g_key = read_file(g_hosts[0].keypath, &g_key_len);
    if (!g_key)
        return -1;
    snprintf(g_dir, sizeof g_dir, "%s", g_hosts[0].keypath);
    char *slash = strrchr(g_dir, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

static struct host *host_nth(const char *profile, int nth)
{
    for (int i = 0; i < g_nhosts; i++)
        if (strcmp(g_hosts[i].profile, profile) == 0 && nth-- == 0)
            return &g_hosts[i];
    return NULL;
}

static struct prov_ssh_target target_for(const struct host *h, int pin)
{
    struct prov_ssh_target t = {0};
    t.address = h->address;
    t.port = h->port;
    t.user = h->user;
    t.private_key = g_key;
    t.private_key_len = g_key_len;
    t.pinned_host_key_sha256 = pin ? h->fp : NULL;
    return t;
}

/* ---- callback contexts ---- */

struct cres {
    int fired;
    struct prov_ssh_conn_status st;
    int64_t at_us;
};

static void on_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct cres *r = ctx;
    r->fired++;
    r->st = *st;
    r->at_us = mono_us();
    note_msg(st->message);
}

struct xres {
    int fired;
    enum prov_ssh_err err;
    int exit_status, timed_out, exec_sent;
    char sig[32];
    char *out, *errs; /* tails */
    size_t out_total, err_total, out_len, err_len;
    int64_t duration_us, at_us;
};

static void on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct xres *x = ctx;
    x->fired++;
    x->err = r->err;
    x->exit_status = r->exit_status;
    x->timed_out = r->timed_out;
    x->exec_sent = r->exec_sent;
    snprintf(x->sig, sizeof x->sig, "%s", r->exit_signal ? r->exit_signal : "");
    x->out_total = r->out_total;
    x->err_total = r->err_total;
    x->out_len = r->out_total < 8192 ? r->out_total : 8192;
    x->err_len = r->err_total < 8192 ? r->err_total : 8192;
    free(x->out);
    free(x->errs);
    x->out = malloc(x->out_len + 1);
    x->errs = malloc(x->err_len + 1);
    memcpy(x->out, r->out_tail, x->out_len + 1);
    memcpy(x->errs, r->err_tail, x->err_len + 1);
    x->duration_us = r->duration_us;
    x->at_us = mono_us();
    note_msg(r->message);
}

static void xres_free(struct xres *x)
{
    free(x->out);
    free(x->errs);
    memset(x, 0, sizeof *x);
}

static void run_until(struct prov_ssh_loop *l, const int *flag, int want, int timeout_ms)
{
    int64_t end = mono_us() + (int64_t)timeout_ms * 1000;
    while (*flag < want && mono_us() < end)
        prov_ssh_loop_run_once(l, 100);
}

static int count_lines_prefix(const char *s, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    while (s && *s) {
        if (strncmp(s, prefix, pl) == 0)
            n++;
        const char *nl = strchr(s, '\n');
        if (!nl)
            break;
        s = nl + 1;
    }
    return n;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* ---- tests ---- */

/* error names and classes (the address policy has its unit tests: test_netpolicy.c) */
static void test_policy(void)
{
    CHECK(strcmp(prov_ssh_err_name(PROV_SSH_TIMEOUT), "timed_out") == 0, "err name");
    CHECK(strcmp(prov_ssh_err_name(PROV_SSH_HOSTKEY_MISMATCH), "host_key_mismatch") == 0, "name");
    CHECK(prov_ssh_err_transient(PROV_SSH_REFUSED) && prov_ssh_err_transient(PROV_SSH_TIMEOUT) &&
              prov_ssh_err_transient(PROV_SSH_RESET) &&
              prov_ssh_err_transient(PROV_SSH_DISCONNECT) &&
              !prov_ssh_err_transient(PROV_SSH_AUTH_FAILED) &&
              !prov_ssh_err_transient(PROV_SSH_HOSTKEY_MISMATCH) &&
              !prov_ssh_err_transient(PROV_SSH_PROTOCOL),
          "transient classes");
}

/* healthy host: nvidia-smi -L, pin matches, 3 at once, exit 3, 20 KiB tails */
static void test_healthy(void)
{
    struct host *h = host_nth("h100x8", 0);
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct xres x[8] = {{0}};
    struct prov_ssh_target t = target_for(h, 1);
    struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
    CHECK(c != NULL, "connect");
    run_until(l, &cr.fired, 1, 15000);
    CHECK(cr.fired == 1 && cr.st.err == PROV_SSH_OK, "connect ok: %s %s",
          prov_ssh_err_name(cr.st.err), cr.st.message);
    CHECK(strcmp(cr.st.host_key_sha256, h->fp) == 0, "fingerprint %s vs %s", cr.st.host_key_sha256,
          h->fp);
    CHECK(cr.st.host_key_type && strcmp(cr.st.host_key_type, "ssh-ed25519") == 0, "key type");
    printf("  negotiated with %s: %s\n", h->name, cr.st.algorithms);
    CHECK(strstr(cr.st.algorithms, "kex=curve25519-sha256") && strstr(cr.st.algorithms, "-ctr") &&
              strstr(cr.st.algorithms, "mac=hmac-sha2-") && !strstr(cr.st.algorithms, "etm"),
          "Terrapin-safe algorithms negotiated: %s", cr.st.algorithms);

    int done = 0;
    CHECK(prov_ssh_exec(c, "nvidia-smi -L", 10000, on_exec, &x[0]) == 0, "exec");
    run_until(l, &x[0].fired, 1, 15000);
    CHECK(x[0].fired == 1 && x[0].err == PROV_SSH_OK && x[0].exit_status == 0,
          "nvidia-smi -L: %s exit %d", prov_ssh_err_name(x[0].err), x[0].exit_status);
    CHECK(x[0].exec_sent == 1, "a command that ran was sent");
    CHECK(count_lines_prefix(x[0].out, "GPU ") == 8, "8 GPU lines: %s", x[0].out ? x[0].out : "");
    CHECK(x[0].out && strstr(x[0].out, "NVIDIA H100 80GB HBM3"), "H100 name");

    /* three at once on one session: each sleeps 0.4 s; together < 1.1 s */
    int64_t t0 = mono_us();
    prov_ssh_exec(c, "sleep 0.4; echo one", 10000, on_exec, &x[1]);
    prov_ssh_exec(c, "sleep 0.4; echo two >&2", 10000, on_exec, &x[2]);
    prov_ssh_exec(c, "sleep 0.4; nvidia-smi -L | wc -l", 10000, on_exec, &x[3]);
    for (;;) {
        done = x[1].fired + x[2].fired + x[3].fired;
        if (done >= 3 || mono_us() - t0 > 15000000)
            break;
        prov_ssh_loop_run_once(l, 100);
    }
    int64_t el = mono_us() - t0;
    CHECK(done == 3 && x[1].err == PROV_SSH_OK && x[2].err == PROV_SSH_OK && x[3].err == 0,
          "3 concurrent");
    CHECK(x[1].out && strcmp(x[1].out, "one\n") == 0, "out one");
    CHECK(x[2].errs && strcmp(x[2].errs, "two\n") == 0 && x[2].out_total == 0, "err two");
    CHECK(x[3].out && strcmp(x[3].out, "8\n") == 0, "wc: %s", x[3].out ? x[3].out : "");
    CHECK(el < 1100000, "3 commands ran concurrently (%lld ms)", (long long)(el / 1000));

    /* non-zero exit with stderr */
    prov_ssh_exec(c, "sh -c 'echo oops >&2; exit 3'", 10000, on_exec, &x[4]);
    run_until(l, &x[4].fired, 1, 15000);
    CHECK(x[4].err == PROV_SSH_OK && x[4].exit_status == 3 && !x[4].timed_out, "exit 3: %s %d",
          prov_ssh_err_name(x[4].err), x[4].exit_status);
    CHECK(x[4].errs && strcmp(x[4].errs, "oops\n") == 0, "stderr tail");

    /* 20+ KiB on stdout and stderr: last 8 KiB kept, totals counted */
    prov_ssh_exec(c, "seq 1 5000; seq 1 5000 >&2", 10000, on_exec, &x[5]);
    run_until(l, &x[5].fired, 1, 15000);
    char *exp = malloc(32768);
    size_t el2 = 0;
    for (int i = 1; i <= 5000; i++)
        el2 += (size_t)sprintf(exp + el2, "%d\n", i);
    CHECK(x[5].err == PROV_SSH_OK && x[5].exit_status == 0, "seq ran");
    CHECK(x[5].out_total == el2 && x[5].err_total == el2, "totals %zu/%zu vs %zu", x[5].out_total,
          x[5].err_total, el2);
    CHECK(x[5].out_len == 8192 && x[5].out && memcmp(x[5].out, exp + el2 - 8192, 8192) == 0 &&
              x[5].out[8192] == '\0',
          "stdout tail = last 8 KiB");
    CHECK(x[5].errs && memcmp(x[5].errs, exp + el2 - 8192, 8192) == 0, "stderr tail");
    free(exp);

    /* a signal: exit_signal set, exit_status -1 */
    prov_ssh_exec(c, "kill -KILL $$", 10000, on_exec, &x[6]);
    run_until(l, &x[6].fired, 1, 15000);
    CHECK(x[6].err == PROV_SSH_OK && strcmp(x[6].sig, "KILL") == 0 && x[6].exit_status == -1,
          "signal: sig '%s' status %d", x[6].sig, x[6].exit_status);

    /* stdin gets EOF: cat returns at once */
    prov_ssh_exec(c, "cat; echo done", 5000, on_exec, &x[7]);
    run_until(l, &x[7].fired, 1, 8000);
    CHECK(x[7].err == PROV_SSH_OK && x[7].out && strcmp(x[7].out, "done\n") == 0, "stdin EOF");

    /* close with execs pending: their cb fires once with DISCONNECT */
    struct xres p1 = {0}, p2 = {0};
    prov_ssh_exec(c, "sleep 5", 10000, on_exec, &p1);
    prov_ssh_exec(c, "sleep 5", 10000, on_exec, &p2);
    prov_ssh_loop_run_once(l, 50);
    prov_ssh_close(c);
    CHECK(p1.fired == 1 && p2.fired == 1 && p1.err == PROV_SSH_DISCONNECT &&
              p2.err == PROV_SSH_DISCONNECT,
          "pending execs get DISCONNECT on close");
    int64_t tc = mono_us();
    while (prov_ssh_loop_run_once(l, 100) > 0 && mono_us() - tc < 5000000)
        ;
    CHECK(prov_ssh_loop_run_once(l, 0) == 0, "session freed after close");
    CHECK(mono_us() - tc < 1500000, "close did not wait for the sleeping commands");
    CHECK(cr.fired == 1 && p1.fired == 1, "callbacks fired exactly once");
    prov_ssh_loop_free(l);
    for (int i = 0; i < 8; i++)
        xres_free(&x[i]);
    xres_free(&p1);
    xres_free(&p2);
}

/* hang: command timeout while a healthy session keeps completing commands */
struct chain {
    struct prov_ssh_conn *c;
    int n, want;
    int64_t done_at[16];
    int errors;
};

static void on_chain(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    struct chain *ch = ctx;
    if (r->err != PROV_SSH_OK || r->exit_status != 0)
        ch->errors++;
    ch->done_at[ch->n++] = mono_us();
    if (ch->n < ch->want)
        prov_ssh_exec(c, "sleep 0.1; nvidia-smi -L", 5000, on_chain, ch);
}

static void test_hang(void)
{
    struct host *hh = host_nth("hang", 0), *h = host_nth("h100x8", 1);
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct xres x = {0}, alive = {0};
    struct chain ch = {.want = 6};
    char log[600];
    snprintf(log, sizeof log, "%s/%s/argv.log", g_dir, hh->name);
    long before = file_size(log);

    /* both sessions connected first, so only the commands are timed */
    struct cres cr2 = {0};
    struct prov_ssh_target t = target_for(hh, 1);
    struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
    struct prov_ssh_target t2 = target_for(h, 1);
    struct prov_ssh_conn *c2 = prov_ssh_connect(l, &t2, on_conn, &cr2);
    run_until(l, &cr.fired, 1, 30000);
    run_until(l, &cr2.fired, 1, 30000);
    CHECK(cr.st.err == PROV_SSH_OK, "hang host connects: %s", cr.st.message);
    CHECK(cr2.st.err == PROV_SSH_OK, "healthy host connects: %s", cr2.st.message);
    int64_t t0 = mono_us();
    prov_ssh_exec(c, "nvidia-smi -L", 1500, on_exec, &x);
    ch.c = c2;
    prov_ssh_exec(c2, "sleep 0.1; nvidia-smi -L", 5000, on_chain, &ch);
    run_until(l, &x.fired, 1, 10000);
    CHECK(x.fired == 1 && x.err == PROV_SSH_TIMEOUT && x.timed_out == 1 && x.exit_status == -1,
          "hang times out: %s timed_out=%d", prov_ssh_err_name(x.err), x.timed_out);
    CHECK(x.exec_sent == 1, "the hung command had been started (exec_sent)");
    CHECK(x.duration_us >= 1400000 && x.duration_us < 3000000, "timeout after ~1.5 s: %lld ms",
          (long long)(x.duration_us / 1000));
    int during = 0;
    for (int i = 0; i < ch.n; i++)
        during += ch.done_at[i] < x.at_us;
    CHECK(during >= 3,
          "healthy session completed %d commands while the hang was pending "
          "(%lld ms)",
          during, (long long)((x.at_us - t0) / 1000));
    CHECK(file_size(log) > before, "hang host logged the call");
    /* the session survives: the hung channel was closed, a new one works */
    prov_ssh_exec(c, "echo alive", 5000, on_exec, &alive);
    run_until(l, &alive.fired, 1, 8000);
    CHECK(alive.err == PROV_SSH_OK && alive.out && strcmp(alive.out, "alive\n") == 0,
          "session usable after a timed-out command: %s", alive.out ? alive.out : "");
    run_until(l, &ch.n, ch.want, 15000);
    CHECK(ch.n == ch.want && ch.errors == 0, "chain finished %d/%d errors %d", ch.n, ch.want,
          ch.errors);
    prov_ssh_close(c);
    prov_ssh_close(c2);
    prov_ssh_loop_free(l);
    xres_free(&x);
    xres_free(&alive);
}

static void expect_conn_fail(const char *what, struct prov_ssh_target *t, enum prov_ssh_err want,
                             struct cres *out, int timeout_ms)
{
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct xres x = {0};
    struct prov_ssh_conn *c = prov_ssh_connect(l, t, on_conn, &cr);
    int q = prov_ssh_exec(c, "nvidia-smi -L", 5000, on_exec, &x);
    run_until(l, &cr.fired, 1, timeout_ms);
    run_until(l, &x.fired, 1, 2000);
    CHECK(cr.fired == 1 && cr.st.err == want, "%s: want %s got %s (%s)", what,
          prov_ssh_err_name(want), prov_ssh_err_name(cr.st.err), cr.st.message);
    CHECK(q == 0 && x.fired == 1 && x.err == want, "%s: queued exec failed with it too", what);
    CHECK(x.exec_sent == 0, "%s: the queued command was never sent", what);
    CHECK(prov_ssh_exec(c, "true", 1000, on_exec, &x) == -1, "%s: exec after failure refused",
          what);
    if (out)
        *out = cr;
    prov_ssh_close(c);
    prov_ssh_loop_free(l);
    xres_free(&x);
}

static void test_failures(void)
{
    struct cres cr;
    struct host *h;
    char path[600];

    h = host_nth("auth_refused", 0);
    struct prov_ssh_target t = target_for(h, 1);
    expect_conn_fail("auth_refused", &t, PROV_SSH_AUTH_FAILED, &cr, 15000);
    CHECK(strcmp(cr.st.host_key_sha256, h->fp) == 0, "auth_refused: key known before auth");

    h = host_nth("hostkey_changed", 0);
    snprintf(path, sizeof path, "%s/%s/argv.log", g_dir, h->name);
    t = target_for(h, 1);
    expect_conn_fail("hostkey_changed", &t, PROV_SSH_HOSTKEY_MISMATCH, &cr, 15000);
    CHECK(cr.st.host_key_sha256[0] && strcmp(cr.st.host_key_sha256, h->fp) != 0,
          "mismatch reports the presented key");
    CHECK(strstr(cr.st.message, cr.st.host_key_sha256) != NULL, "message names the key");
    usleep(300000);
    CHECK(file_size(path) == 0, "hostkey_changed: argv.log empty (%ld)", file_size(path));
    snprintf(path, sizeof path, "%s/%s/sshd.log", g_dir, h->name);
    char *sl = read_file(path, NULL);
    CHECK(sl && !strstr(sl, "Accepted publickey") && !strstr(sl, "Failed publickey"),
          "hostkey_changed: no authentication attempt in sshd.log");
    free(sl);

    h = host_nth("down", 0);
    t = target_for(h, 1);
    expect_conn_fail("down", &t, PROV_SSH_REFUSED, NULL, 10000);

    struct prov_ssh_target t2 = target_for(host_nth("h100x8", 0), 1);
    t2.address = "127.0.230.250";
    expect_conn_fail("closed port", &t2, PROV_SSH_REFUSED, NULL, 10000);

    t2.address = "169.254.169.254";
    expect_conn_fail("metadata address", &t2, PROV_SSH_ADDRESS_NOT_ALLOWED, NULL, 2000);
    t2.address = "localhost";
    expect_conn_fail("host name", &t2, PROV_SSH_ADDRESS_NOT_ALLOWED, NULL, 2000);

    /* handshake timeout: a listener that accepts (kernel backlog) and never speaks */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.230.251", &sa.sin_addr);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl2 = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 16) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &sl2) != 0) {
        CHECK(0, "silent listener: %s", strerror(errno));
    } else {
        t2.address = "127.0.230.251";
        t2.port = ntohs(sa.sin_port);
        t2.handshake_timeout_ms = 700;
        int64_t t0 = mono_us();
        expect_conn_fail("silent server", &t2, PROV_SSH_TIMEOUT, &cr, 5000);
        int64_t el = mono_us() - t0;
        CHECK(strstr(cr.st.message, "handshake") != NULL, "handshake timeout message: %s",
              cr.st.message);
        CHECK(el >= 650000 && el < 2500000, "handshake timeout took %lld ms",
              (long long)(el / 1000));
    }
    if (ls >= 0)
        close(ls);

    /* a garbage key: auth_failed, and the key text never appears in a message */
    struct prov_ssh_target t3 = target_for(host_nth("h100x8", 0), 1);
    static const char bogus[] = "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRETSECRET\n"
                                "-----END OPENSSH PRIVATE KEY-----\n";
    t3.private_key = bogus;
    t3.private_key_len = sizeof bogus - 1;
    expect_conn_fail("garbage key", &t3, PROV_SSH_AUTH_FAILED, &cr, 15000);
}

/* exec_sent: 1 once the server accepted the exec request, whatever happens afterwards;
 * 0 for a command that never got that far. */
static void test_exec_sent(void)
{
    struct host *h = host_nth("h100x8", 3);
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct xres queued = {0}, ran = {0}, dropped = {0}, after = {0};
    struct prov_ssh_target t = target_for(h, 1);
    /* queued on a session closed before it ever ran */
    struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
    CHECK(prov_ssh_exec(c, "true", 5000, on_exec, &queued) == 0, "exec queued");
    prov_ssh_close(c);
    CHECK(queued.fired == 1 && queued.err == PROV_SSH_DISCONNECT && queued.exec_sent == 0,
          "closed before it ran: %s exec_sent=%d", prov_ssh_err_name(queued.err), queued.exec_sent);
    /* a non-zero exit was still sent */
    memset(&cr, 0, sizeof cr);
    c = prov_ssh_connect(l, &t, on_conn, &cr);
    prov_ssh_exec(c, "exit 4", 5000, on_exec, &ran);
    run_until(l, &ran.fired, 1, 15000);
    CHECK(ran.err == PROV_SSH_OK && ran.exit_status == 4 && ran.exec_sent == 1,
          "exit 4: %s %d exec_sent=%d", prov_ssh_err_name(ran.err), ran.exit_status, ran.exec_sent);
    /* the session dies under the running command (its sshd is killed, as when a host
     * powers off): the command was sent, the result is an error */
    prov_ssh_exec(c, "sleep 0.2; kill -KILL $PPID; sleep 5", 10000, on_exec, &dropped);
    run_until(l, &dropped.fired, 1, 15000);
    CHECK(dropped.fired == 1 && dropped.err != PROV_SSH_OK && dropped.exec_sent == 1,
          "dropped session: %s exec_sent=%d (%s)", prov_ssh_err_name(dropped.err),
          dropped.exec_sent, dropped.out ? dropped.out : "");
    /* and nothing can be sent on it any more */
    int q = prov_ssh_exec(c, "true", 1000, on_exec, &after);
    if (q == 0)
        run_until(l, &after.fired, 1, 5000);
    CHECK(q == -1 || (after.err != PROV_SSH_OK && after.exec_sent == 0),
          "after the drop: refused or never sent");
    prov_ssh_close(c);
    prov_ssh_loop_free(l);
    xres_free(&queued);
    xres_free(&ran);
    xres_free(&dropped);
    xres_free(&after);
}

/* no pin: first contact reports the fingerprint */
static void test_first_contact(void)
{
    struct host *h = host_nth("h100x8", 2);
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres cr = {0};
    struct prov_ssh_target t = target_for(h, 0);
    struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
    run_until(l, &cr.fired, 1, 15000);
    CHECK(cr.st.err == PROV_SSH_OK, "no pin connects");
    CHECK(strcmp(cr.st.host_key_sha256, h->fp) == 0, "observed fingerprint %s = %s",
          cr.st.host_key_sha256, h->fp);
    prov_ssh_close(c);
    prov_ssh_loop_free(l);
}

/* 50 sessions at once, 10 per healthy host */
struct many {
    int conn_ok, exec_ok, done, bad;
};
static void on_many_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    struct many *m = ctx;
    if (r->err == PROV_SSH_OK && r->exit_status == 0 &&
        count_lines_prefix(r->out_tail, "GPU ") == 8)
        m->exec_ok++;
    else
        m->bad++;
    m->done++;
    prov_ssh_close(c);
}
static void on_many_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    struct many *m = ctx;
    if (st->err == PROV_SSH_OK) {
        m->conn_ok++;
        prov_ssh_exec(c, "nvidia-smi -L", 10000, on_many_exec, m);
    } else {
        fprintf(stderr, "  conn: %s %s\n", prov_ssh_err_name(st->err), st->message);
        m->bad++;
        m->done++;
        prov_ssh_close(c);
    }
}

static void test_many(void)
{
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct many m = {0};
    int n = 0;
    for (int k = 0; k < 5; k++) {
        struct host *h = host_nth("h100x8", k);
        if (!h)
            break;
        for (int j = 0; j < 10; j++) {
            struct prov_ssh_target t = target_for(h, 1);
            /* generous: 50 kex on 2 cores shared with 50 sshd, maybe under ASan */
            t.handshake_timeout_ms = 60000;
            t.auth_timeout_ms = 60000;
            prov_ssh_connect(l, &t, on_many_conn, &m);
            n++;
        }
    }
    CHECK(n == 50, "50 sessions started (%d)", n);
    run_until(l, &m.done, n, 120000);
    CHECK(m.conn_ok == 50 && m.exec_ok == 50 && m.bad == 0, "50 concurrent: conn %d exec %d bad %d",
          m.conn_ok, m.exec_ok, m.bad);
    int64_t t0 = mono_us();
    while (prov_ssh_loop_run_once(l, 100) > 0 && mono_us() - t0 < 5000000)
        ;
    CHECK(prov_ssh_loop_run_once(l, 0) == 0, "all 50 freed");
    prov_ssh_loop_free(l);
}

/* The loop's cost follows what is ready: 20 idle ready sessions are not driven at all
 * while nothing happens (no socket interest, no deadline before the keepalive), one
 * command drives its own session only, and a wake-up fd cuts a wait short. */
struct idle {
    int up, done, ok;
};
static void on_idle_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct idle *x = ctx;
    x->ok += r->err == PROV_SSH_OK && r->exit_status == 0;
    x->done++;
}
static void on_idle_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct idle *x = ctx;
    x->up += st->err == PROV_SSH_OK;
    x->done++;
}

static void test_idle_cost(void)
{
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct prov_ssh_conn *cs[20];
    struct idle x = {0};
    int n = 0;
    for (int k = 0; k < 5; k++)
        for (int j = 0; j < 4; j++) {
            struct prov_ssh_target t = target_for(host_nth("h100x8", k), 1);
            t.handshake_timeout_ms = 60000;
            t.auth_timeout_ms = 60000;
            cs[n++] = prov_ssh_connect(l, &t, on_idle_conn, &x);
        }
    run_until(l, &x.done, n, 120000);
    CHECK(x.up == 20, "20 idle sessions up (%d)", x.up);
    struct prov_ssh_loop_stats a, b;
    prov_ssh_loop_stats(l, &a);
    int64_t t0 = mono_us();
    for (int i = 0; i < 3; i++)
        prov_ssh_loop_run_once(l, 300);
    int64_t waited_ms = (mono_us() - t0) / 1000;
    prov_ssh_loop_stats(l, &b);
    CHECK(b.drives == a.drives, "idle sessions are not driven (%llu drives in 3 waits)",
          (unsigned long long)(b.drives - a.drives));
    CHECK(waited_ms >= 800, "an idle loop waits out its timeout (%lld ms for 3 × 300 ms)",
          (long long)waited_ms);

    struct idle y = {0};
    prov_ssh_loop_stats(l, &a);
    CHECK(prov_ssh_exec(cs[7], "nvidia-smi -L", 10000, on_idle_exec, &y) == 0, "exec queued");
    run_until(l, &y.done, 1, 15000);
    prov_ssh_loop_stats(l, &b);
    CHECK(y.ok == 1, "the command ran on an idle session");
    /* one session's open, exec, read and close: a handful of drives, none of the other 19 */
    CHECK(b.drives - a.drives <= (uint64_t)(b.wakeups - a.wakeups),
          "one command drives its session only (%llu drives in %llu wake-ups)",
          (unsigned long long)(b.drives - a.drives), (unsigned long long)(b.wakeups - a.wakeups));

    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CHECK(efd >= 0 && prov_ssh_loop_wake_on(l, efd) == 0, "wake-up fd registered");
    uint64_t one = 1;
    CHECK(write(efd, &one, sizeof one) == sizeof one, "wake-up fd written");
    t0 = mono_us();
    prov_ssh_loop_run_once(l, 5000);
    int64_t woke_ms = (mono_us() - t0) / 1000;
    CHECK(woke_ms < 1000, "a readable wake-up fd ends the wait (%lld ms of 5000)",
          (long long)woke_ms);
    CHECK(read(efd, &one, sizeof one) == sizeof one, "wake-up fd drained");
    t0 = mono_us();
    prov_ssh_loop_run_once(l, 300);
    CHECK(mono_us() - t0 >= 250000, "a drained wake-up fd no longer wakes the loop");
    for (int i = 0; i < n; i++)
        prov_ssh_close(cs[i]);
    t0 = mono_us();
    while (prov_ssh_loop_run_once(l, 100) > 0 && mono_us() - t0 < 5000000)
        ;
    CHECK(prov_ssh_loop_run_once(l, 0) == 0, "all 20 freed");
    prov_ssh_loop_free(l);
    close(efd);
}

/* key types from memory */
static void test_key_types(const char *keydir)
{
    static const struct {
        const char *file;
        int expect_ok;
    } keys[] = {
        {"id_ecdsa", 1},       /* ecdsa-sha2-nistp256, OpenSSH format */
        {"id_ecdsa384", 1},    /* ecdsa-sha2-nistp384 */
        {"id_rsa", 0},         /* libssh2 1.10 signs "ssh-rsa" (SHA-1): OpenSSH 9.2 refuses */
        {"id_rsa_pem", 0},     /* same, PEM format */
        {"id_ed25519_pem", 1}, /* ed25519 again, from the runner's copy */
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char path[600];
        size_t kl = 0;
        snprintf(path, sizeof path, "%s/%s", keydir, keys[i].file);
        char *key = read_file(path, &kl);
        if (!key) {
            CHECK(0, "key %s missing", path);
            continue;
        }
        struct prov_ssh_loop *l = prov_ssh_loop_new();
        struct cres cr = {0};
        struct xres x = {0};
        struct prov_ssh_target t = target_for(host_nth("h100x8", 0), 1);
        t.private_key = key;
        t.private_key_len = kl;
        struct prov_ssh_conn *c = prov_ssh_connect(l, &t, on_conn, &cr);
        prov_ssh_exec(c, "echo ok", 5000, on_exec, &x);
        run_until(l, &x.fired, 1, 15000);
        int ok =
            cr.st.err == PROV_SSH_OK && x.err == PROV_SSH_OK && x.out && strcmp(x.out, "ok\n") == 0;
        printf("  key %-15s from memory: %s (%s)\n", keys[i].file, ok ? "accepted" : "refused",
               ok ? "" : cr.st.message);
        CHECK(ok == keys[i].expect_ok, "key %s: expected %s, got %s: %s", keys[i].file,
              keys[i].expect_ok ? "accepted" : "auth_failed", prov_ssh_err_name(cr.st.err),
              cr.st.message);
        if (!keys[i].expect_ok)
            CHECK(cr.st.err == PROV_SSH_AUTH_FAILED, "key %s refused as auth_failed", keys[i].file);
        /* no key material in messages */
        char chunk[25];
        const char *body = strchr(key, '\n');
        if (body && strlen(body) > 30) {
            memcpy(chunk, body + 1, 24);
            chunk[24] = '\0';
            CHECK(!strstr(g_msgs, chunk), "key material leaked into a message");
        }
        prov_ssh_close(c);
        prov_ssh_loop_free(l);
        xres_free(&x);
        explicit_bzero(key, kl);
        free(key);
    }
}

static void test_no_secrets(void)
{
    CHECK(!strstr(g_msgs, "PRIVATE KEY") && !strstr(g_msgs, "SECRETSECRET"),
          "no key text in any message");
    /* a 24-char chunk of the fleet key's base64 body */
    const char *body = strchr(g_key, '\n');
    char chunk[25] = {0};
    if (body && strlen(body) > 60)
        memcpy(chunk, body + 30, 24);
    CHECK(chunk[0] && !strstr(g_msgs, chunk), "fleet key body not in messages");
}

/* ---- benchmark: nvidia-smi -L once on N hosts from one loop ---- */
struct bench {
    int ok, bad, done, cmds; /* cmds: commands per host, one after another */
};
struct bench_host {
    struct bench *b;
    int left;
};
static void on_bench_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    struct bench_host *bh = ctx;
    struct bench *b = bh->b;
    if (r->err == PROV_SSH_OK && r->exit_status == 0 && --bh->left > 0 &&
        prov_ssh_exec(c, "nvidia-smi -L", 30000, on_bench_exec, bh) == 0)
        return;
    if (r->err == PROV_SSH_OK && r->exit_status == 0)
        b->ok++;
    else
        b->bad++;
    b->done++;
    prov_ssh_close(c);
}
static void on_bench_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    struct bench_host *bh = ctx;
    struct bench *b = bh->b;
    if (st->err == PROV_SSH_OK) {
        prov_ssh_exec(c, "nvidia-smi -L", 30000, on_bench_exec, bh);
    } else {
        fprintf(stderr, "  %s %s\n", prov_ssh_err_name(st->err), st->message);
        b->bad++;
        b->done++;
        prov_ssh_close(c);
    }
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

static void bench(int n)
{
    if (n > g_nhosts)
        n = g_nhosts;
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct bench b = {0};
    const char *cm = getenv("SSH_BENCH_CMDS");
    b.cmds = cm && atoi(cm) > 0 ? atoi(cm) : 1;
    struct bench_host *bh = calloc((size_t)n, sizeof *bh);
    double c0 = cpu_ms();
    int64_t t0 = mono_us();
    for (int i = 0; i < n; i++) {
        struct prov_ssh_target t = target_for(&g_hosts[i], 1);
        t.connect_timeout_ms = 30000;
        t.handshake_timeout_ms = 30000;
        t.auth_timeout_ms = 30000;
        bh[i].b = &b;
        bh[i].left = b.cmds;
        prov_ssh_connect(l, &t, on_bench_conn, &bh[i]);
    }
    while (b.done < n && mono_us() - t0 < 120000000)
        prov_ssh_loop_run_once(l, 1000);
    while (prov_ssh_loop_run_once(l, 100) > 0 && mono_us() - t0 < 130000000)
        ;
    double wall = (double)(mono_us() - t0) / 1000.0;
    double cpu = cpu_ms() - c0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("bench: %d hosts x %d sequential `nvidia-smi -L`, ok %d, failed %d, wall %.0f ms, CPU "
           "%.0f ms (%.2f ms/host), "
           "peak RSS %ld KiB\n",
           n, b.cmds, b.ok, b.bad, wall, cpu, cpu / n, ru.ru_maxrss);
    prov_ssh_loop_free(l);
    free(bh);
    CHECK(b.ok == n, "bench all ok");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOSTS_JSON [KEYDIR]\n", argv[0]);
        printf("0 passed, 1 failed\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (libssh2_init(0) != 0 || load_hosts(argv[1]) != 0) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    const char *bn = getenv("SSH_BENCH");
    if (bn && atoi(bn) > 0) {
        bench(atoi(bn));
    } else {
        int need_ok = host_nth("h100x8", 4) && host_nth("hang", 0) && host_nth("auth_refused", 0) &&
                      host_nth("hostkey_changed", 0) && host_nth("down", 0);
        CHECK(need_ok, "hosts.json has 5×h100x8, hang, auth_refused, hostkey_changed, down");
        test_policy();
        if (need_ok) {
            test_healthy();
            test_hang();
            test_failures();
            test_first_contact();
            test_exec_sent();
            test_many();
            test_idle_cost();
            if (argc > 2)
                test_key_types(argv[2]);
            else
                CHECK(0, "no KEYDIR: key type tests cannot run");
            test_no_secrets();
        }
    }
    explicit_bzero(g_key, g_key_len);
    free(g_key);
    libssh2_exit();
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
