/* Shared helpers for the tool-output parsers: spans, lines, numbers, errors. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

void prov_lines_init(prov_lines_t *it, const char *text, size_t len)
{
    assert(it);
    it->text = text;
    it->len = text ? len : 0;
    it->pos = 0;
    it->lineno = 0;
}

bool prov_lines_next(prov_lines_t *it, prov_span_t *line)
{
    if (it->pos >= it->len)
        return false;
    const char *start = it->text + it->pos;
    size_t rest = it->len - it->pos;
    const char *nl = memchr(start, '\n', rest);
    size_t n = nl ? (size_t)(nl - start) : rest;
    it->pos += nl ? n + 1 : n;
    if (n > 0 && start[n - 1] == '\r')
        n--;
    it->lineno++;
    line->p = start;
    line->n = n;
    return true;
}

bool prov_lines_next_text(prov_lines_t *it, prov_span_t *text)
{
    prov_span_t line;
    while (prov_lines_next(it, &line)) {
        *text = prov_trim(line);
        if (text->n > 0)
            return true;
    }
    return false;
}

prov_span_t prov_span(const char *p, size_t n)
{
    prov_span_t s = {p, p ? n : 0};
    return s;
}

prov_span_t prov_trim(prov_span_t s)
{
    while (s.n > 0 && is_ws(s.p[0])) {
        s.p++;
        s.n--;
    }
    return prov_rtrim(s);
}

prov_span_t prov_rtrim(prov_span_t s)
{
    while (s.n > 0 && is_ws(s.p[s.n - 1]))
        s.n--;
    return s;
}

bool prov_span_empty(prov_span_t s)
{
    return prov_trim(s).n == 0;
}

bool prov_span_eq(prov_span_t s, const char *lit)
{
    size_t l = strlen(lit);
    return s.n == l && (l == 0 || memcmp(s.p, lit, l) == 0);
}

bool prov_span_ieq(prov_span_t s, const char *lit)
{
    size_t l = strlen(lit);
    return s.n == l && (l == 0 || strncasecmp(s.p, lit, l) == 0);
}

bool prov_span_starts(prov_span_t s, const char *lit)
{
    size_t l = strlen(lit);
    return s.n >= l && (l == 0 || memcmp(s.p, lit, l) == 0);
}

long prov_span_find(prov_span_t s, const char *needle)
{
    size_t l = strlen(needle);
    if (l == 0)
        return 0;
    if (s.n < l)
        return -1;
    for (size_t i = 0; i + l <= s.n; i++)
        if (s.p[i] == needle[0] && memcmp(s.p + i, needle, l) == 0)
            return (long)i;
    return -1;
}

long prov_span_ifind(prov_span_t s, const char *needle)
{
    size_t l = strlen(needle);
    if (l == 0)
        return 0;
    if (s.n < l)
        return -1;
    /* strncasecmp(s.p + i, needle, l) == 0 spelled out: a call per position cost most of
     * the parsers' time (an intercepted call per position under ASan) */
    int first = tolower((unsigned char)needle[0]);
    for (size_t i = 0; i + l <= s.n; i++) {
        if (tolower((unsigned char)s.p[i]) != first)
            continue;
        size_t j = 1;
        while (j < l && tolower((unsigned char)s.p[i + j]) == tolower((unsigned char)needle[j]))
            j++;
        if (j == l)
            return (long)i;
    }
    return -1;
}

prov_span_t prov_span_from(prov_span_t s, size_t off)
{
    if (off > s.n)
        off = s.n;
    s.p += off;
    s.n -= off;
    return s;
}

prov_span_t prov_span_until_ws(prov_span_t s)
{
    size_t i = 0;
    while (i < s.n && !is_ws(s.p[i]))
        i++;
    s.n = i;
    return s;
}

void prov_span_copy(char *dst, size_t cap, prov_span_t s)
{
    assert(dst && cap > 0);
    size_t n = s.n < cap - 1 ? s.n : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        dst[i] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
    }
    dst[n] = '\0';
}

size_t prov_split_ws(prov_span_t s, prov_span_t *tok, size_t max)
{
    size_t nt = 0, i = 0;
    while (i < s.n && nt < max) {
        while (i < s.n && is_ws(s.p[i]))
            i++;
        if (i >= s.n)
            break;
        size_t st = i;
        while (i < s.n && !is_ws(s.p[i]))
            i++;
        tok[nt].p = s.p + st;
        tok[nt].n = i - st;
        nt++;
    }
    return nt;
}

size_t prov_split_ch(prov_span_t s, char sep, prov_span_t *f, size_t max)
{
    assert(max > 0);
    size_t nf = 0, st = 0;
    for (size_t i = 0; i <= s.n; i++) {
        if (i == s.n || (s.p[i] == sep && nf + 1 < max)) {
            f[nf].p = s.p + st;
            f[nf].n = i - st;
            nf++;
            st = i + 1;
            if (i == s.n || nf == max)
                break;
        }
    }
    return nf;
}

prov_vstate_t prov_value_state(const char *s, size_t n)
{
    prov_span_t v = prov_trim(prov_span(s, n));
    if (v.n == 0)
        return PROV_V_ABSENT;
    if (prov_span_ieq(v, "[N/A]") || prov_span_ieq(v, "N/A") || prov_span_ieq(v, "(null)"))
        return PROV_V_NA;
    if (prov_span_ieq(v, "[Not Supported]") || prov_span_ieq(v, "Not Supported"))
        return PROV_V_NOT_SUPPORTED;
    if (prov_span_ifind(v, "deprecated") >= 0 && v.p[0] == '[')
        return PROV_V_DEPRECATED;
    if (prov_span_ieq(v, "[Unknown Error]") || prov_span_ieq(v, "Unknown Error"))
        return PROV_V_UNKNOWN_ERROR;
    if (prov_span_starts(v, "ERR!") || prov_span_ieq(v, "[GPU requires reset]") ||
        prov_span_ieq(v, "[GPU is lost]") || prov_span_ieq(v, "[Insufficient Permissions]"))
        return PROV_V_ERR;
    if (v.p[0] == '[' && v.p[v.n - 1] == ']')
        return PROV_V_UNKNOWN_ERROR; /* some other bracketed marker */
    return PROV_V_OK;
}

const char *prov_vstate_name(prov_vstate_t st)
{
    switch (st) {
    case PROV_V_ABSENT: return "absent";
    case PROV_V_OK: return "ok";
    case PROV_V_NA: return "n/a";
    case PROV_V_NOT_SUPPORTED: return "not_supported";
    case PROV_V_DEPRECATED: return "deprecated";
    case PROV_V_UNKNOWN_ERROR: return "unknown_error";
    case PROV_V_ERR: return "err";
    case PROV_V_INVALID: return "invalid";
    }
    return "invalid";
}

prov_num_t prov_parse_num(prov_span_t s)
{
    prov_num_t r = {PROV_V_INVALID, 0};
    s = prov_trim(s);
    prov_vstate_t st = prov_value_state(s.p, s.n);
    if (st != PROV_V_OK) {
        r.st = st;
        return r;
    }
    size_t i = 0;
    if (i < s.n && (s.p[i] == '-' || s.p[i] == '+'))
        i++;
    size_t digits = 0;
    while (i < s.n && isdigit((unsigned char)s.p[i])) {
        i++;
        digits++;
    }
    if (i < s.n && s.p[i] == '.') {
        i++;
        while (i < s.n && isdigit((unsigned char)s.p[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0 || i > 40)
        return r;
    /* The rest must be a unit: optional space, then letters, %, / */
    for (size_t j = i; j < s.n; j++) {
        unsigned char c = (unsigned char)s.p[j];
        if (!(isalpha(c) || c == '%' || c == '/' || c == ' ' || c == '(' || c == ')'))
            return r;
    }
    char buf[48];
    memcpy(buf, s.p, i);
    buf[i] = '\0';
    r.v = strtod(buf, NULL);
    r.st = PROV_V_OK;
    return r;
}

long prov_parse_uint(prov_span_t s)
{
    s = prov_trim(s);
    if (s.n == 0 || s.n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!isdigit((unsigned char)s.p[i]))
            return -1;
        v = v * 10 + (s.p[i] - '0');
    }
    return v;
}

prov_flag_t prov_parse_flag(prov_span_t s)
{
    prov_flag_t f = {PROV_V_INVALID, false};
    s = prov_trim(s);
    prov_vstate_t st = prov_value_state(s.p, s.n);
    if (st != PROV_V_OK) {
        f.st = st;
        return f;
    }
    static const char *const yes[] = {"yes", "enabled", "on", "true", "1"};
    static const char *const no[] = {"no", "disabled", "off", "false", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (prov_span_ieq(s, yes[i])) {
            f.st = PROV_V_OK;
            f.v = true;
        }
        if (prov_span_ieq(s, no[i])) {
            f.st = PROV_V_OK;
            f.v = false;
        }
    }
    return f;
}

bool prov_is_version(prov_span_t s)
{
    if (s.n == 0 || s.n >= PROV_VER_MAX || !isdigit((unsigned char)s.p[0]))
        return false;
    for (size_t i = 0; i < s.n; i++)
        if (!isdigit((unsigned char)s.p[i]) && s.p[i] != '.')
            return false;
    return true;
}

void prov_err_set(prov_err_t *err, unsigned line, unsigned col, const char *fmt, ...)
{
    if (!err)
        return;
    err->line = line;
    err->col = col;
    int n = 0;
    if (line && col)
        n = snprintf(err->msg, sizeof err->msg, "line %u, column %u: ", line, col);
    else if (line)
        n = snprintf(err->msg, sizeof err->msg, "line %u: ", line);
    if (n < 0 || (size_t)n >= sizeof err->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

void prov_parse_begin(void *res, size_t size, prov_err_t *err)
{
    assert(res);
    memset(res, 0, size);
    if (err)
        memset(err, 0, sizeof *err);
}

int prov_parse_fail(prov_err_t *err)
{
    if (err && !err->msg[0])
        prov_err_set(err, 0, 0, "unreadable output");
    return -1;
}

void prov_release(void *res, size_t size, void *const *owned, size_t n)
{
    assert(res);
    for (size_t i = 0; i < n; i++)
        free(owned[i]);
    memset(res, 0, size);
}

int prov_grow(void **arr, size_t *cap, size_t need, size_t elsz)
{
    return prov_grow_max(arr, cap, need, elsz, PROV_MAX_ITEMS);
}

int prov_grow_max(void **arr, size_t *cap, size_t need, size_t elsz, size_t max)
{
    assert(arr && cap && elsz > 0);
    if (need <= *cap)
        return 0;
    if (need > max)
        return -1;
    size_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > max)
        ncap = max;
    if (ncap > SIZE_MAX / elsz)
        return -1;
    void *p = realloc(*arr, ncap * elsz);
    if (!p)
        return -1;
    memset((char *)p + *cap * elsz, 0, (ncap - *cap) * elsz);
    *arr = p;
    *cap = ncap;
    return 0;
}

char *prov_strip_ansi(const char *text, size_t len, size_t *outlen)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == 0x1b && i + 1 < len && text[i + 1] == '[') {
            /* CSI: parameters/intermediates, then a final byte 0x40-0x7e */
            i += 2;
            while (i < len && !((unsigned char)text[i] >= 0x40 && (unsigned char)text[i] <= 0x7e))
                i++;
            continue;
        }
        if (c == 0x1b && i + 1 < len && text[i + 1] == ']') {
            /* OSC: until BEL or ESC \ */
            i += 2;
            while (i < len && text[i] != '\a' &&
                   !(text[i] == 0x1b && i + 1 < len && text[i + 1] == '\\'))
                i++;
            if (i < len && text[i] == 0x1b)
                i++;
            continue;
        }
        if (c == 0x1b)
            continue;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

json_t *prov_num_json(prov_num_t n)
{
    if (n.st != PROV_V_OK)
        return json_null();
    if (n.v > -9e15 && n.v < 9e15 && n.v == (double)(long long)n.v)
        return json_integer((json_int_t)n.v);
    return json_real(n.v);
}

json_t *prov_flag_json(prov_flag_t f)
{
    return f.st == PROV_V_OK ? json_boolean(f.v) : json_null();
}

json_t *prov_str_json(const char *s)
{
    if (!s || !s[0])
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    /* Not valid UTF-8 (tool output is untrusted): keep ASCII only. */
    size_t n = strlen(s);
    char *a = malloc(n + 1);
    if (!a)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        a[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
    j = json_string(a);
    free(a);
    return j;
}

/* Value of 1..max hex digits at s[*i] (advancing *i); -1 if none or more. */
static long hex_run(const char *s, size_t n, size_t *i, size_t max)
{
    size_t st = *i;
    long v = 0;
    while (*i < n && isxdigit((unsigned char)s[*i])) {
        if (*i - st >= max)
            return -1;
        char c = (char)tolower((unsigned char)s[*i]);
        v = v * 16 + (c <= '9' ? c - '0' : c - 'a' + 10);
        (*i)++;
    }
    return *i > st ? v : -1;
}

bool prov_pci_canon(const char *s, size_t n, char *out, bool *function_implied)
{
    assert(out);
    out[0] = '\0';
    if (function_implied)
        *function_implied = false;
    prov_span_t v = prov_trim(prov_span(s, n));
    size_t i = 0, st;
    long dom = hex_run(v.p, v.n, &i, 8);
    if (dom < 0 || i >= v.n || v.p[i++] != ':')
        return false;
    st = i;
    long bus = hex_run(v.p, v.n, &i, 2);
    if (bus < 0 || i - st != 2 || i >= v.n || v.p[i++] != ':')
        return false;
    st = i;
    long dev = hex_run(v.p, v.n, &i, 2);
    if (dev < 0 || i - st != 2 || dev > 0x1f)
        return false;
    long fn = 0;
    bool implied = i == v.n;
    if (!implied) {
        if (v.p[i++] != '.' || i + 1 != v.n || v.p[i] < '0' || v.p[i] > '7')
            return false;
        fn = v.p[i] - '0';
    }
    snprintf(out, PROV_PCI_MAX, "%08X:%02X:%02X.%X", (unsigned)dom & 0xffffffffu,
             (unsigned)bus & 0xffu, (unsigned)dev & 0x1fu, (unsigned)fn & 7u);
    if (function_implied)
        *function_implied = implied;
    return true;
}

json_t *prov_json_with_array(const char *key, json_t **arr)
{
    json_t *root = json_object();
    *arr = json_array();
    if (!root || !*arr || json_object_set(root, key, *arr) != 0) {
        json_decref(root);
        json_decref(*arr);
        *arr = NULL;
        return NULL;
    }
    json_decref(*arr); /* root holds it now; *arr stays a borrowed pointer */
    return root;
}
