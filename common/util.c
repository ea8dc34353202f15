/* util.c — see util.h. */
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int64_t util_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t util_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void util_rfc3339(int64_t us, char *out, size_t outlen)
{
    time_t secs = (time_t)(us / 1000000);
    long frac = (long)(us % 1000000);
    if (frac < 0) {
        frac += 1000000;
        secs -= 1;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int util_parse_rfc3339(const char *s, int64_t *us)
{
    int Y, M, D, h, m, sec;
    if (strlen(s) < 20 || digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
        digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
        s[13] != ':' || digits(s + 14, 2, &m) || s[16] != ':' || digits(s + 17, 2, &sec))
        return -1;
    if (Y < 1970 || Y > 9999 || M < 1 || M > 12 || D < 1 || h > 23 || m > 59 || sec > 60)
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (D > mdays[M - 1] || (M == 2 && D == 29 && !leap))
        return -1;
    const char *p = s + 19;
    long frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        long scale = 100000;
        while (isdigit((unsigned char)*p)) {
            if (nd < 6) {
                frac += (*p - '0') * scale;
                scale /= 10;
            }
            nd++;
            p++;
        }
        if (nd == 0 || nd > 9)
            return -1;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return -1;
        offset = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec > 59 ? 59 : sec;
    time_t t = timegm(&tm);
    *us = ((int64_t)t - offset) * 1000000 + frac;
    return 0;
}

int util_random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void util_uuid4(char out[UTIL_UUID_LEN + 1])
{
    unsigned char b[16];
    if (util_random(b, sizeof b) != 0)
        abort(); /* no entropy: nothing safe to do */
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    /* 8-4-4-4-12 hex digits */
    static const char digits[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = digits[b[i] >> 4];
        out[o++] = digits[b[i] & 15];
    }
    out[o] = '\0';
}

int util_is_uuid(const char *s)
{
    if (s == NULL || strlen(s) != UTIL_UUID_LEN)
        return 0;
    for (int i = 0; i < UTIL_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

int util_printable_ascii(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* ---- base64, through OpenSSL (EVP_EncodeBlock / EVP_DecodeBlock) ----
 * Decoding is strict: the input must be the canonical encoding of what it decodes to
 * (checked by encoding the result again), so no stray bits, no padding in the middle,
 * no characters outside the alphabet. */

/* Decodes padded standard base64 std[len] (len a multiple of 4); *out is malloc'd and
 * NUL-terminated. Returns 0, or -1 (not canonical base64, or out of memory). The
 * scratch copies are wiped before they are freed: the text may be a private key. */
static int b64_decode_canonical(const char *std, size_t len, unsigned char **out, size_t *outlen)
{
    if (len % 4 != 0 || len > (size_t)INT_MAX / 2)
        return -1;
    unsigned char *buf = malloc(len / 4 * 3 + 1);
    char *again = malloc(len + 1);
    int n = buf && again ? EVP_DecodeBlock(buf, (const unsigned char *)std, (int)len) : -1;
    size_t pad = len > 0 && std[len - 1] == '=' ? (len > 1 && std[len - 2] == '=' ? 2 : 1) : 0;
    if (n >= 0 && (size_t)n >= pad) {
        n -= (int)pad;
        if ((size_t)EVP_EncodeBlock((unsigned char *)again, buf, n) == len &&
            memcmp(again, std, len) == 0) {
            OPENSSL_cleanse(again, len + 1);
            free(again);
            buf[n] = '\0';
            *out = buf;
            *outlen = (size_t)n;
            return 0;
        }
    }
    if (again != NULL)
        OPENSSL_cleanse(again, len + 1);
    if (buf != NULL)
        OPENSSL_cleanse(buf, len / 4 * 3 + 1);
    free(again);
    free(buf);
    return -1;
}

char *util_b64url_encode(const unsigned char *in, size_t len)
{
    if (len > (size_t)INT_MAX / 2)
        return NULL;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (out == NULL)
        return NULL;
    int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    while (n > 0 && out[n - 1] == '=')
        n--;
    out[n] = '\0';
    for (char *p = out; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    return out;
}

/* Copies in[len] into the standard alphabet with padding, then decodes it canonically.
 * url: the base64url alphabet, no padding, no whitespace; else the standard alphabet,
 * whitespace ignored, padding optional. */
static int b64_decode_as(const char *in, size_t len, int url, unsigned char **out, size_t *outlen)
{
    if (len > (size_t)INT_MAX / 2)
        return -1;
    char *std = malloc(len + 4);
    if (std == NULL)
        return -1;
    size_t n = 0;
    int bad = 0;
    for (size_t i = 0; i < len && !bad; i++) {
        char c = in[i];
        if (!url && (c == ' ' || c == '\t' || c == '\r' || c == '\n'))
            continue;
        bad = c == '\0' || (url ? (c == '+' || c == '/' || c == '=') : (c == '-' || c == '_'));
        std[n++] = url && c == '-' ? '+' : url && c == '_' ? '/' : c;
    }
    bad = bad || n % 4 == 1;
    while (!bad && n % 4 != 0) /* padding: never given (url), optional (standard) */
        std[n++] = '=';
    int rc = bad ? -1 : b64_decode_canonical(std, n, out, outlen);
    OPENSSL_cleanse(std, len + 4);
    free(std);
    return rc;
}

int util_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode_as(in, len, 1, out, outlen);
}

int util_b64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode_as(in, len, 0, out, outlen);
}

/* SHA256() in OpenSSL 3 fetches the algorithm from the provider on every call
 * (EVP_Q_digest -> EVP_MD_fetch: a lock and a name lookup): about 3 % of the server's CPU on
 * an authenticated GET, which hashes twice (the token, the ETag). The fetched EVP_MD is
 * kept for the process's life instead. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void util_sha256(const void *data, size_t len, unsigned char out[32])
{
    pthread_once(&sha256_once, sha256_fetch);
    if (sha256_md == NULL || EVP_Digest(data, len, out, NULL, sha256_md, NULL) != 1)
        SHA256(data, len, out);
}

static void hex_of(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void util_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    util_sha256(data, len, md);
    hex_of(md, sizeof md, out);
}

int util_ct_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

int util_parse_long(const char *s, long min, long max, long *out)
{
    if (s == NULL || *s == '\0' || strlen(s) > 20)
        return -1;
    for (const char *p = (*s == '-') ? s + 1 : s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int util_parse_duration(const char *s, long *secs)
{
    if (s == NULL)
        return -1;
    size_t n = strlen(s);
    if (n == 0 || n > 12)
        return -1;
    long mult = 1;
    char num[16];
    memcpy(num, s, n + 1);
    switch (num[n - 1]) {
    case 's':
        mult = 1;
        num[n - 1] = '\0';
        break;
    case 'm':
        mult = 60;
        num[n - 1] = '\0';
        break;
    case 'h':
        mult = 3600;
        num[n - 1] = '\0';
        break;
    case 'd':
        mult = 86400;
        num[n - 1] = '\0';
        break;
    default: break;
    }
    long v;
    if (util_parse_long(num, 1, 10L * 366 * 86400, &v) != 0)
        return -1;
    if (v > 10L * 366 * 86400 / mult)
        return -1;
    *secs = v * mult;
    return 0;
}

int64_t util_floor_us(int64_t us, int64_t unit)
{
    int64_t q = us / unit;
    if (us % unit != 0 && us < 0)
        q--;
    return q * unit;
}

int64_t util_ceil_us(int64_t us, int64_t unit)
{
    int64_t f = util_floor_us(us, unit);
    return f == us ? us : f + unit;
}

int util_lookup(const char *const *names, const char *s)
{
    for (int i = 0; s != NULL && names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

void util_malloc_release(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
