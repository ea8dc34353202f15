/* test_ptrset.c — common/ptrset.c against a brute-force model: random adds and deletions
 * of real heap blocks (so that runs wrap around the table and backward shifts move
 * entries), growth, and the drain that frees what is left (ASan: nothing leaks, nothing
 * is freed twice). */
#include <stdlib.h>

#include "common/ptrset.h"
#include "tests/unit/unit.h"

#define NBLOCKS 400

static void free_fn(void *p, void *arg)
{
    (void)arg;
    free(p);
}

static void ptrset_random(void)
{
    struct ptrset s = PTRSET_INIT;
    static void *blocks[NBLOCKS];
    int in[NBLOCKS] = {0};
    for (int i = 0; i < NBLOCKS; i++)
        blocks[i] = malloc(16 + (size_t)(i % 7) * 16);
    srand(11);
    for (int step = 0; step < 60000; step++) {
        int k = rand() % NBLOCKS, op = rand() % 3;
        if (op == 0) {
            CHECK(ptrset_add(&s, blocks[k]) == 0);
            in[k] = 1;
        } else if (op == 1) {
            CHECK(ptrset_del(&s, blocks[k]) == in[k]);
            in[k] = 0;
        }
        if (step % 997 == 0) {
            int ok = 1;
            size_t held = 0;
            for (int i = 0; i < NBLOCKS; i++) {
                ok &= ptrset_has(&s, blocks[i]) == in[i];
                held += (size_t)in[i];
            }
            CHECK(ok);
            CHECK(ptrset_count(&s) == held);
        }
    }
    CHECK(s.n * 2 <= s.cap);
    for (int i = 0; i < NBLOCKS; i++)
        if (!in[i])
            free(blocks[i]);
    /* the drain frees exactly the blocks still held */
    ptrset_drain(&s, free_fn, NULL);
    CHECK(s.v == NULL && s.cap == 0 && ptrset_count(&s) == 0);
}

static void count_fn(void *p, void *arg)
{
    (void)p;
    (*(size_t *)arg)++;
}

static void ptrset_edges(void)
{
    struct ptrset s = PTRSET_INIT;
    int x = 0, y = 0;
    CHECK(!ptrset_has(&s, &x) && ptrset_del(&s, &x) == 0); /* empty, no table */
    CHECK(ptrset_add(&s, NULL) == -1);
    CHECK(ptrset_add(&s, &x) == 0 && ptrset_add(&s, &x) == 0 && ptrset_count(&s) == 1);
    CHECK(ptrset_reserve(&s) == 0 && ptrset_has(&s, &x) && !ptrset_has(&s, &y));
    CHECK(!ptrset_has(&s, NULL));
    size_t n = 0;
    ptrset_drain(&s, count_fn, &n);
    CHECK(n == 1 && ptrset_count(&s) == 0);
    ptrset_drain(&s, count_fn, &n); /* an empty set: nothing */
    CHECK(n == 1);
}

UNIT_SUITE(ptrset_tests) = {
    {"ptrset: 60,000 random adds and deletions of heap blocks against a model, drain",
     ptrset_random},
    {"ptrset: empty set, NULL, duplicates, drain", ptrset_edges},
    UNIT_END,
};
