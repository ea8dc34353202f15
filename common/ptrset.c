/* ptrset.c — see ptrset.h. */
#include "common/ptrset.h"

#include <stdint.h>
#include <stdlib.h>

static size_t slot_of(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p >> 4; /* heap blocks are 16-byte aligned */
    x *= 0x9E3779B97F4A7C15ULL;
    return (size_t)(x >> 32) & (cap - 1);
}

static int grow(struct ptrset *s, size_t cap)
{
    void **v = calloc(cap, sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->v[i] == NULL)
            continue;
        size_t j = slot_of(s->v[i], cap);
        while (v[j] != NULL)
            j = (j + 1) & (cap - 1);
        v[j] = s->v[i];
    }
    free(s->v);
    s->v = v;
    s->cap = cap;
    return 0;
}

int ptrset_reserve(struct ptrset *s)
{
    /* load factor at most 1/2 */
    if ((s->n + 1) * 2 <= s->cap)
        return 0;
    return grow(s, s->cap ? s->cap * 2 : 16);
}

static size_t find(const struct ptrset *s, const void *p)
{
    size_t j = slot_of(p, s->cap);
    while (s->v[j] != NULL && s->v[j] != p)
        j = (j + 1) & (s->cap - 1);
    return j;
}

int ptrset_add(struct ptrset *s, void *p)
{
    if (p == NULL || ptrset_reserve(s) != 0)
        return -1;
    size_t j = find(s, p);
    if (s->v[j] == NULL) {
        s->v[j] = p;
        s->n++;
    }
    return 0;
}

int ptrset_has(const struct ptrset *s, const void *p)
{
    return p != NULL && s->cap > 0 && s->v[find(s, p)] == p;
}

int ptrset_del(struct ptrset *s, void *p)
{
    if (!ptrset_has(s, p))
        return 0;
    size_t mask = s->cap - 1, i = find(s, p);
    s->v[i] = NULL;
    s->n--;
    /* backward shift: move up every later entry of the run whose home is not in (i, j] */
    for (size_t j = (i + 1) & mask; s->v[j] != NULL; j = (j + 1) & mask) {
        size_t home = slot_of(s->v[j], s->cap);
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            s->v[i] = s->v[j];
            s->v[j] = NULL;
            i = j;
        }
    }
    return 1;
}

size_t ptrset_count(const struct ptrset *s)
{
    return s->n;
}

void ptrset_drain(struct ptrset *s, void (*fn)(void *p, void *arg), void *arg)
{
    for (size_t i = 0; i < s->cap; i++)
        if (s->v[i] != NULL && fn != NULL)
            fn(s->v[i], arg);
    free(s->v);
    s->v = NULL;
    s->cap = 0;
    s->n = 0;
}
