/* idmap.h — a map from short string keys (host ids) to pointers: open addressing with
 * linear probing, so that a claim of n rows finds each row's host in O(1) instead of a
 * walk of every host held (n² compares on a full claim of 10,000 hosts).
 *
 * The map keeps its own copy of each key. Not thread-safe: a map belongs to one thread. */
#ifndef GPUFLEET_IDMAP_H
#define GPUFLEET_IDMAP_H

#include <stddef.h>

struct idmap_slot;
struct idmap {
    struct idmap_slot *v;
    size_t cap;  /* 0 or a power of two */
    size_t n;    /* keys held */
    size_t used; /* keys held + deleted slots not yet reused */
};
#define IDMAP_INIT {NULL, 0, 0, 0}

/* The value under key, or NULL. */
void *idmap_get(const struct idmap *m, const char *key);
/* Puts value (not NULL) under key, replacing what was there. 0, or -1 out of memory (the
 * map is then unchanged). */
int idmap_put(struct idmap *m, const char *key, void *value);
/* Takes key out; returns what it held, or NULL. */
void *idmap_del(struct idmap *m, const char *key);
size_t idmap_count(const struct idmap *m);
void idmap_free(struct idmap *m);

#endif
