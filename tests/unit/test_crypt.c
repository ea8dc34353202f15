/* test_crypt.c — AES-256-GCM sealing: round trip, tamper detection (ciphertext, tag,
 * nonce, AAD, key), a fresh nonce per call, and a stable key id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crypt.h"
#include "tests/unit/unit.h"

static const unsigned char ikm[] = "0123456789abcdef0123456789abcdef-test-master-key";
static const char aad[] = "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
static const char msg[] = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot really\n";

static void test_round_trip(void)
{
    struct crypt_key k;
    CHECK(crypt_key_derive(ikm, sizeof ikm - 1, &k) == 0);
    unsigned char nonce[CRYPT_NONCE_LEN], *ct;
    size_t ctlen;
    CHECK(crypt_seal(&k, (const unsigned char *)msg, strlen(msg), (const unsigned char *)aad,
                     strlen(aad), nonce, &ct, &ctlen) == 0);
    CHECK(ctlen == strlen(msg) + CRYPT_TAG_LEN);
    CHECK(memcmp(ct, msg, strlen(msg)) != 0);
    struct crypt_secret out;
    int rc = crypt_open(&k, nonce, ct, ctlen, (const unsigned char *)aad, strlen(aad), &out);
    free(ct);
    CHECK(rc == 0);
    CHECK(out.len == strlen(msg) && memcmp(out.data, msg, out.len) == 0 && out.data[out.len] == 0);
    crypt_secret_free(&out);
    CHECK(out.data == NULL && out.len == 0);
    crypt_secret_free(&out); /* twice is harmless */
    crypt_key_clear(&k);
}

static void test_tamper(void)
{
    struct crypt_key k, other;
    CHECK(crypt_key_derive(ikm, sizeof ikm - 1, &k) == 0);
    CHECK(crypt_key_derive((const unsigned char *)"another master key, 32 bytes long!", 34,
                           &other) == 0);
    unsigned char nonce[CRYPT_NONCE_LEN], *ct;
    size_t ctlen;
    CHECK(crypt_seal(&k, (const unsigned char *)msg, strlen(msg), (const unsigned char *)aad,
                     strlen(aad), nonce, &ct, &ctlen) == 0);
    struct crypt_secret out;
    const unsigned char *a = (const unsigned char *)aad;
    size_t al = strlen(aad);
    /* Every byte of ciphertext and tag, flipped one bit at a time. */
    int opened = 0;
    for (size_t i = 0; i < ctlen; i++) {
        ct[i] ^= 0x01;
        opened += crypt_open(&k, nonce, ct, ctlen, a, al, &out) == 0;
        ct[i] ^= 0x01;
    }
    /* Nonce, AAD (another row's id), key, truncation. */
    nonce[0] ^= 0x80;
    opened += crypt_open(&k, nonce, ct, ctlen, a, al, &out) == 0;
    nonce[0] ^= 0x80;
    opened +=
        crypt_open(&k, nonce, ct, ctlen,
                   (const unsigned char *)"00000000-0000-4000-8000-000000000000", al, &out) == 0;
    opened += crypt_open(&k, nonce, ct, ctlen, NULL, 0, &out) == 0;
    opened += crypt_open(&other, nonce, ct, ctlen, a, al, &out) == 0;
    opened += crypt_open(&k, nonce, ct, ctlen - 1, a, al, &out) == 0;
    opened += crypt_open(&k, nonce, ct, CRYPT_TAG_LEN - 1, a, al, &out) == 0;
    CHECK(out.data == NULL);
    CHECK(opened == 0);
    /* Untouched, it still opens. */
    CHECK(crypt_open(&k, nonce, ct, ctlen, a, al, &out) == 0);
    crypt_secret_free(&out);
    free(ct);
}

static void test_fresh_nonce(void)
{
    struct crypt_key k;
    CHECK(crypt_key_derive(ikm, sizeof ikm - 1, &k) == 0);
    unsigned char n1[CRYPT_NONCE_LEN], n2[CRYPT_NONCE_LEN], *c1, *c2;
    size_t l1, l2;
    CHECK(crypt_seal(&k, (const unsigned char *)msg, strlen(msg), NULL, 0, n1, &c1, &l1) == 0);
    CHECK(crypt_seal(&k, (const unsigned char *)msg, strlen(msg), NULL, 0, n2, &c2, &l2) == 0);
    int same_nonce = memcmp(n1, n2, sizeof n1) == 0, same_ct = memcmp(c1, c2, l1) == 0;
    free(c1);
    free(c2);
    CHECK(!same_nonce);
    CHECK(!same_ct);
}

static void test_kid(void)
{
    struct crypt_key a, b, c;
    CHECK(crypt_key_derive(ikm, sizeof ikm - 1, &a) == 0);
    CHECK(crypt_key_derive(ikm, sizeof ikm - 1, &b) == 0);
    CHECK(crypt_key_derive(ikm, sizeof ikm - 2, &c) == 0);
    CHECK(strlen(a.kid) == CRYPT_KID_HEX);
    CHECK(strspn(a.kid, "0123456789abcdef") == CRYPT_KID_HEX);
    CHECK_STR(a.kid, b.kid);
    CHECK(memcmp(a.key, b.key, CRYPT_KEY_LEN) == 0);
    CHECK(strcmp(a.kid, c.kid) != 0);
    /* The kid is not the key. */
    char keyhex[2 * CRYPT_KEY_LEN + 1];
    for (int i = 0; i < CRYPT_KEY_LEN; i++)
        snprintf(keyhex + 2 * i, 3, "%02x", a.key[i]);
    CHECK(strncmp(keyhex, a.kid, CRYPT_KID_HEX) != 0);
    CHECK(crypt_master() == NULL);
}

UNIT_SUITE(crypt_tests) = {
    {"crypt: AES-256-GCM round trip", test_round_trip},
    {"crypt: tampered ciphertext/tag/nonce, wrong AAD or key fail", test_tamper},
    {"crypt: a fresh nonce per seal", test_fresh_nonce},
    {"crypt: kid is stable, differs per key, is not the key", test_kid},
    UNIT_END,
};
