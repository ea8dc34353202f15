/* utf8.c — see utf8.h. */
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
#define REPLACEMENT_LEN 3

/* Length of the sequence at p[0..n): a valid character (*ok = 1), or the maximal
 * ill-formed subpart to replace by one U+FFFD (*ok = 0). Always ≥ 1 when n ≥ 1. */
static size_t seq_len(const unsigned char *p, size_t n, int *ok)
{
    unsigned char b = p[0];
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    size_t need;
    *ok = 0;
    if (b == 0x00)
        return 1;
    if (b < 0x80) {
        *ok = 1;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0)
            lo = 0xA0; /* overlong */
        else if (b == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0)
            lo = 0x90; /* overlong */
        else if (b == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 1; /* stray continuation, C0/C1 overlong lead, F5..FF */
    }
    size_t i = 1;
    if (i >= n || p[i] < lo || p[i] > hi)
        return 1;
    for (i = 2; i < need; i++)
        if (i >= n || p[i] < 0x80 || p[i] > 0xBF)
            return i;
    *ok = 1;
    return need;
}

size_t utf8_clean(const char *src, size_t srclen, char *dst, size_t dstcap)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;
    if (dstcap == 0)
        return 0;
    for (size_t i = 0; i < srclen;) {
        int ok;
        size_t k = seq_len(p + i, srclen - i, &ok);
        size_t w = ok ? k : REPLACEMENT_LEN;
        if (o + w > dstcap - 1)
            break;
        memcpy(dst + o, ok ? (const char *)p + i : replacement, w);
        o += w;
        i += k;
    }
    dst[o] = '\0';
    return o;
}

size_t utf8_log_text(const char *src, size_t srclen, char *dst, size_t dstcap)
{
    static const char ellipsis[] = "\xE2\x80\xA6"; /* U+2026 */
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0, i = 0;
    if (dstcap == 0)
        return 0;
    /* room kept for the ellipsis that marks a cut */
    size_t room = dstcap - 1 >= sizeof ellipsis - 1 ? dstcap - 1 - (sizeof ellipsis - 1) : 0;
    while (i < srclen) {
        int ok;
        size_t k = seq_len(p + i, srclen - i, &ok);
        char esc[8];
        const char *w = ok ? (const char *)p + i : replacement;
        size_t wn = ok ? k : REPLACEMENT_LEN;
        if (ok && k == 1 && (p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\')) {
            snprintf(esc, sizeof esc, "\\x%02x", p[i]);
            w = esc, wn = 4;
        } else if (ok && k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0) { /* C1 U+0080..U+009F */
            snprintf(esc, sizeof esc, "\\u%04x", p[i + 1]);
            w = esc, wn = 6;
        }
        if (o + wn > room)
            break;
        memcpy(dst + o, w, wn);
        o += wn;
        i += k;
    }
    if (i < srclen && o + sizeof ellipsis - 1 <= dstcap - 1) {
        memcpy(dst + o, ellipsis, sizeof ellipsis - 1);
        o += sizeof ellipsis - 1;
    }
    dst[o] = '\0';
    return o;
}

int utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        int ok;
        i += seq_len(p + i, len - i, &ok);
        if (!ok)
            return 0;
    }
    return 1;
}

/* Cleaned text of src[0..srclen) is at most 3 bytes per source byte. */
static char *clean_alloc(const char *src, size_t srclen, size_t *outlen)
{
    size_t cap =
        srclen > ((size_t)-1 - 1) / REPLACEMENT_LEN ? (size_t)-1 : srclen * REPLACEMENT_LEN + 1;
    char *d = malloc(cap);
    if (d != NULL)
        *outlen = utf8_clean(src, srclen, d, cap);
    return d;
}

char *utf8_dup(const char *src, size_t srclen, size_t maxbytes)
{
    /* cleaning never shrinks text, so maxbytes of source give at least maxbytes of output */
    if (maxbytes == (size_t)-1)
        maxbytes--;
    size_t n = srclen < maxbytes ? srclen : maxbytes;
    size_t cap = (n < maxbytes / REPLACEMENT_LEN ? n * REPLACEMENT_LEN : maxbytes) + 1;
    char *d = malloc(cap);
    if (d != NULL)
        utf8_clean(src, srclen, d, cap);
    return d;
}

char *utf8_dup_tail(const char *src, size_t srclen, size_t maxbytes)
{
    if (src == NULL) {
        src = "";
        srclen = 0;
    }
    size_t start = srclen > maxbytes ? srclen - maxbytes : 0;
    /* a character boundary of the source: skip at most 3 continuation bytes */
    for (int k = 0;
         k < 3 && start > 0 && start < srclen && ((unsigned char)src[start] & 0xC0) == 0x80; k++)
        start++;
    size_t len = 0;
    char *d = clean_alloc(src + start, srclen - start, &len);
    if (d == NULL || len <= maxbytes)
        return d;
    /* replacements made it longer: keep the last maxbytes, at a boundary of the (valid) text */
    size_t from = len - maxbytes;
    while (from < len && ((unsigned char)d[from] & 0xC0) == 0x80)
        from++;
    memmove(d, d + from, len - from + 1);
    return d;
}

const char *utf8_first_line(const char *s, char *buf, size_t n)
{
    if (s == NULL)
        s = "";
    size_t len = strcspn(s, "\n");
    if (len > 0 && s[len - 1] == '\r')
        len--;
    utf8_clean(s, len, buf, n);
    return buf;
}

json_t *utf8_json(const char *s, size_t len)
{
    char *c = utf8_dup(s, len, (size_t)-1);
    if (c == NULL)
        return NULL;
    json_t *j = json_string(c);
    free(c);
    return j;
}
