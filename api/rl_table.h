/* rl_table.h — a fixed-size table of token buckets (common/tbucket.h) for the rate limits
 * (api/ratelimit.c), safe to share between libmicrohttpd's threads.
 *
 * A table is `nsets` sets of RL_WAYS slots; a key (class and bytes) is hashed with SipHash
 * under a key drawn at start, so a client cannot aim its keys at one set. The set's stripe
 * lock (RL_STRIPES mutexes, set index modulo) guards its slots: threads contend only when
 * two requests hash to one stripe at once. A slot holds the 64-bit hash (the key itself is
 * not kept) with the class in its low bits, and the bucket. When no slot of the set
 * matches, the new key takes an empty slot, else one whose bucket has refilled (a fresh
 * bucket is the same), else the least recently used one (an eviction: that key starts
 * over with a full bucket). Memory is fixed at init. */
#ifndef GPUFLEET_RL_TABLE_H
#define GPUFLEET_RL_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tbucket.h"

#define RL_WAYS        8
#define RL_STRIPES     256
#define RL_MAX_CLASSES 7 /* classes 0..6: the class + 1 sits in a slot's low 3 bits */

struct rl_slot {
    uint64_t tag;    /* 0: empty */
    int64_t seen_us; /* last asked (a refusal too): the least recently used is evicted */
    struct tb_state st;
};

struct rl_table {
    struct rl_slot *slots;          /* nsets * RL_WAYS */
    size_t nsets;                   /* a power of two */
    const struct tb_policy *policy; /* by class, borrowed */
    uint64_t k0, k1;                /* SipHash key */
    atomic_uint_fast64_t evictions;
    pthread_mutex_t locks[RL_STRIPES];
};

/* At least `entries` slots (rounded up to a power of two times RL_WAYS). policy[class] is
 * borrowed for the table's life. Returns 0, or -1 when out of memory. */
int rl_table_init(struct rl_table *t, size_t entries, const struct tb_policy *policy, uint64_t k0,
                  uint64_t k1);
void rl_table_free(struct rl_table *t);
/* Takes one token from the bucket of (cls, key[len]) at now_us (tb_take). len is cut at 159. */
struct tb_verdict rl_table_take(struct rl_table *t, unsigned cls, const void *key, size_t len,
                                int64_t now_us);
/* SipHash-2-4 of in[len] under (k0, k1). */
uint64_t rl_siphash(const unsigned char *in, size_t len, uint64_t k0, uint64_t k1);

#endif
