/* dheap.c — see dheap.h. */
#include "common/dheap.h"

#include <stdlib.h>

static void place(struct dheap *h, size_t i, struct dheap_node *x)
{
    h->v[i] = x;
    x->idx = (long)i;
}

static void up(struct dheap *h, size_t i)
{
    struct dheap_node *x = h->v[i];
    while (i > 0 && x->due < h->v[(i - 1) / 2]->due) {
        place(h, i, h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    place(h, i, x);
}

static void down(struct dheap *h, size_t i)
{
    struct dheap_node *x = h->v[i];
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n)
            break;
        if (k + 1 < h->n && h->v[k + 1]->due < h->v[k]->due)
            k++;
        if (h->v[k]->due >= x->due)
            break;
        place(h, i, h->v[k]);
        i = k;
    }
    place(h, i, x);
}

void dheap_remove(struct dheap *h, struct dheap_node *x)
{
    if (x->idx < 0)
        return;
    size_t i = (size_t)x->idx;
    x->idx = -1;
    struct dheap_node *last = h->v[--h->n];
    if (last == x)
        return;
    place(h, i, last);
    up(h, i);
    down(h, (size_t)last->idx);
}

int dheap_set(struct dheap *h, struct dheap_node *x, int64_t due)
{
    if (due == 0) {
        dheap_remove(h, x);
        return 0;
    }
    if (x->idx >= 0) {
        int earlier = due < x->due;
        x->due = due;
        if (earlier)
            up(h, (size_t)x->idx);
        else
            down(h, (size_t)x->idx);
        return 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct dheap_node **v = realloc(h->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    x->due = due;
    place(h, h->n++, x);
    up(h, (size_t)x->idx);
    return 0;
}

struct dheap_node *dheap_top(const struct dheap *h)
{
    return h->n > 0 ? h->v[0] : NULL;
}

struct dheap_node *dheap_pop_due(struct dheap *h, int64_t now)
{
    struct dheap_node *top = dheap_top(h);
    if (top == NULL || top->due > now)
        return NULL;
    dheap_remove(h, top);
    return top;
}

void dheap_free(struct dheap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
