/* test_rl_table.c — api/rl_table.c: SipHash-2-4 against the reference vector, buckets kept
 * per (class, key), fixed memory under a flood of new keys (evictions counted, a key in use
 * kept), and threads sharing a table without losing a token. */
#include <pthread.h>
#include <stdio.h>

#include "api/rl_table.h"
#include "tests/unit/unit.h"

#define S 1000000LL

/* The reference implementation's first 64-bit vectors: key 00..0f, message 00..len-1. */
static void test_siphash_vectors(void)
{
    uint64_t k0 = 0x0706050403020100ULL, k1 = 0x0f0e0d0c0b0a0908ULL;
    unsigned char in[16];
    for (int i = 0; i < 16; i++)
        in[i] = (unsigned char)i;
    CHECK(rl_siphash(in, 0, k0, k1) == 0x726fdb47dd0e0e31ULL);
    CHECK(rl_siphash(in, 1, k0, k1) == 0x74f839c593dc67fdULL);
    CHECK(rl_siphash(in, 8, k0, k1) == 0x93f5f5799a932462ULL);
    CHECK(rl_siphash(in, 15, k0, k1) == 0xa129ca6149be45e5ULL);
}

static const struct tb_policy policies[3] = {{1, 1, 3}, {1, 1, 2}, {1, 60, 1}};

/* One key's bucket, per class: the same bytes in two classes are two buckets. */
static void test_per_class_and_key(void)
{
    struct rl_table t;
    CHECK(rl_table_init(&t, 1024, policies, 1, 2) == 0);
    int64_t now = 100 * S;
    for (int i = 0; i < 3; i++)
        CHECK(rl_table_take(&t, 0, "10.0.0.1", 8, now).allowed);
    CHECK(!rl_table_take(&t, 0, "10.0.0.1", 8, now).allowed);
    CHECK(rl_table_take(&t, 0, "10.0.0.2", 8, now).allowed);
    CHECK(rl_table_take(&t, 1, "10.0.0.1", 8, now).allowed);
    CHECK(rl_table_take(&t, 1, "10.0.0.1", 8, now).allowed);
    CHECK(!rl_table_take(&t, 1, "10.0.0.1", 8, now).allowed);
    CHECK(rl_table_take(&t, 0, "10.0.0.1", 8, now + S).allowed);
    CHECK(atomic_load(&t.evictions) == 0);
    rl_table_free(&t);
}

/* 100,000 distinct keys through a 1,024-slot table: memory stays what init took, the
 * evictions are counted, and a key used all along keeps its (empty) bucket: a flood of new
 * keys does not hand an active client a fresh one. */
static void test_flood_bounded(void)
{
    struct rl_table t;
    CHECK(rl_table_init(&t, 1024, policies, 3, 4) == 0);
    CHECK(t.nsets * RL_WAYS == 1024);
    struct rl_slot *slots = t.slots;
    int64_t now = 5000 * S;
    /* The slow class (1 per minute, burst 1): its bucket is empty after one take. */
    CHECK(rl_table_take(&t, 2, "victim", 6, now).allowed);
    char key[32];
    for (int i = 0; i < 100000; i++) {
        int n = snprintf(key, sizeof key, "flood-%d", i);
        rl_table_take(&t, 0, key, (size_t)n, now + i);
        if (i % 64 == 0) /* the victim keeps sending */
            CHECK(!rl_table_take(&t, 2, "victim", 6, now + i).allowed);
    }
    CHECK(t.slots == slots && t.nsets * RL_WAYS == 1024);
    CHECK(atomic_load(&t.evictions) > 90000);
    CHECK(!rl_table_take(&t, 2, "victim", 6, now + 100000).allowed);
    rl_table_free(&t);
}

/* A bucket that refilled is taken before a live one is evicted. */
static void test_idle_reused_first(void)
{
    struct rl_table t;
    CHECK(rl_table_init(&t, 8, policies, 5, 6) == 0); /* one set of 8 */
    CHECK(t.nsets == 1);
    char key[16];
    for (int i = 0; i < 8; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        CHECK(rl_table_take(&t, 0, key, (size_t)n, S).allowed);
    }
    /* 10 s later all 8 are full again: new keys reuse them, no eviction. */
    for (int i = 8; i < 16; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        CHECK(rl_table_take(&t, 0, key, (size_t)n, 11 * S).allowed);
    }
    CHECK(atomic_load(&t.evictions) == 0);
    /* Now all 8 are in use: a ninth key evicts one. */
    CHECK(rl_table_take(&t, 0, "new", 3, 11 * S).allowed);
    CHECK(atomic_load(&t.evictions) == 1);
    rl_table_free(&t);
}

/* Four threads take from one bucket of 1,000,000 at one instant: exactly the burst passes. */
static struct rl_table shared;
static const struct tb_policy big[1] = {{1, 3600, 40000}};
static int passed_by[4];

static void *taker(void *arg)
{
    int *n = arg;
    for (int i = 0; i < 20000; i++)
        if (rl_table_take(&shared, 0, "one", 3, 7 * S).allowed)
            (*n)++;
    return NULL;
}

static void test_threads(void)
{
    CHECK(rl_table_init(&shared, 1024, big, 7, 8) == 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, taker, &passed_by[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(passed_by[0] + passed_by[1] + passed_by[2] + passed_by[3] == 40000);
    rl_table_free(&shared);
}

UNIT_SUITE(rl_table_tests) = {
    {"rl_table: SipHash-2-4 reference vectors", test_siphash_vectors},
    {"rl_table: one bucket per class and key", test_per_class_and_key},
    {"rl_table: a flood of new keys keeps memory fixed and an active key's bucket",
     test_flood_bounded},
    {"rl_table: refilled buckets are reused before a live one is evicted", test_idle_reused_first},
    {"rl_table: threads share a bucket without losing or adding a token", test_threads},
    UNIT_END,
};
