/* ratelimit.c — the bucket tables and the HTTP side of the rate limits (ratelimit.h).
 *
 * A table is `nsets` sets of RL_WAYS slots; a key (class and bytes) is hashed with SipHash
 * under a random key drawn at start, so a client cannot aim its keys at one set. The set's
 * stripe lock (RL_STRIPES mutexes, set index modulo) guards its slots: libmicrohttpd's
 * pool threads contend only when two requests hash to one stripe at once. A slot holds
 * the 64-bit hash (the key itself is not kept) and the bucket. When no slot of the set
 * matches, the new key takes an empty slot, else one whose bucket has refilled (a fresh
 * bucket is the same), else the least recently used (counted in
 * gpufleet_rate_limit_evictions_total: the evicted key starts over with a full bucket). */
#include "api/ratelimit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "common/sbuf.h"
#include "common/tbucket.h"
#include "common/util.h"

#define RL_WAYS    8
#define RL_STRIPES 256

struct rl_slot {
    uint64_t tag; /* 0: empty */
    struct tb_state st;
};

struct rl_table {
    struct rl_slot *slots; /* nsets * RL_WAYS */
    size_t nsets;          /* a power of two */
    pthread_mutex_t locks[RL_STRIPES];
};

static const char *const class_names[RL__COUNT] = {"address", "probe", "principal", "reporter",
                                                   "auth-failures"};

static struct {
    int enabled;
    struct tb_policy policy[RL__COUNT];
    char policy_header[RL__COUNT][96]; /* "address";q=2000;w=2 */
    struct rl_table addresses, principals;
    uint64_t k0, k1; /* SipHash key */
} rl;

static atomic_uint_fast64_t limited[RL__COUNT];
static atomic_uint_fast64_t evictions;

/* ---- SipHash-2-4 (Aumasson, Bernstein) ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND           \
    do {                   \
        v0 += v1;          \
        v1 = ROTL(v1, 13); \
        v1 ^= v0;          \
        v0 = ROTL(v0, 32); \
        v2 += v3;          \
        v3 = ROTL(v3, 16); \
        v3 ^= v2;          \
        v0 += v3;          \
        v3 = ROTL(v3, 21); \
        v3 ^= v0;          \
        v2 += v1;          \
        v1 = ROTL(v1, 17); \
        v1 ^= v2;          \
        v2 = ROTL(v2, 32); \
    } while (0)

static uint64_t siphash(const unsigned char *in, size_t len, uint64_t k0, uint64_t k1)
{
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t end = len - len % 8;
    for (size_t i = 0; i < end; i += 8) {
        uint64_t m = 0;
        for (int j = 7; j >= 0; j--)
            m = (m << 8) | in[i + (size_t)j];
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t j = 0; j < len % 8; j++)
        b |= (uint64_t)in[end + j] << (8 * j);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- the tables ---- */

static int table_init(struct rl_table *t, size_t entries)
{
    size_t sets = 1;
    while (sets * RL_WAYS < entries)
        sets *= 2;
    t->slots = calloc(sets * RL_WAYS, sizeof *t->slots);
    if (t->slots == NULL)
        return -1;
    t->nsets = sets;
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return 0;
}

static void table_free(struct rl_table *t)
{
    if (t->slots == NULL)
        return;
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->slots);
    t->slots = NULL;
}

/* The slot of tag in set (found, or claimed for it). Called with the stripe held. */
static struct rl_slot *slot_for(struct rl_slot *set, uint64_t tag, const struct tb_policy *p,
                                int64_t now)
{
    struct rl_slot *empty = NULL, *idle = NULL, *oldest = NULL;
    for (int i = 0; i < RL_WAYS; i++) {
        struct rl_slot *s = &set[i];
        if (s->tag == tag)
            return s;
        if (s->tag == 0) {
            if (empty == NULL)
                empty = s;
        } else if (idle == NULL && tb_idle(&s->st, p, now)) {
            idle = s;
        } else if (oldest == NULL || s->st.last_us < oldest->st.last_us) {
            oldest = s;
        }
    }
    struct rl_slot *s = empty ? empty : idle ? idle : oldest;
    if (s == oldest && s != NULL && s->tag != 0)
        atomic_fetch_add_explicit(&evictions, 1, memory_order_relaxed);
    s->tag = tag;
    s->st = (struct tb_state){0, 0};
    return s;
}

/* Note: tb_idle above is judged against the new key's policy; a table holds the classes
 * of one kind (addresses; principals), whose bursts refill at similar pace, and a slot
 * judged idle too early only starts its key over with a full bucket. */
static struct tb_verdict table_take(struct rl_table *t, enum api_rl_class c, const void *key,
                                    size_t len, int64_t now)
{
    unsigned char buf[160];
    if (len > sizeof buf - 1)
        len = sizeof buf - 1;
    buf[0] = (unsigned char)c;
    memcpy(buf + 1, key, len);
    uint64_t h = siphash(buf, len + 1, rl.k0, rl.k1);
    uint64_t tag = h | 1;
    size_t set = (size_t)(h >> 11) & (t->nsets - 1);
    pthread_mutex_t *m = &t->locks[set % RL_STRIPES];
    pthread_mutex_lock(m);
    struct rl_slot *s = slot_for(&t->slots[set * RL_WAYS], tag, &rl.policy[c], now);
    struct tb_verdict v = tb_take(&s->st, &rl.policy[c], now);
    pthread_mutex_unlock(m);
    return v;
}

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
    rl.k0 = k[0];
    rl.k1 = k[1];
    if (table_init(&rl.addresses, (size_t)cfg->rl_table_size) != 0 ||
        table_init(&rl.principals, (size_t)cfg->rl_table_size) != 0) {
        snprintf(err, errlen, "rate limits: cannot allocate the tables (%d entries)",
                 cfg->rl_table_size);
        api_rl_shutdown();
        return -1;
    }
    return 0;
}

void api_rl_shutdown(void)
{
    table_free(&rl.addresses);
    table_free(&rl.principals);
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
    /* The header values api_queue adds (reply.c). */
    r->rl_policy = rl.policy_header[c];
    snprintf(r->rl_state, sizeof r->rl_state, "\"%s\";r=%lld;t=%lld", class_names[c],
             (long long)v->remaining, (long long)(v->allowed ? v->reset_s : v->retry_s));
    r->rl_retry_after = v->allowed ? 0 : (v->retry_s > 0 ? v->retry_s : 1);
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
    struct tb_verdict v = table_take(t, c, key, len, util_mono_us());
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
                (unsigned long long)atomic_load_explicit(&evictions, memory_order_relaxed));
}
