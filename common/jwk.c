/* jwk.c — see jwk.h. Pure: no I/O, no logging, no threads. */
#include "common/jwk.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 16384

/* ---- signatures ---- */

/* JOSE carries an ES256 signature as R||S (32 bytes each); OpenSSL wants DER. Returns the
 * DER length and *der (caller OPENSSL_frees), or 0. */
static size_t es256_der(const unsigned char *sig, unsigned char **der)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(es);
        return 0;
    }
    int derlen = i2d_ECDSA_SIG(es, der);
    ECDSA_SIG_free(es);
    return derlen > 0 ? (size_t)derlen : 0;
}

int jwk_verify(const struct jwk_key *k, const char *signing_input, size_t len,
               const unsigned char *sig, size_t siglen)
{
    unsigned char *der = NULL;
    if (k->alg == JWT_ALG_ES256) {
        if (siglen != 64 || (siglen = es256_der(sig, &der)) == 0)
            return 0;
        sig = der;
    } else if (k->alg != JWT_ALG_RS256 || siglen != (size_t)EVP_PKEY_get_size(k->pk)) {
        return 0;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k->pk) == 1 &&
             EVP_DigestVerify(md, sig, siglen, (const unsigned char *)signing_input, len) == 1;
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    return ok;
}

int jwk_verify_compact(const struct jwk_key *k, const char *jws, size_t signing_len)
{
    unsigned char *sig = NULL;
    size_t siglen = 0;
    const char *s = jws + signing_len + 1;
    if (util_b64url_decode(s, strlen(s), &sig, &siglen) != 0)
        return 0;
    int ok = jwk_verify(k, jws, signing_len, sig, siglen);
    free(sig);
    return ok;
}

/* ---- one JWK ---- */

void jwk_key_clear(struct jwk_key *k)
{
    EVP_PKEY_free(k->pk);
    free(k->pem);
    memset(k, 0, sizeof *k);
}

/* Decodes the base64url member name of jwk into a BIGNUM-ready buffer. Caller frees. */
static int member_b64(const json_t *jwk, const char *name, unsigned char **out, size_t *len)
{
    const char *v = json_string_value(json_object_get(jwk, name));
    if (v == NULL || *v == '\0' || strlen(v) > 4096)
        return -1;
    return util_b64url_decode(v, strlen(v), out, len);
}

/* Writes pk as SubjectPublicKeyInfo PEM into k. */
static int to_pem(EVP_PKEY *pk, struct jwk_key *k)
{
    BIO *bio = BIO_new(BIO_s_mem());
    int rc = -1;
    if (bio != NULL && PEM_write_bio_PUBKEY(bio, pk) == 1) {
        char *data = NULL;
        long n = BIO_get_mem_data(bio, &data);
        if (n > 0 && (k->pem = malloc((size_t)n + 1)) != NULL) {
            memcpy(k->pem, data, (size_t)n);
            k->pem[n] = '\0';
            k->pemlen = (size_t)n;
            rc = 0;
        }
    }
    BIO_free(bio);
    return rc;
}

/* EVP_PKEY from OSSL parameters (NULL: none, an error), with the public key checked (an EC
 * point off the curve, an RSA modulus that is even, … are refused). */
static EVP_PKEY *from_params(const char *type, OSSL_PARAM *params)
{
    EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
    EVP_PKEY *pk = NULL;
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pk = NULL;
    EVP_PKEY_CTX_free(ctx);
    if (pk != NULL) {
        EVP_PKEY_CTX *chk = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
        int ok = chk != NULL && EVP_PKEY_public_check(chk) == 1;
        EVP_PKEY_CTX_free(chk);
        if (!ok) {
            EVP_PKEY_free(pk);
            pk = NULL;
        }
    }
    return pk;
}

/* The RSA public key of jwk (n, e), or NULL with why. */
static EVP_PKEY *rsa_pkey(const json_t *jwk, char *why, size_t whylen)
{
    unsigned char *n = NULL, *e = NULL;
    size_t nlen = 0, elen = 0;
    BIGNUM *bn = NULL, *be = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY *pk = NULL;
    if (member_b64(jwk, "n", &n, &nlen) != 0 || member_b64(jwk, "e", &e, &elen) != 0) {
        snprintf(why, whylen, "n and e must be base64url strings");
        goto cleanup;
    }
    bn = BN_bin2bn(n, (int)nlen, NULL);
    be = BN_bin2bn(e, (int)elen, NULL);
    if (bn == NULL || be == NULL) {
        snprintf(why, whylen, "out of memory");
        goto cleanup;
    }
    int bits = BN_num_bits(bn);
    if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) {
        snprintf(why, whylen, "the RSA modulus has %d bits (%d to %d accepted)", bits, RSA_MIN_BITS,
                 RSA_MAX_BITS);
        goto cleanup;
    }
    if (BN_num_bits(be) > 64 || !BN_is_odd(be) || BN_is_one(be)) {
        snprintf(why, whylen, "the RSA exponent e is not an odd number above 1 of at most 64 bits");
        goto cleanup;
    }
    bld = OSSL_PARAM_BLD_new();
    if (bld != NULL && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) == 1)
        params = OSSL_PARAM_BLD_to_param(bld);
    if ((pk = from_params("RSA", params)) == NULL)
        snprintf(why, whylen, "not a valid RSA public key");
cleanup:
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return pk;
}

/* The P-256 public key of jwk (x, y), or NULL with why. */
static EVP_PKEY *ec_pkey(const json_t *jwk, char *why, size_t whylen)
{
    unsigned char *x = NULL, *y = NULL;
    size_t xlen = 0, ylen = 0;
    unsigned char point[65] = {0x04}; /* uncompressed: 04 || x || y */
    EVP_PKEY *pk = NULL;
    if (member_b64(jwk, "x", &x, &xlen) != 0 || member_b64(jwk, "y", &y, &ylen) != 0 ||
        xlen != 32 || ylen != 32) {
        snprintf(why, whylen, "x and y must be base64url strings of 32 bytes each (P-256)");
    } else {
        memcpy(point + 1, x, 32);
        memcpy(point + 33, y, 32);
        char group[] = "prime256v1";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point),
            OSSL_PARAM_construct_end()};
        if ((pk = from_params("EC", params)) == NULL)
            snprintf(why, whylen, "not a valid P-256 public key (the point is not on the curve)");
    }
    free(x);
    free(y);
    return pk;
}

/* Puts pk (stolen; NULL when building it failed, why already said) into k with alg. */
static int adopt_steal(struct jwk_key *k, EVP_PKEY *pk, jwt_alg_t alg, char *why, size_t whylen)
{
    if (pk == NULL)
        return -1;
    if (to_pem(pk, k) != 0) {
        EVP_PKEY_free(pk);
        snprintf(why, whylen, "cannot encode the key");
        return -1;
    }
    k->alg = alg;
    k->pk = pk;
    return 0;
}

/* use and key_ops: 0 when they allow verifying signatures, else 1 with why. */
static int usage_skipped(const json_t *jwk, char *why, size_t whylen)
{
    const json_t *use = json_object_get(jwk, "use");
    const json_t *ops = json_object_get(jwk, "key_ops");
    if (use != NULL && (!json_is_string(use) || strcmp(json_string_value(use), "sig") != 0)) {
        snprintf(why, whylen, "use is not \"sig\"");
        return 1;
    }
    if (ops != NULL) {
        int verify = 0;
        size_t i;
        const json_t *v;
        json_array_foreach(ops, i, v)
        {
            if (json_is_string(v) && strcmp(json_string_value(v), "verify") == 0)
                verify = 1;
        }
        if (!verify) {
            snprintf(why, whylen, "key_ops does not include \"verify\"");
            return 1;
        }
    }
    return 0;
}

int jwk_key_from_json(const json_t *jwk, struct jwk_key *k, char *why, size_t whylen)
{
    memset(k, 0, sizeof *k);
    if (!json_is_object(jwk)) {
        snprintf(why, whylen, "a key is not a JSON object");
        return -1;
    }
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    const char *kid = json_string_value(json_object_get(jwk, "kid"));
    const char *alg = json_string_value(json_object_get(jwk, "alg"));
    if (kty == NULL) {
        snprintf(why, whylen, "kty is missing");
        return -1;
    }
    if (kid == NULL || !util_printable_ascii(kid, JWK_MAX_KID)) {
        snprintf(why, whylen, "kid is missing or not 1-%d printable ASCII characters", JWK_MAX_KID);
        return -1;
    }
    snprintf(k->kid, sizeof k->kid, "%s", kid);
    if (usage_skipped(jwk, why, whylen))
        return 1;
    if (json_object_get(jwk, "d") != NULL || json_object_get(jwk, "p") != NULL ||
        json_object_get(jwk, "k") != NULL) {
        snprintf(why, whylen, "the JWK holds private or symmetric key material; refused");
        return -1;
    }
    if (json_object_get(jwk, "alg") != NULL && alg == NULL) {
        snprintf(why, whylen, "alg is not a string");
        return -1;
    }
    if (strcmp(kty, "RSA") == 0) {
        if (alg != NULL && strcmp(alg, "RS256") != 0) {
            snprintf(why, whylen, "alg %.20s is not supported for RSA keys (RS256 only)", alg);
            return 1;
        }
        return adopt_steal(k, rsa_pkey(jwk, why, whylen), JWT_ALG_RS256, why, whylen);
    }
    if (strcmp(kty, "EC") == 0) {
        const char *crv = json_string_value(json_object_get(jwk, "crv"));
        if (crv == NULL || strcmp(crv, "P-256") != 0) {
            snprintf(why, whylen, "curve %.20s is not supported (P-256 only)", crv ? crv : "?");
            return 1;
        }
        if (alg != NULL && strcmp(alg, "ES256") != 0) {
            snprintf(why, whylen, "alg %.20s does not match a P-256 key (ES256)", alg);
            return -1;
        }
        return adopt_steal(k, ec_pkey(jwk, why, whylen), JWT_ALG_ES256, why, whylen);
    }
    if (strcmp(kty, "OKP") == 0)
        snprintf(why, whylen,
                 "EdDSA (kty OKP) keys are not supported: libjwt 1.10 cannot verify them");
    else
        snprintf(why, whylen, "kty %.20s is not supported (RSA and EC only)", kty);
    return 1;
}

/* ---- a set ---- */

static struct jwk_set *set_alloc(size_t n)
{
    struct jwk_set *s = calloc(1, sizeof *s + n * sizeof s->keys[0]);
    if (s != NULL)
        s->refs = 1;
    return s;
}

void jwk_set_release(struct jwk_set *s)
{
    if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        jwk_key_clear(&s->keys[i]);
    free(s);
}

struct jwk_set *jwk_set_ref(struct jwk_set *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
    return s;
}

const struct jwk_key *jwk_set_find(const struct jwk_set *s, const char *kid)
{
    if (s == NULL || kid == NULL)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->keys[i].kid, kid) == 0)
            return &s->keys[i];
    return NULL;
}

/* SHA-256 over each key's kid, algorithm and PEM (with their NULs) into s->digest. */
static void set_digest(struct jwk_set *s)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int dlen = 0;
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    for (size_t k = 0; k < s->n; k++) {
        const char *alg = jwt_alg_str(s->keys[k].alg);
        EVP_DigestUpdate(md, s->keys[k].kid, strlen(s->keys[k].kid) + 1);
        EVP_DigestUpdate(md, alg, strlen(alg) + 1);
        EVP_DigestUpdate(md, s->keys[k].pem, s->keys[k].pemlen + 1);
    }
    EVP_DigestFinal_ex(md, s->digest, &dlen);
    EVP_MD_CTX_free(md);
}

/* Adds the usable keys of the array keys to s (room for all of them). Returns 0, or -1
 * with err when a kid repeats. */
static int set_fill(struct jwk_set *s, const json_t *keys, jwk_note_fn *note, void *ud, char *err,
                    size_t errlen)
{
    size_t i;
    const json_t *jwk;
    json_array_foreach(keys, i, jwk)
    {
        char why[160];
        struct jwk_key k;
        int r = jwk_key_from_json(jwk, &k, why, sizeof why);
        if (r != 0) {
            if (note != NULL)
                note(ud, k.kid, why, r < 0);
            jwk_key_clear(&k);
            continue;
        }
        if (jwk_set_find(s, k.kid) != NULL) {
            snprintf(err, errlen, "the JWK set repeats the kid %s", k.kid);
            jwk_key_clear(&k);
            return -1;
        }
        s->keys[s->n++] = k;
    }
    return 0;
}

int jwk_set_parse(const char *doc, size_t len, jwk_note_fn *note, void *ud, struct jwk_set **out,
                  char *err, size_t errlen)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
    const json_t *keys = root ? json_object_get(root, "keys") : NULL;
    struct jwk_set *s = NULL;
    int rc = -1;
    if (root == NULL || !json_is_object(root) || !json_is_array(keys)) {
        snprintf(err, errlen, "the document is not a JWK set (a JSON object with a keys array)");
        goto cleanup;
    }
    size_t n = json_array_size(keys);
    if (n > JWK_MAX_KEYS) {
        snprintf(err, errlen, "the JWK set holds %zu keys (at most %d)", n, JWK_MAX_KEYS);
        goto cleanup;
    }
    if ((s = set_alloc(n)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    if (set_fill(s, keys, note, ud, err, errlen) != 0)
        goto cleanup;
    if (s->n == 0) {
        snprintf(err, errlen, "the JWK set has no usable signing key (RS256 RSA or ES256 P-256)");
        goto cleanup;
    }
    set_digest(s);
    *out = s;
    s = NULL;
    rc = 0;
cleanup:
    jwk_set_release(s);
    json_decref(root);
    return rc;
}
