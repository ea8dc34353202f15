/* test_dheap.c — common/dheap.c against a brute-force model: random sets, moves, removals
 * and pops, checking after every step that the top is the earliest node held, that each
 * node knows whether it is held, and that the heap property holds throughout. */
#include <stdlib.h>

#include "common/dheap.h"
#include "tests/unit/unit.h"

struct item {
    int id;
    int64_t want; /* the model: 0 when not held */
    struct dheap_node node;
};

#define NITEMS 200

static int heap_ok(const struct dheap *h)
{
    for (size_t i = 0; i < h->n; i++) {
        if (h->v[i]->idx != (long)i)
            return 0;
        if (i > 0 && h->v[i]->due < h->v[(i - 1) / 2]->due)
            return 0;
    }
    return 1;
}

static int model_agrees(const struct dheap *h, const struct item *it)
{
    int64_t min = 0;
    size_t held = 0;
    for (int i = 0; i < NITEMS; i++) {
        if ((it[i].want != 0) != (it[i].node.idx >= 0))
            return 0;
        if (it[i].want != 0) {
            held++;
            if (it[i].node.due != it[i].want)
                return 0;
            if (min == 0 || it[i].want < min)
                min = it[i].want;
        }
    }
    const struct dheap_node *top = dheap_top(h);
    return held == h->n && (held == 0 ? top == NULL : top != NULL && top->due == min);
}

static void dheap_random(void)
{
    struct item it[NITEMS];
    struct dheap h = {0};
    for (int i = 0; i < NITEMS; i++)
        it[i] = (struct item){.id = i, .want = 0, .node = DHEAP_NODE_INIT};
    srand(42);
    int ok = 1;
    for (int step = 0; step < 20000 && ok; step++) {
        struct item *x = &it[rand() % NITEMS];
        int op = rand() % 10;
        if (op < 6) { /* set or move, with ties (a coarse clock) */
            int64_t due = 1 + rand() % 500;
            ok &= dheap_set(&h, &x->node, due) == 0;
            x->want = due;
        } else if (op < 8) { /* clear by a zero time, or remove (held or not) */
            if (op == 6)
                ok &= dheap_set(&h, &x->node, 0) == 0;
            else
                dheap_remove(&h, &x->node);
            x->want = 0;
        } else { /* pop the top: what the loops do with what is due */
            struct dheap_node *top = dheap_top(&h);
            if (top != NULL) {
                struct item *t = DHEAP_OWNER(top, struct item, node);
                dheap_remove(&h, top);
                t->want = 0;
            }
        }
        ok &= heap_ok(&h) && model_agrees(&h, it);
    }
    CHECK(ok);
    /* drained in order */
    int64_t last = 0;
    int ordered = 1;
    struct dheap_node *top;
    while ((top = dheap_top(&h)) != NULL) {
        ordered &= top->due >= last;
        last = top->due;
        dheap_remove(&h, top);
        DHEAP_OWNER(top, struct item, node)->want = 0;
    }
    CHECK(ordered && h.n == 0 && model_agrees(&h, it));
    dheap_free(&h);
}

static void dheap_edges(void)
{
    struct dheap h = {0};
    struct item a = {.node = DHEAP_NODE_INIT}, b = {.node = DHEAP_NODE_INIT};
    CHECK(dheap_top(&h) == NULL);
    dheap_remove(&h, &a.node); /* not held: nothing */
    CHECK(h.n == 0 && a.node.idx == -1);
    CHECK(dheap_set(&h, &a.node, 0) == 0 && h.n == 0); /* zero while not held: nothing */
    CHECK(dheap_set(&h, &a.node, 10) == 0 && dheap_set(&h, &b.node, 20) == 0);
    CHECK(dheap_top(&h) == &a.node);
    CHECK(dheap_set(&h, &a.node, 30) == 0 && dheap_top(&h) == &b.node); /* moved later */
    CHECK(dheap_set(&h, &a.node, 5) == 0 && dheap_top(&h) == &a.node);  /* moved earlier */
    CHECK(dheap_set(&h, &a.node, 5) == 0 && h.n == 2);                  /* same time */
    CHECK(dheap_pop_due(&h, 4) == NULL && h.n == 2);                    /* nothing due yet */
    CHECK(dheap_pop_due(&h, 5) == &a.node && a.node.idx == -1 && h.n == 1);
    CHECK(dheap_set(&h, &a.node, 5) == 0);
    dheap_remove(&h, &a.node);
    CHECK(h.n == 1 && a.node.idx == -1 && dheap_top(&h) == &b.node);
    dheap_remove(&h, &b.node);
    CHECK(h.n == 0 && dheap_top(&h) == NULL);
    dheap_free(&h);
    CHECK(h.v == NULL && h.cap == 0);
}

UNIT_SUITE(dheap_tests) = {
    {"dheap: 20,000 random sets, moves, removals and pops against a model", dheap_random},
    {"dheap: empty heap, zero times, moves both ways, pop of what is due, removal of the top",
     dheap_edges},
    UNIT_END,
};
