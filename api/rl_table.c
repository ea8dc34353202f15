/* rl_table.c — the rate limits' bucket table (rl_table.h). */
#include "api/rl_table.h"

#include <stdlib.h>
#include <string.h>

#define TAG_CLASS(tag) ((unsigned)((tag)&7) - 1)

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

uint64_t rl_siphash(const unsigned char *in, size_t len, uint64_t k0, uint64_t k1)
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

/* ---- the table ---- */

int rl_table_init(struct rl_table *t, size_t entries, const struct tb_policy *policy, uint64_t k0,
                  uint64_t k1)
{
    size_t sets = 1;
    while (sets * RL_WAYS < entries)
        sets *= 2;
    t->slots = calloc(sets * RL_WAYS, sizeof *t->slots);
    if (t->slots == NULL)
        return -1;
    t->nsets = sets;
    t->policy = policy;
    t->k0 = k0;
    t->k1 = k1;
    atomic_init(&t->evictions, 0);
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return 0;
}

void rl_table_free(struct rl_table *t)
{
    if (t->slots == NULL)
        return;
    for (int i = 0; i < RL_STRIPES; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->slots);
    t->slots = NULL;
}

/* The slot of tag in set (found, or claimed for it). Called with the stripe held. */
static struct rl_slot *slot_for(struct rl_table *t, struct rl_slot *set, uint64_t tag, int64_t now)
{
    struct rl_slot *empty = NULL, *idle = NULL, *oldest = NULL;
    for (int i = 0; i < RL_WAYS; i++) {
        struct rl_slot *s = &set[i];
        if (s->tag == tag)
            return s;
        if (s->tag == 0) {
            if (empty == NULL)
                empty = s;
        } else if (idle == NULL && tb_idle(&s->st, &t->policy[TAG_CLASS(s->tag)], now)) {
            idle = s;
        } else if (oldest == NULL || s->seen_us < oldest->seen_us) {
            oldest = s;
        }
    }
    struct rl_slot *s = empty ? empty : idle ? idle : oldest;
    if (s == oldest)
        atomic_fetch_add_explicit(&t->evictions, 1, memory_order_relaxed);
    s->tag = tag;
    s->st = (struct tb_state){0, 0};
    s->seen_us = 0;
    return s;
}

struct tb_verdict rl_table_take(struct rl_table *t, unsigned cls, const void *key, size_t len,
                                int64_t now_us)
{
    unsigned char buf[160];
    if (len > sizeof buf - 1)
        len = sizeof buf - 1;
    buf[0] = (unsigned char)cls;
    memcpy(buf + 1, key, len);
    uint64_t h = rl_siphash(buf, len + 1, t->k0, t->k1);
    uint64_t tag = (h & ~(uint64_t)7) | (uint64_t)(cls + 1);
    size_t set = (size_t)(h >> 11) & (t->nsets - 1);
    pthread_mutex_t *m = &t->locks[set % RL_STRIPES];
    pthread_mutex_lock(m);
    struct rl_slot *s = slot_for(t, &t->slots[set * RL_WAYS], tag, now_us);
    struct tb_verdict v = tb_take(&s->st, &t->policy[cls], now_us);
    if (now_us > s->seen_us)
        s->seen_us = now_us;
    pthread_mutex_unlock(m);
    return v;
}
