/* ptrset.h — a set of live heap blocks: open addressing with linear probing and
 * backward-shift deletion (no tombstones).
 *
 * The SSH engine hands libssh2 an allocator that records every block of a session in one
 * of these (provisioner/ssh/connect.c): libssh2 1.10 forgets some of its own blocks when a
 * session is freed in the middle of a key exchange (the curve25519 key pair, 2 × 32
 * bytes), which a handshake timeout or a shutdown does; what the set still holds after
 * libssh2_session_free() is freed then.
 *
 * Not thread-safe: a set belongs to one thread (a session is driven by one loop). */
#ifndef GPUFLEET_PTRSET_H
#define GPUFLEET_PTRSET_H

#include <stddef.h>

struct ptrset {
    void **v;
    size_t cap; /* 0 or a power of two */
    size_t n;   /* pointers held */
};
#define PTRSET_INIT \
    {               \
        NULL, 0, 0  \
    }

/* Makes room for one more pointer without a later allocation: 0, or -1 out of memory
 * (the set unchanged). */
int ptrset_reserve(struct ptrset *s);
/* Adds p (not NULL; already present: nothing). 0, or -1 out of memory (unchanged). */
int ptrset_add(struct ptrset *s, void *p);
/* Takes p out: 1 if it was there, else 0. */
int ptrset_del(struct ptrset *s, void *p);
int ptrset_has(const struct ptrset *s, const void *p);
size_t ptrset_count(const struct ptrset *s);
/* Calls fn on every pointer held (in no order), then empties the set and frees its table. */
void ptrset_drain(struct ptrset *s, void (*fn)(void *p, void *arg), void *arg);

#endif
