/* util.h — small pure helpers: time, ids, encodings, hashing. */
#ifndef GPUFLEET_UTIL_H
#define GPUFLEET_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define UTIL_UUID_LEN 36

int64_t util_now_us(void);  /* wall clock, microseconds since the epoch */
int64_t util_mono_us(void); /* monotonic clock */

/* Formats as RFC 3339 UTC with microseconds ("2026-11-30T05:28:14.123456Z"). */
void util_rfc3339(int64_t us, char *out, size_t outlen);
/* Parses an RFC 3339 date-time (Z or ±hh:mm offset). Returns 0 on success. */
int util_parse_rfc3339(const char *s, int64_t *us);
/* us rounded down (floor) and up (ceil) to a multiple of unit (unit > 0). */
int64_t util_floor_us(int64_t us, int64_t unit);
int64_t util_ceil_us(int64_t us, int64_t unit);

/* Fills buf with cryptographically secure random bytes. Returns 0 on success. */
int util_random(void *buf, size_t len);
/* Writes a random (v4) UUID and a NUL into out[37]. */
void util_uuid4(char out[UTIL_UUID_LEN + 1]);
/* True when s is a canonical lowercase or uppercase 8-4-4-4-12 UUID. */
int util_is_uuid(const char *s);
/* 1 when s is 1 to max characters, each printable ASCII other than the space (0x21-0x7e). */
int util_printable_ascii(const char *s, size_t max);

/* base64url without padding. Caller frees the result. */
char *util_b64url_encode(const unsigned char *in, size_t len);
/* Decodes base64url (no padding, strict alphabet). Caller frees *out (NUL-terminated
 * as a convenience). Returns 0 on success. */
int util_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);
/* Decodes standard base64 (whitespace ignored, padding optional, canonical only). Caller
 * frees *out (NUL-terminated as a convenience). Returns 0 on success. */
int util_b64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

/* Lowercase hex SHA-256 of data; out must hold 65 bytes. */
void util_sha256_hex(const void *data, size_t len, char out[65]);
void util_sha256(const void *data, size_t len, unsigned char out[32]);
/* Constant-time comparison. */
int util_ct_equal(const void *a, const void *b, size_t len);

/* Parses "90", "30s", "15m", "1h", "7d" into seconds (1..10 years). Returns 0 on success. */
int util_parse_duration(const char *s, long *secs);
/* The index of s in names (NULL-terminated), or -1 (also when s is NULL). */
int util_lookup(const char *const *names, const char *s);
/* Strict decimal parse of a whole long in [min,max]. Returns 0 on success. */
int util_parse_long(const char *s, long min, long max, long *out);

/* Hands the free pages inside malloc's arenas back to the kernel (glibc's malloc_trim; a
 * no-op elsewhere): for a long pass that frees a large part of its inputs before it builds
 * the next, so that the pages freed count once in the process's peak RSS, not twice. */
void util_malloc_release(void);

#endif
