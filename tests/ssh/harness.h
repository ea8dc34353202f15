/* The SSH engine tests' shared pieces (test_ssh.c): the fleet's hosts from hosts.json,
 * the fleet key, the callback contexts, the check counter and every message the engine
 * produced; and the tests (test_ssh_sessions.c, test_ssh_load.c). */
#ifndef GPUFLEET_TESTS_SSH_HARNESS_H
#define GPUFLEET_TESTS_SSH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "provisioner/ssh/ssh.h"

extern int g_pass, g_fail;
extern char g_msgs[64 * 1024]; /* every message the engine produced */
extern size_t g_msgs_len;

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
extern struct host g_hosts[256];
extern int g_nhosts;
extern char *g_key; /* the fleet key (hosts.json's first private_key_path) */
extern size_t g_key_len;
extern char g_dir[512]; /* the fleet's directory */

struct cres {
    int fired;
    struct prov_ssh_conn_status st;
    int64_t at_us;
};

struct xres {
    int fired;
    enum prov_ssh_err err;
    int exit_status, timed_out, exec_sent;
    char sig[32];
    char *out, *errs; /* tails */
    size_t out_total, err_total, out_len, err_len;
    int64_t duration_us, at_us;
};

int64_t mono_us(void);
/* The whole file, NUL-terminated (caller frees); NULL if unreadable. */
char *read_file(const char *path, size_t *len);
/* Appends an engine message to g_msgs (test_no_secrets greps them). */
void note_msg(const char *m);
/* The nth host (from 0) of that simfleet profile, or NULL. */
struct host *host_nth(const char *profile, int nth);
/* A target for h with the fleet key; its host key pinned when pin. */
struct prov_ssh_target target_for(const struct host *h, int pin);
/* Callbacks that record into a struct cres / struct xres (ctx). */
void on_conn(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx);
void on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx);
void xres_free(struct xres *x);
/* Runs the loop until *flag reaches want or timeout_ms passes. */
void run_until(struct prov_ssh_loop *l, const int *flag, int want, int timeout_ms);
int count_lines_prefix(const char *s, const char *prefix);
long file_size(const char *path); /* -1 if it cannot be opened */

/* test_ssh_sessions.c */
void test_policy(void);
void test_healthy(void);
void test_hang(void);
void test_failures(void);
void test_kex_stall(void);
void test_exec_sent(void);
void test_first_contact(void);
/* test_ssh_load.c */
void test_many(void);
void test_idle_cost(void);
void test_stream_budget(void);
void test_key_types(const char *keydir);
void test_no_secrets(void);
void bench(int n);

#endif
