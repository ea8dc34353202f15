/* test_jwk.c — common/jwk.c without a network: JWK → PEM conversion and its refusals,
 * JWK set documents, and the shapes of JWS signatures. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/jwk.h"
#include "common/util.h"
#include "tests/unit/test_jwk.h"
#include "tests/unit/unit.h"

/* ---- keys and JWKs made here (test_jwk.h; test_oidc.c uses them too) ---- */

EVP_PKEY *ut_rsa_new(int bits)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
}

EVP_PKEY *ut_ec_new(const char *curve)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
}

static char *b64_bn(const BIGNUM *bn, int pad)
{
    unsigned char buf[1024];
    int n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    return util_b64url_encode(buf, (size_t)n);
}

/* A JWK (public part) for pk, with extra members merged in. Caller decrefs. */
json_t *ut_jwk_of(EVP_PKEY *pk, const char *kid, const char *extra_json)
{
    json_t *o;
    if (EVP_PKEY_base_id(pk) == EVP_PKEY_RSA) {
        BIGNUM *n = NULL, *e = NULL;
        EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &n);
        EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e);
        char *sn = b64_bn(n, 0), *se = b64_bn(e, 0);
        o = json_pack("{s:s, s:s, s:s, s:s}", "kty", "RSA", "kid", kid, "n", sn, "e", se);
        free(sn);
        free(se);
        BN_free(n);
        BN_free(e);
    } else {
        BIGNUM *x = NULL, *y = NULL;
        EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_X, &x);
        EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_Y, &y);
        char *sx = b64_bn(x, 32), *sy = b64_bn(y, 32);
        o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kty", "EC", "kid", kid, "crv", "P-256", "x", sx,
                      "y", sy);
        free(sx);
        free(sy);
        BN_free(x);
        BN_free(y);
    }
    if (extra_json != NULL) {
        json_t *x = json_loads(extra_json, 0, NULL);
        json_object_update(o, x);
        json_decref(x);
    }
    return o;
}

char *ut_pem_of(EVP_PKEY *pk)
{
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, pk);
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    char *out = strndup(data, (size_t)n);
    BIO_free(bio);
    return out;
}

/* ---- JWK → PEM ---- */

static void jwk_rsa_and_ec(void)
{
    EVP_PKEY *rsa = ut_rsa_new(2048), *ec = ut_ec_new("P-256");
    struct jwk_key k;
    char why[160];
    json_t *j = ut_jwk_of(rsa, "r1", "{\"use\":\"sig\",\"alg\":\"RS256\"}");
    CHECK(jwk_key_from_json(j, &k, why, sizeof why) == 0);
    char *want = ut_pem_of(rsa);
    CHECK(k.alg == JWT_ALG_RS256 && strcmp(k.pem, want) == 0 && strcmp(k.kid, "r1") == 0);
    CHECK(k.pemlen == strlen(want));
    free(want);
    jwk_key_clear(&k);
    json_decref(j);
    /* Without alg the key type pins it. */
    j = ut_jwk_of(ec, "e1", "{\"key_ops\":[\"verify\"]}");
    CHECK(jwk_key_from_json(j, &k, why, sizeof why) == 0);
    want = ut_pem_of(ec);
    CHECK(k.alg == JWT_ALG_ES256 && strcmp(k.pem, want) == 0);
    free(want);
    jwk_key_clear(&k);
    json_decref(j);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

/* One JWK's verdict: 0 usable, 1 skipped, -1 malformed, and a word of the reason. */
static int verdict(json_t *j, const char *word)
{
    struct jwk_key k;
    char why[160] = "";
    int r = jwk_key_from_json(j, &k, why, sizeof why);
    jwk_key_clear(&k);
    json_decref(j);
    if (word != NULL && strstr(why, word) == NULL) {
        printf("    # reason \"%s\" lacks \"%s\"\n", why, word);
        return 99;
    }
    return r;
}

static void jwk_refusals(void)
{
    EVP_PKEY *rsa = ut_rsa_new(2048), *small = ut_rsa_new(1024), *ec = ut_ec_new("P-256"),
             *p384 = ut_ec_new("P-384");
    CHECK(verdict(ut_jwk_of(small, "s", NULL), "1024 bits") == -1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"alg\":\"RS512\"}"), "RS256 only") == 1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"alg\":\"PS256\"}"), NULL) == 1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"alg\":7}"), "alg") == -1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"use\":\"enc\"}"), "sig") == 1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"key_ops\":[\"encrypt\"]}"), "verify") == 1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"d\":\"AAAA\"}"), "private") == -1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"n\":\"not base64!\"}"), "base64url") == -1);
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"e\":\"AAE\"}"), "exponent") == -1);  /* e = 1 */
    CHECK(verdict(ut_jwk_of(rsa, "a", "{\"e\":\"AQAA\"}"), "exponent") == -1); /* even */
    CHECK(verdict(ut_jwk_of(ec, "a", "{\"alg\":\"RS256\"}"), "ES256") == -1);
    CHECK(verdict(ut_jwk_of(ec, "a", "{\"crv\":\"P-384\"}"), "P-256 only") == 1);
    CHECK(verdict(ut_jwk_of(ec, "a", "{\"x\":\"AAAA\"}"), "32 bytes") == -1);
    /* A point off the curve: y + 1. */
    json_t *off = ut_jwk_of(ec, "a", NULL);
    unsigned char *y;
    size_t ylen;
    const char *ys = json_string_value(json_object_get(off, "y"));
    CHECK(util_b64url_decode(ys, strlen(ys), &y, &ylen) == 0 && ylen == 32);
    y[31] ^= 1;
    char *y2 = util_b64url_encode(y, ylen);
    json_object_set_new(off, "y", json_string(y2));
    free(y);
    free(y2);
    CHECK(verdict(off, "curve") == -1);
    (void)p384;
    CHECK(verdict(json_pack("{s:s, s:s, s:s, s:s}", "kty", "OKP", "kid", "ed", "crv", "Ed25519",
                            "x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
                  "libjwt 1.10") == 1);
    CHECK(verdict(json_pack("{s:s, s:s, s:s}", "kty", "oct", "kid", "h", "k", "c2VjcmV0"),
                  "private or symmetric") == -1);
    CHECK(verdict(json_pack("{s:s, s:s}", "kty", "OTHER", "kid", "o"), "not supported") == 1);
    CHECK(verdict(json_pack("{s:s}", "kid", "x"), "kty") == -1);
    CHECK(verdict(json_pack("{s:s}", "kty", "RSA"), "kid") == -1);
    CHECK(verdict(json_pack("{s:s, s:s}", "kty", "RSA", "kid", "has space"), "kid") == -1);
    CHECK(verdict(json_string("x"), "object") == -1);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(small);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(p384);
}

char *ut_set_doc(json_t *keys)
{
    json_t *o = json_pack("{s:o}", "keys", keys);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static int parse_doc(const char *doc, size_t *n, char *err)
{
    struct jwk_set *s = NULL;
    int rc = jwk_set_parse(doc, strlen(doc), NULL, NULL, &s, err, 256);
    if (rc == 0) {
        *n = s->n;
        jwk_set_release(s);
    }
    return rc;
}

/* A jwk_note_fn: counts the keys skipped as unusable (EdDSA "ed" expected). */
static void count_skipped(void *ud, const char *kid, const char *why, int malformed)
{
    if (!malformed && strcmp(kid, "ed") == 0 && strstr(why, "EdDSA") != NULL)
        ++*(int *)ud;
}

static void jwks_documents(void)
{
    EVP_PKEY *rsa = ut_rsa_new(2048), *ec = ut_ec_new("P-256");
    char err[256];
    size_t n = 0;
    /* Usable keys are kept, unusable ones skipped. */
    char *doc = ut_set_doc(json_pack(
        "[o, o, {s:s, s:s, s:s, s:s}]", ut_jwk_of(rsa, "r", NULL), ut_jwk_of(ec, "e", NULL), "kty",
        "OKP", "kid", "ed", "crv", "Ed25519", "x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"));
    CHECK(parse_doc(doc, &n, err) == 0 && n == 2);
    struct jwk_set *a, *b;
    int skipped = 0;
    CHECK(jwk_set_parse(doc, strlen(doc), count_skipped, &skipped, &a, err, sizeof err) == 0);
    CHECK(skipped == 1); /* the EdDSA key, named, not malformed */
    CHECK(jwk_set_parse(doc, strlen(doc), NULL, NULL, &b, err, sizeof err) == 0);
    CHECK(memcmp(a->digest, b->digest, 32) == 0); /* same keys, same digest */
    CHECK(jwk_set_find(a, "e") != NULL && jwk_set_find(a, "e")->alg == JWT_ALG_ES256);
    CHECK(jwk_set_find(a, "ed") == NULL && jwk_set_find(a, "nope") == NULL);
    jwk_set_release(a);
    jwk_set_release(b);
    free(doc);
    /* Refusals of the whole document. */
    CHECK(parse_doc("", &n, err) != 0 && strstr(err, "not a JWK set"));
    CHECK(parse_doc("garbage", &n, err) != 0 && strstr(err, "not a JWK set"));
    CHECK(parse_doc("[]", &n, err) != 0 && strstr(err, "not a JWK set"));
    CHECK(parse_doc("{\"keys\":{}}", &n, err) != 0 && strstr(err, "not a JWK set"));
    CHECK(parse_doc("{\"keys\":[]}", &n, err) != 0 && strstr(err, "no usable"));
    CHECK(parse_doc("{\"keys\":[],\"keys\":[]}", &n, err) != 0); /* duplicate member */
    doc = ut_set_doc(json_pack("[o]", json_pack("{s:s, s:s}", "kty", "OKP", "kid", "ed")));
    CHECK(parse_doc(doc, &n, err) != 0 && strstr(err, "no usable"));
    free(doc);
    doc =
        ut_set_doc(json_pack("[o, o]", ut_jwk_of(rsa, "same", NULL), ut_jwk_of(ec, "same", NULL)));
    CHECK(parse_doc(doc, &n, err) != 0 && strstr(err, "repeats the kid"));
    free(doc);
    json_t *many = json_array();
    for (int i = 0; i < JWK_MAX_KEYS + 1; i++) {
        char kid[16];
        snprintf(kid, sizeof kid, "k%d", i);
        json_array_append_new(many, json_pack("{s:s, s:s}", "kty", "OKP", "kid", kid));
    }
    doc = ut_set_doc(many);
    CHECK(parse_doc(doc, &n, err) != 0 && strstr(err, "at most 64"));
    free(doc);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

/* jwk_verify refuses signatures of the wrong shape before OpenSSL sees them. */
static void jwks_signature_shapes(void)
{
    EVP_PKEY *rsa = ut_rsa_new(2048), *ec = ut_ec_new("P-256");
    struct jwk_key kr, ke;
    char why[160];
    json_t *jr = ut_jwk_of(rsa, "r", NULL), *je = ut_jwk_of(ec, "e", NULL);
    CHECK(jwk_key_from_json(jr, &kr, why, sizeof why) == 0);
    CHECK(jwk_key_from_json(je, &ke, why, sizeof why) == 0);
    const char *input = "eyJhbGciOiJFUzI1NiJ9.e30";
    unsigned char der[128];
    size_t derlen = sizeof der;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, ec);
    EVP_DigestSign(md, der, &derlen, (const unsigned char *)input, strlen(input));
    EVP_MD_CTX_free(md);
    /* The DER form (what OpenSSL makes) is not the JOSE form. */
    CHECK(jwk_verify(&ke, input, strlen(input), der, derlen) == 0);
    unsigned char raw[65] = {0};
    const unsigned char *p = der;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)derlen);
    BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32);
    ECDSA_SIG_free(es);
    CHECK(jwk_verify(&ke, input, strlen(input), raw, 64) == 1);
    CHECK(jwk_verify(&ke, input, strlen(input), raw, 63) == 0);
    CHECK(jwk_verify(&ke, input, strlen(input), raw, 65) == 0);
    CHECK(jwk_verify(&ke, input, strlen(input) - 1, raw, 64) == 0);
    /* The EC signature against the RSA key, and short RSA signatures. */
    CHECK(jwk_verify(&kr, input, strlen(input), raw, 64) == 0);
    unsigned char zero[256] = {0};
    CHECK(jwk_verify(&kr, input, strlen(input), zero, 256) == 0);
    CHECK(jwk_verify(&kr, input, strlen(input), zero, 0) == 0);
    jwk_key_clear(&kr);
    jwk_key_clear(&ke);
    json_decref(jr);
    json_decref(je);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

UNIT_SUITE(jwk_tests) = {
    {"jwk: JWK → PEM for RSA and EC P-256, alg pinned by kty", jwk_rsa_and_ec},
    {"jwk: JWK refusals (small RSA, alg mismatch, enc, private parts, off-curve, OKP)",
     jwk_refusals},
    {"jwk: JWK set documents (skips, duplicates, garbage, too many keys)", jwks_documents},
    {"jwk: JWS signature shapes (DER vs R||S, lengths, wrong key type)", jwks_signature_shapes},
    UNIT_END,
};
