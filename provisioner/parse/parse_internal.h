/* Helpers shared by the provisioner/parse/parse_*.c files.  Not a public API. */
#ifndef GPUFLEET_PROV_PARSE_INTERNAL_H
#define GPUFLEET_PROV_PARSE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h> /* PROV_ZERO */

#include "provisioner/parse/parse.h"
#include "provisioner/parse/parse_monitor.h"

/* Upper bound on items (GPUs, rows, links, ...) any parser accepts: keeps
 * garbage input from growing arrays without bound. */
#define PROV_MAX_ITEMS 4096

/* A borrowed, not NUL-terminated slice of the input. */
typedef struct prov_span {
    const char *p;
    size_t n;
} prov_span_t;

typedef struct prov_lines {
    const char *text;
    size_t len;
    size_t pos;
    unsigned lineno; /* of the last line returned */
} prov_lines_t;

void prov_lines_init(prov_lines_t *it, const char *text, size_t len);
/* Next line without its "\n" / "\r\n"; false at the end. */
bool prov_lines_next(prov_lines_t *it, prov_span_t *line);
/* Next line that is not blank, trimmed; false at the end. */
bool prov_lines_next_text(prov_lines_t *it, prov_span_t *text);

prov_span_t prov_span(const char *p, size_t n);
prov_span_t prov_trim(prov_span_t s);
prov_span_t prov_rtrim(prov_span_t s);
bool prov_span_empty(prov_span_t s); /* only whitespace */
bool prov_span_eq(prov_span_t s, const char *lit);
bool prov_span_ieq(prov_span_t s, const char *lit);
bool prov_span_starts(prov_span_t s, const char *lit);
/* Offset of `needle` in s, or -1. */
long prov_span_find(prov_span_t s, const char *needle);
long prov_span_ifind(prov_span_t s, const char *needle);
prov_span_t prov_span_from(prov_span_t s, size_t off);
prov_span_t prov_span_until_ws(prov_span_t s);
/* Copies at most cap-1 bytes (control bytes become '?') and NUL-terminates. */
void prov_span_copy(char *dst, size_t cap, prov_span_t s);
/* Splits on runs of whitespace; returns the token count (at most max). */
size_t prov_split_ws(prov_span_t s, prov_span_t *tok, size_t max);
/* Splits on `sep`; returns the field count (at most max; the last field
 * keeps the rest of the line). */
size_t prov_split_ch(prov_span_t s, char sep, prov_span_t *f, size_t max);

/* Parses a leading decimal number ("81559", "250.00", "-3") followed by an
 * optional unit ("MiB", "%", "W", "C", "GB/s"); also classifies markers. */
prov_num_t prov_parse_num(prov_span_t s);
/* Strict non-negative integer (all digits); -1 if not. */
long prov_parse_uint(prov_span_t s);
/* "Yes"/"No"/"Enabled"/"Disabled"/"On"/"Off" + markers. */
prov_flag_t prov_parse_flag(prov_span_t s);
/* Looks like "550.54.15" / "12.4": digits and dots, starts with a digit. */
bool prov_is_version(prov_span_t s);

void prov_err_set(prov_err_t *err, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- The parsers' one head and one cleanup tail (parse.h's contract: on failure the
 * result is zeroed, nothing to free, and *err says why; every prov_*_free is safe on a
 * zeroed struct and idempotent). */

/* The start of every parser: zeroes the result (size bytes) and *err (err may be NULL). */
void prov_parse_begin(void *res, size_t size, prov_err_t *err);
#define PROV_PARSE_BEGIN(res, err) prov_parse_begin((res), sizeof *(res), (err))

/* The end of every parser. rc == 0: the result stands, 0. Otherwise the partial result
 * is emptied by its own free_fn (PROV_ZERO for a result that owns nothing) and *err is
 * made to say why (the parser's reason, or "unreadable output" if it gave none): -1. */
int prov_parse_fail(prov_err_t *err);
#define PROV_PARSE_END(rc, err, res, free_fn) \
    ((rc) == 0 ? 0 : ((void)free_fn(res), prov_parse_fail(err)))
#define PROV_ZERO(res) memset((res), 0, sizeof *(res))

/* The body of every prov_*_free: frees the heap arrays the result owns (owned[0..n),
 * NULL entries allowed) and zeroes it (size bytes). PROV_RELEASE(res, arrays...) does
 * nothing when res is NULL. */
void prov_release(void *res, size_t size, void *const *owned, size_t n);
#define PROV_RELEASE(res, ...)                                                   \
    do {                                                                         \
        if ((res) != NULL)                                                       \
            prov_release((res), sizeof *(res), (void *const[]){__VA_ARGS__},     \
                         sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *)); \
    } while (0)

/* Grows *arr (elements of `elsz`) so that it holds at least `need`; new
 * memory is zeroed.  Returns 0, or -1 on overflow/ENOMEM/over PROV_MAX_ITEMS. */
int prov_grow(void **arr, size_t *cap, size_t need, size_t elsz);
/* Same with an explicit item limit instead of PROV_MAX_ITEMS. */
int prov_grow_max(void **arr, size_t *cap, size_t need, size_t elsz, size_t max);

/* Copy of text with ANSI CSI/OSC escape sequences removed.  Caller frees.
 * *outlen gets the new length.  NULL on ENOMEM. */
char *prov_strip_ansi(const char *text, size_t len, size_t *outlen);

/* "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" (nvidia-smi -L, nvlink -s).
 * The UUID part is optional.  Defined in parse_list.c. */
bool prov_parse_gpu_line(prov_span_t line, int *index, char *name, size_t name_cap, char *uuid,
                         size_t uuid_cap);

/* Splits a kernel log line into its time stamps and message body (the
 * prefixes listed in parse_monitor.h; parse_ktime.c).  *bad_time when a
 * stamp-shaped prefix had impossible values (t then lacks that part).
 * False for a syslog line of another program ("host systemd[1]: ..."). */
bool prov_kline_split(prov_span_t line, prov_ktime_t *t, prov_span_t *body, bool *bad_time);

/* JSON helpers: return new references; a number in a non-OK state becomes
 * null and, if `state_key` is given, the state is stored too. */
json_t *prov_num_json(prov_num_t n);
json_t *prov_flag_json(prov_flag_t f);
json_t *prov_str_json(const char *s); /* "" -> null */
/* A new object holding a new empty array under `key`; *arr borrows that
 * array (the object owns it).  NULL when out of memory. */
json_t *prov_json_with_array(const char *key, json_t **arr);

#endif
