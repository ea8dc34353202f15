/* jw.c — see jw.h. */
#include "common/jw.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void jw_init(struct jw *w, size_t cap)
{
    sbuf_init(&w->b, cap);
    w->depth = 0;
    w->count[0] = 0;
}

static void member(struct jw *w, const char *key)
{
    if (w->count[w->depth]++ > 0)
        sbuf_add(&w->b, ",", 1);
    if (key != NULL) {
        sbuf_add(&w->b, "\"", 1);
        sbuf_adds(&w->b, key);
        sbuf_add(&w->b, "\":", 2);
    }
}

static void open_level(struct jw *w, const char *key, char c)
{
    member(w, key);
    sbuf_add(&w->b, &c, 1);
    assert(w->depth + 1 < JW_MAX_DEPTH);
    w->count[++w->depth] = 0;
}

void jw_obj(struct jw *w, const char *key)
{
    open_level(w, key, '{');
}
void jw_arr(struct jw *w, const char *key)
{
    open_level(w, key, '[');
}

void jw_obj_end(struct jw *w)
{
    assert(w->depth > 0);
    w->depth--;
    sbuf_add(&w->b, "}", 1);
}

void jw_arr_end(struct jw *w)
{
    assert(w->depth > 0);
    w->depth--;
    sbuf_add(&w->b, "]", 1);
}

void jw_str(struct jw *w, const char *key, const char *val)
{
    if (val == NULL) {
        jw_null(w, key);
        return;
    }
    member(w, key);
    sbuf_add(&w->b, "\"", 1);
    const char *run = val;
    for (const unsigned char *p = (const unsigned char *)val; *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        sbuf_add(&w->b, run, (size_t)((const char *)p - run));
        char esc[8];
        if (*p == '"' || *p == '\\')
            snprintf(esc, sizeof esc, "\\%c", *p);
        else
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        sbuf_adds(&w->b, esc);
        run = (const char *)p + 1;
    }
    sbuf_adds(&w->b, run);
    sbuf_add(&w->b, "\"", 1);
}

void jw_int(struct jw *w, const char *key, long long v)
{
    char buf[24];
    member(w, key);
    int n = snprintf(buf, sizeof buf, "%lld", v);
    sbuf_add(&w->b, buf, (size_t)n);
}

void jw_num(struct jw *w, const char *key, double v)
{
    if (!isfinite(v)) {
        jw_null(w, key);
        return;
    }
    char buf[32];
    member(w, key);
    int n = snprintf(buf, sizeof buf, "%.15g", v);
    sbuf_add(&w->b, buf, (size_t)n);
}

void jw_bool(struct jw *w, const char *key, int v)
{
    member(w, key);
    sbuf_adds(&w->b, v ? "true" : "false");
}

void jw_null(struct jw *w, const char *key)
{
    member(w, key);
    sbuf_add(&w->b, "null", 4);
}

char *jw_take(struct jw *w)
{
    assert(w->depth == 0);
    return sbuf_take(&w->b, NULL);
}
