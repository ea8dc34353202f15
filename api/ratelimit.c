/* ratelimit.c — the HTTP side of the rate limits (ratelimit.h): which bucket a request is
 * charged to, the 429, the RateLimit header values. The tables are rl_table.c. */
#include "api/ratelimit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "api/rl_table.h"
#include "common/sbuf.h"
#include "common/tbucket.h"
#include "common/util.h"

static const char *const class_names[RL__COUNT] = {"address", "probe", "principal", "reporter",
                                                   "auth-failures"};

static struct {
    int enabled;
    struct tb_policy policy[RL__COUNT];
    char policy_header[RL__COUNT][96]; /* "address";q=2000;w=2 */
    struct rl_table addresses, principals;
} rl;
_Static_assert(RL__COUNT <= RL_MAX_CLASSES, "a class must fit a slot's tag");

static atomic_uint_fast64_t limited[RL__COUNT];

int api_rl_configure(const struct api_config *cfg, char *err, size_t errlen)
{
    rl.enabled = cfg->rate_limit;
    if (!rl.enabled)
        return 0;
    rl.policy[RL_ADDRESS] = (struct tb_policy){cfg->rl_address_rps, 1, cfg->rl_address_burst};
    rl.policy[RL_PROBE] = rl.policy[RL_ADDRESS];
    rl.policy[RL_PRINCIPAL] = (struct tb_policy){cfg->rl_principal_rps, 1, cfg->rl_principal_burst};
    rl.policy[RL_REPORTER] = (struct tb_policy){cfg->rl_reporter_rps, 1, cfg->rl_reporter_burst};
    rl.policy[RL_AUTH_FAILURE] =
        (struct tb_policy){cfg->rl_auth_failures_per_min, 60, cfg->rl_auth_failure_burst};
    for (int c = 0; c < RL__COUNT; c++)
        snprintf(rl.policy_header[c], sizeof rl.policy_header[c], "\"%s\";q=%lld;w=%lld",
                 class_names[c], (long long)rl.policy[c].burst,
                 (long long)tb_window_s(&rl.policy[c]));
    uint64_t k[2];
    if (getrandom(k, sizeof k, 0) != (ssize_t)sizeof k) {
        snprintf(err, errlen, "rate limits: cannot draw a random hash key");
        return -1;
    }
    if (rl_table_init(&rl.addresses, (size_t)cfg->rl_table_size, rl.policy, k[0], k[1]) != 0 ||
        rl_table_init(&rl.principals, (size_t)cfg->rl_table_size, rl.policy, k[0], k[1]) != 0) {
        snprintf(err, errlen, "rate limits: cannot allocate the tables (%d entries)",
                 cfg->rl_table_size);
        api_rl_shutdown();
        return -1;
    }
    return 0;
}

void api_rl_shutdown(void)
{
    rl_table_free(&rl.addresses);
    rl_table_free(&rl.principals);
    rl.enabled = 0;
}

/* ---- the HTTP side ---- */

/* The client's address as a key: 4 bytes for IPv4 (also IPv4-mapped IPv6), the /64 prefix
 * for IPv6 (one client commonly holds a whole /64). 0 when unknown. */
static size_t address_key(const struct api_req *r, unsigned char out[8])
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            memcpy(out, a + 12, 4);
            return 4;
        }
        memcpy(out, a, 8);
        return 8;
    }
    return 0;
}

/* Remembers v for the RateLimit headers when it is the closer of the request's limits
 * (the smaller share of its burst left). */
static void remember(struct api_req *r, enum api_rl_class c, const struct tb_verdict *v)
{
    const struct tb_policy *p = &rl.policy[c];
    if (p->rate <= 0)
        return;
    if (r->rl_class >= 0 && v->allowed) {
        const struct tb_policy *q = &rl.policy[r->rl_class];
        if (v->remaining * q->burst > r->rl_verdict.remaining * p->burst)
            return;
    }
    r->rl_class = (int)c;
    r->rl_verdict = *v;
    /* What api_queue (reply.c) writes into the headers, once per answer. */
    r->rl_policy = rl.policy_header[c];
    r->rl_name = class_names[c];
}

static enum MHD_Result refuse(struct api_req *r, enum api_rl_class c, const struct tb_verdict *v)
{
    static const char *const what[RL__COUNT] = {
        "this client address", "this client address (health and metrics routes)", "this principal",
        "this reporter", "this client address (authentication failures)"};
    atomic_fetch_add_explicit(&limited[c], 1, memory_order_relaxed);
    return api_reply_problem(r, API_ERR_RATE_LIMITED, NULL,
                             "too many requests from %s; retry in %lld s (policy %s: %lld "
                             "requests per %lld s, burst %lld)",
                             what[c], (long long)v->retry_s, class_names[c],
                             (long long)rl.policy[c].rate, (long long)rl.policy[c].per_s,
                             (long long)rl.policy[c].burst);
}

static int check(struct api_req *r, enum api_rl_class c, int reply)
{
    if (!rl.enabled || rl.policy[c].rate <= 0)
        return 0;
    unsigned char addr[8];
    const void *key;
    size_t len;
    struct rl_table *t;
    if (c == RL_PRINCIPAL || c == RL_REPORTER) {
        key = r->principal.sub;
        len = strlen(r->principal.sub);
        t = &rl.principals;
    } else {
        len = address_key(r, addr);
        key = addr;
        t = &rl.addresses;
    }
    if (len == 0)
        return 0;
    struct tb_verdict v = rl_table_take(t, (unsigned)c, key, len, util_mono_us());
    remember(r, c, &v);
    if (v.allowed)
        return 0;
    if (reply)
        refuse(r, c, &v);
    else
        atomic_fetch_add_explicit(&limited[c], 1, memory_order_relaxed);
    return -1;
}

int api_rl_check(struct api_req *r, enum api_rl_class c)
{
    return check(r, c, 1);
}

int api_rl_auth_failure(struct api_req *r)
{
    return check(r, RL_AUTH_FAILURE, 1);
}

void api_rl_charge_auth_failure(struct api_req *r)
{
    check(r, RL_AUTH_FAILURE, 0);
}

void api_rl_metrics(struct sbuf *b)
{
    sbuf_adds(b, "# HELP gpufleet_rate_limited_total Requests answered 429 by the rate limits, "
                 "by policy (address, probe, principal, reporter, auth-failures).\n"
                 "# TYPE gpufleet_rate_limited_total counter\n");
    for (int c = 0; c < RL__COUNT; c++)
        sbuf_printf(b, "gpufleet_rate_limited_total{policy=\"%s\"} %llu\n", class_names[c],
                    (unsigned long long)atomic_load_explicit(&limited[c], memory_order_relaxed));
    sbuf_printf(b,
                "# HELP gpufleet_rate_limit_evictions_total Buckets dropped from a full set of "
                "the rate-limit tables before they had refilled.\n"
                "# TYPE gpufleet_rate_limit_evictions_total counter\n"
                "gpufleet_rate_limit_evictions_total %llu\n",
                (unsigned long long)(atomic_load(&rl.addresses.evictions) +
                                     atomic_load(&rl.principals.evictions)));
}
