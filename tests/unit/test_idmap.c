/* test_idmap.c — common/idmap.c against a brute-force model: random puts, replacements,
 * deletions and lookups over a small key space (so that tombstones pile up and are
 * reused), then growth to 20,000 keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/idmap.h"
#include "tests/unit/unit.h"

#define NKEYS 300

static void idmap_random(void)
{
    struct idmap m = IDMAP_INIT;
    static int vals[NKEYS];
    int *model[NKEYS] = {0};
    char key[48];
    srand(7);
    for (int step = 0; step < 50000; step++) {
        int k = rand() % NKEYS, op = rand() % 3;
        snprintf(key, sizeof key, "00000000-0000-4000-8000-%012d", k);
        if (op == 0) {
            CHECK(idmap_put(&m, key, &vals[k]) == 0);
            model[k] = &vals[k];
        } else if (op == 1) {
            CHECK(idmap_del(&m, key) == (void *)model[k]);
            model[k] = NULL;
        } else {
            CHECK(idmap_get(&m, key) == (void *)model[k]);
        }
    }
    size_t held = 0;
    for (int k = 0; k < NKEYS; k++) {
        snprintf(key, sizeof key, "00000000-0000-4000-8000-%012d", k);
        CHECK(idmap_get(&m, key) == (void *)model[k]);
        held += model[k] != NULL;
    }
    CHECK(idmap_count(&m) == held);
    CHECK(m.used * 4 <= m.cap * 3); /* tombstones count against the load factor */
    idmap_free(&m);
    CHECK(m.v == NULL && m.cap == 0 && m.n == 0);
}

static void idmap_growth(void)
{
    struct idmap m = IDMAP_INIT;
    static int v[20000];
    char key[48];
    CHECK(idmap_get(&m, "absent") == NULL && idmap_del(&m, "absent") == NULL);
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "host-%d", i);
        CHECK(idmap_put(&m, key, &v[i]) == 0);
    }
    CHECK(idmap_count(&m) == 20000 && m.cap >= 20000 * 4 / 3);
    for (int i = 0; i < 20000; i += 2) {
        snprintf(key, sizeof key, "host-%d", i);
        CHECK(idmap_del(&m, key) == &v[i]);
    }
    int ok = 1;
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "host-%d", i);
        ok &= idmap_get(&m, key) == (i % 2 ? &v[i] : NULL);
    }
    CHECK(ok);
    /* a replacement keeps one entry; the key is copied (the caller's buffer may change) */
    CHECK(idmap_put(&m, "host-1", &v[0]) == 0 && idmap_get(&m, "host-1") == &v[0]);
    CHECK(idmap_count(&m) == 10000);
    idmap_free(&m);
}

UNIT_SUITE(idmap_tests) = {
    {"idmap: 50,000 random puts, deletions and lookups against a model", idmap_random},
    {"idmap: growth to 20,000 keys, half deleted, replacement, absent keys", idmap_growth},
    UNIT_END,
};
