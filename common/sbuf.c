/* sbuf.c — see sbuf.h. */
#include "common/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbuf_init(struct sbuf *b, size_t cap)
{
    b->cap = cap ? cap : 256;
    b->len = 0;
    b->p = malloc(b->cap);
    b->failed = b->p == NULL;
    if (b->p != NULL)
        b->p[0] = '\0';
}

static int reserve(struct sbuf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *np = realloc(b->p, cap);
    if (np == NULL) {
        b->failed = 1;
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    if (reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *sbuf_take(struct sbuf *b, size_t *len)
{
    if (b->failed) {
        free(b->p);
        b->p = NULL;
        return NULL;
    }
    if (len != NULL)
        *len = b->len;
    char *p = b->p;
    b->p = NULL;
    return p;
}
