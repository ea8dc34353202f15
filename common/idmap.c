/* idmap.c — see idmap.h. Slots hold a key copy and a value; a deleted slot keeps a
 * tombstone (key freed, value NULL, deleted set) so that probes run past it. The table
 * doubles when keys and tombstones pass 3/4 of it (tombstones are dropped then). */
#include "common/idmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct idmap_slot {
    char *key; /* NULL: empty or deleted */
    void *value;
    int deleted;
};

/* FNV-1a, 64 bits. */
static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot holding key, or NULL. */
static struct idmap_slot *lookup(const struct idmap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash(key) & mask, k = 0; k < m->cap; i = (i + 1) & mask, k++) {
        struct idmap_slot *s = &m->v[i];
        if (s->key == NULL && !s->deleted)
            return NULL;
        if (s->key != NULL && strcmp(s->key, key) == 0)
            return s;
    }
    return NULL;
}

void *idmap_get(const struct idmap *m, const char *key)
{
    struct idmap_slot *s = lookup(m, key);
    return s != NULL ? s->value : NULL;
}

/* Puts an owned key into a table known to have room and not to hold it. */
static void place(struct idmap_slot *v, size_t cap, char *key, void *value)
{
    size_t mask = cap - 1;
    size_t i = hash(key) & mask;
    while (v[i].key != NULL)
        i = (i + 1) & mask;
    v[i] = (struct idmap_slot){key, value, 0};
}

static int grow(struct idmap *m)
{
    size_t cap = m->cap ? m->cap : 16;
    while ((m->n + 1) * 4 > cap * 3)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof *m->v / 2)
        return -1;
    struct idmap_slot *v = calloc(cap, sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->v[i].key != NULL)
            place(v, cap, m->v[i].key, m->v[i].value);
    free(m->v);
    m->v = v;
    m->cap = cap;
    m->used = m->n;
    return 0;
}

int idmap_put(struct idmap *m, const char *key, void *value)
{
    struct idmap_slot *s = lookup(m, key);
    if (s != NULL) {
        s->value = value;
        return 0;
    }
    char *k = strdup(key);
    if (k == NULL)
        return -1;
    if ((m->used + 1) * 4 > m->cap * 3 && grow(m) != 0) {
        free(k);
        return -1;
    }
    size_t mask = m->cap - 1;
    size_t i = hash(key) & mask;
    while (m->v[i].key != NULL)
        i = (i + 1) & mask;
    if (!m->v[i].deleted)
        m->used++; /* a tombstone reused was counted already */
    m->v[i] = (struct idmap_slot){k, value, 0};
    m->n++;
    return 0;
}

void *idmap_del(struct idmap *m, const char *key)
{
    struct idmap_slot *s = lookup(m, key);
    if (s == NULL)
        return NULL;
    void *value = s->value;
    free(s->key);
    *s = (struct idmap_slot){NULL, NULL, 1};
    m->n--;
    return value;
}

size_t idmap_count(const struct idmap *m)
{
    return m->n;
}

void idmap_free(struct idmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->v[i].key);
    free(m->v);
    *m = (struct idmap)IDMAP_INIT;
}
