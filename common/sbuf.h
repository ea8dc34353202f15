/* sbuf.h — a growable string buffer. */
#ifndef GPUFLEET_SBUF_H
#define GPUFLEET_SBUF_H

#include <stddef.h>

struct sbuf {
    char *p;
    size_t len, cap;
    int failed; /* set when an allocation failed; the content is then incomplete */
};

void sbuf_init(struct sbuf *b, size_t cap);
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the NUL-terminated text (caller frees), or NULL when an allocation failed. */
char *sbuf_take(struct sbuf *b, size_t *len);

#endif
