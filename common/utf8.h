/* utf8.h — making untrusted bytes (host output, tool output) safe for JSON text.
 *
 * Validity is the Unicode definition (RFC 3629): no overlong forms, no surrogates
 * (ED A0..BF), nothing above U+10FFFF, no stray continuation bytes, no C0/C1/F5..FF
 * lead bytes. A NUL byte is treated as invalid here as well: C strings and jansson's
 * json_string() would cut or refuse the text at it.
 *
 * Cleaning replaces each maximal ill-formed subsequence (Unicode 15 §3.9, "U+FFFD
 * substitution of maximal subparts", as Python's errors="replace" does) and each NUL
 * byte with U+FFFD (EF BF BD). E.g. "E2 82" cut off before its last byte becomes one
 * U+FFFD; "C0 AF" (an overlong '/') becomes two. */
#ifndef GPUFLEET_UTF8_H
#define GPUFLEET_UTF8_H

#include <jansson.h>
#include <stddef.h>

/* Writes the cleaned form of src[0..srclen) into dst, NUL-terminated whenever
 * dstcap > 0, stopping before the first character (or U+FFFD) that does not fit in
 * dstcap - 1 bytes: a character is never cut. src may be NULL when srclen is 0.
 * Returns the bytes written, excluding the NUL. */
size_t utf8_clean(const char *src, size_t srclen, char *dst, size_t dstcap);

/* Text for a log line (a request path): cleaned as utf8_clean does, then each ASCII control
 * byte, DEL and the backslash written as \xNN and each C1 control as \u00NN, so the text holds
 * no control character once the JSON line is decoded. At most dstcap - 1 bytes; when the
 * source was cut (at a character), it ends with "…" (U+2026). Returns the bytes written. */
size_t utf8_log_text(const char *src, size_t srclen, char *dst, size_t dstcap);

/* A malloc'd cleaned copy of the start of src[0..srclen), at most maxbytes bytes (plus
 * the NUL), cut at a character boundary. Caller frees. NULL only when out of memory. */
char *utf8_dup(const char *src, size_t srclen, size_t maxbytes);

/* The same, but keeps the end of src: at most maxbytes bytes of cleaned text, starting
 * at a character boundary of the source. Caller frees. NULL only when out of memory. */
char *utf8_dup_tail(const char *src, size_t srclen, size_t maxbytes);

/* The first line of s (up to '\n'; a '\r' before it dropped), cleaned and cut at a
 * character boundary to fit buf[n] (n > 0). s may be NULL (""). Returns buf. */
const char *utf8_first_line(const char *s, char *buf, size_t n);

/* A new JSON string of the cleaned s[0..len) (s may be NULL when len is 0): never fails
 * on the bytes, only when out of memory (NULL). */
json_t *utf8_json(const char *s, size_t len);

/* 1 when s[0..len) is valid UTF-8 without NUL bytes (utf8_clean leaves it unchanged),
 * else 0. */
int utf8_valid(const char *s, size_t len);

#endif
