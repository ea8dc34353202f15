/* SSH engine tests of many sessions: 50 at once, the cost of idle sessions, key types from
 * memory, no secrets in messages; and the benchmark (SSH_BENCH=N). */
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
#include "tests/ssh/harness.h"

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
    else {
        fprintf(stderr, "  exec: %s exit %d, %d GPU lines: %s\n", prov_ssh_err_name(r->err),
                r->exit_status, count_lines_prefix(r->out_tail, "GPU "), r->message);
        m->bad++;
    }
    m->done++;
    prov_ssh_close(c);
}
static void on_many_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    struct many *m = ctx;
    if (st->err == PROV_SSH_OK) {
        m->conn_ok++;
        /* generous like the handshakes below: 50 commands at once on 2 cores shared with
         * make test's other suites (one ran past 10 s in a fresh clone's run) */
        prov_ssh_exec(c, "nvidia-smi -L", 60000, on_many_exec, m);
    } else {
        fprintf(stderr, "  conn: %s %s\n", prov_ssh_err_name(st->err), st->message);
        m->bad++;
        m->done++;
        prov_ssh_close(c);
    }
}

void test_many(void)
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

void test_idle_cost(void)
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
void test_key_types(const char *keydir)
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

void test_no_secrets(void)
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

void bench(int n)
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

/* Issue 25: one host streaming output fast cannot hold the loop. Each session reads at
 * most its byte budget per loop turn (TURN_BYTES), then waits for the others' turn: a
 * short command on another host finishes while the stream goes on. Before, the streaming
 * session's read loop ran as long as data kept coming. */
void test_stream_budget(void)
{
    struct host *ha = host_nth("h100x8", 2), *hb = host_nth("h100x8", 3);
    struct prov_ssh_loop *l = prov_ssh_loop_new();
    struct cres ra = {0}, rb = {0};
    struct prov_ssh_target ta = target_for(ha, 1), tb = target_for(hb, 1);
    struct prov_ssh_conn *ca = prov_ssh_connect(l, &ta, on_conn, &ra);
    struct prov_ssh_conn *cb = prov_ssh_connect(l, &tb, on_conn, &rb);
    run_until(l, &ra.fired, 1, 30000);
    run_until(l, &rb.fired, 1, 30000);
    CHECK(ra.st.err == PROV_SSH_OK && rb.st.err == PROV_SSH_OK, "both connected: %s / %s",
          prov_ssh_err_name(ra.st.err), prov_ssh_err_name(rb.st.err));
    struct xres big = {0}, small = {0};
    prov_ssh_exec(ca, "head -c 4000000000 /dev/zero", 120000, on_exec, &big);
    int64_t t = mono_us() + 1000000; /* the stream under way */
    while (mono_us() < t)
        prov_ssh_loop_run_once(l, 100);
    int64_t t0 = mono_us();
    prov_ssh_exec(cb, "echo ok", 20000, on_exec, &small);
    run_until(l, &small.fired, 1, 60000);
    int64_t dt = mono_us() - t0;
    CHECK(small.fired && small.err == PROV_SSH_OK && small.out && !strcmp(small.out, "ok\n"),
          "the short command ran: %s", prov_ssh_err_name(small.err));
    CHECK(!big.fired, "it finished while the stream went on (the stream ended first)");
    CHECK(dt < 5000000, "the short command took %.2f s beside the stream", (double)dt / 1e6);
    struct prov_ssh_loop_stats st;
    prov_ssh_loop_stats(l, &st);
    CHECK(st.budget_yields > 0 && st.max_turn_bytes <= PROV_SSH_TURN_BYTES + 2 * 16384,
          "a turn read at most the budget: %llu bytes in one turn (budget %d), %llu yields",
          (unsigned long long)st.max_turn_bytes, PROV_SSH_TURN_BYTES,
          (unsigned long long)st.budget_yields);
    fprintf(stderr,
            "  stream budget: short command %.3f s beside a stream; at most %llu bytes per "
            "turn, %llu yields\n",
            (double)dt / 1e6, (unsigned long long)st.max_turn_bytes,
            (unsigned long long)st.budget_yields);
    prov_ssh_close(ca);
    prov_ssh_close(cb);
    int64_t tc = mono_us();
    while (prov_ssh_loop_run_once(l, 100) > 0 && mono_us() - tc < 5000000)
        ;
    xres_free(&big);
    xres_free(&small);
    prov_ssh_loop_free(l);
}
