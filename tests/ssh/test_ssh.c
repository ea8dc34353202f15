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
#include "tests/ssh/harness.h"

int g_pass, g_fail;
char g_msgs[64 * 1024]; /* every message the engine produced */
size_t g_msgs_len;

struct host g_hosts[256];
int g_nhosts;
char *g_key;
size_t g_key_len;
char g_dir[512];

int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

char *read_file(const char *path, size_t *len)
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

void note_msg(const char *m)
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

struct host *host_nth(const char *profile, int nth)
{
    for (int i = 0; i < g_nhosts; i++)
        if (strcmp(g_hosts[i].profile, profile) == 0 && nth-- == 0)
            return &g_hosts[i];
    return NULL;
}

struct prov_ssh_target target_for(const struct host *h, int pin)
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

void on_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct cres *r = ctx;
    r->fired++;
    r->st = *st;
    r->at_us = mono_us();
    note_msg(st->message);
}

void on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
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

void xres_free(struct xres *x)
{
    free(x->out);
    free(x->errs);
    memset(x, 0, sizeof *x);
}

void run_until(struct prov_ssh_loop *l, const int *flag, int want, int timeout_ms)
{
    int64_t end = mono_us() + (int64_t)timeout_ms * 1000;
    while (*flag < want && mono_us() < end)
        prov_ssh_loop_run_once(l, 100);
}

int count_lines_prefix(const char *s, const char *prefix)
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

long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
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
    const char *only = getenv("SSH_TEST_ONLY"); /* stream_budget: just that test */
    if (bn && atoi(bn) > 0) {
        bench(atoi(bn));
    } else if (only != NULL && !strcmp(only, "stream_budget")) {
        CHECK(host_nth("h100x8", 3) != NULL, "hosts.json has 4×h100x8");
        if (host_nth("h100x8", 3) != NULL)
            test_stream_budget();
    } else {
        int need_ok = host_nth("h100x8", 4) && host_nth("hang", 0) && host_nth("auth_refused", 0) &&
                      host_nth("hostkey_changed", 0) && host_nth("down", 0);
        CHECK(need_ok, "hosts.json has 5×h100x8, hang, auth_refused, hostkey_changed, down");
        test_policy();
        if (need_ok) {
            test_healthy();
            test_hang();
            test_failures();
            test_kex_stall();
            test_first_contact();
            test_exec_sent();
            test_many();
            test_idle_cost();
            test_stream_budget();
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
