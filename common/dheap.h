/* dheap.h — a binary min-heap of deadlines, intrusive: the element embeds a struct
 * dheap_node and is recovered with DHEAP_OWNER. The SSH loop keeps its sessions' earliest
 * deadlines in one, the monitor its hosts' next action times: what is due is found in
 * O(1), and a time set or cleared in O(log n), so neither walks everything it holds.
 *
 * Not thread-safe: a heap belongs to one thread. */
#ifndef GPUFLEET_DHEAP_H
#define GPUFLEET_DHEAP_H

#include <stddef.h>
#include <stdint.h>

struct dheap_node {
    int64_t due; /* valid while in the heap */
    long idx;    /* its index; -1 when not in the heap (DHEAP_NODE_INIT) */
};
#define DHEAP_NODE_INIT \
    {                   \
        0, -1           \
    }

struct dheap {
    struct dheap_node **v;
    size_t n, cap;
};

#define DHEAP_OWNER(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* Puts x in h under due, or moves it there; due 0 takes it out. 0, or -1 out of memory
 * (x is then not in the heap). */
int dheap_set(struct dheap *h, struct dheap_node *x, int64_t due);
/* Takes x out (nothing if it is not in). */
void dheap_remove(struct dheap *h, struct dheap_node *x);
/* Takes out and returns the earliest node if its time is at or before now; NULL
 * otherwise (what is due, one node a call). */
struct dheap_node *dheap_pop_due(struct dheap *h, int64_t now);
/* The earliest node, or NULL when empty. */
struct dheap_node *dheap_top(const struct dheap *h);
/* Frees the array (the nodes are the caller's). */
void dheap_free(struct dheap *h);

#endif
