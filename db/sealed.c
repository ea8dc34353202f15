/* sealed.c — see sealed.h. */
#include "db/sealed.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *db_bytea_hex(const unsigned char *b, size_t n)
{
    char *s = malloc(2 * n + 3);
    if (s == NULL)
        return NULL;
    s[0] = '\\';
    s[1] = 'x';
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 + 2 * i, 3, "%02x", b[i]);
    return s;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes lowercase hex into a malloc'd buffer. Returns 0, or -1. */
static int unhex(const char *s, unsigned char **out, size_t *len)
{
    size_t n = strlen(s);
    *out = NULL;
    *len = 0;
    if (n % 2 != 0)
        return -1;
    unsigned char *b = malloc(n / 2 + 1);
    if (b == NULL)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return -1;
        }
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    *out = b;
    *len = n / 2;
    return 0;
}

enum db_sealed db_sealed_open(const char *kid, const char *nonce_hex, const char *ct_hex,
                              const char *aad, struct crypt_secret *out)
{
    const struct crypt_key *k = crypt_master();
    unsigned char *nonce = NULL, *ct = NULL;
    size_t nlen = 0, ctlen = 0;
    enum db_sealed rc;
    out->data = NULL;
    out->len = 0;
    if (k == NULL)
        rc = DB_SEALED_NO_KEY;
    else if (strcmp(kid, k->kid) != 0)
        rc = DB_SEALED_OTHER_KEY;
    else if (unhex(nonce_hex, &nonce, &nlen) != 0 || nlen != CRYPT_NONCE_LEN ||
             unhex(ct_hex, &ct, &ctlen) != 0)
        rc = DB_SEALED_MALFORMED;
    else if (crypt_open(k, nonce, ct, ctlen, (const unsigned char *)aad, strlen(aad), out) != 0)
        rc = DB_SEALED_FORGED;
    else
        rc = DB_SEALED_OK;
    free(nonce);
    if (ct != NULL) {
        OPENSSL_cleanse(ct, ctlen);
        free(ct);
    }
    return rc;
}
