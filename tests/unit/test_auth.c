/* test_auth.c — JWT verification against the known attacks (libjwt 1.10 takes the algorithm
 * from the token and accepts alg:none with a NULL key): alg:none, HS/ES confusion, expired
 * tokens, a future nbf, a wrong iss or aud, tampered payloads. Tokens are built by hand here
 * (HMAC over header.payload) so every field can be forged. */
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api/auth.h"
#include "common/util.h"
#include "tests/unit/unit.h"

static const unsigned char secret[] = "unit-test-secret-0123456789abcdef-0123456789";
#define NOW ((int64_t)1796017303)

static char *b64(const char *s)
{
    return util_b64url_encode((const unsigned char *)s, strlen(s));
}

/* "Bearer " + header.payload.HS256(key) */
static char *forge(const char *header, const char *payload, const unsigned char *key, size_t keylen)
{
    char *h = b64(header), *p = b64(payload);
    char signing[2048];
    snprintf(signing, sizeof signing, "%s.%s", h, p);
    unsigned char mac[32];
    unsigned int maclen = 0;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)signing, strlen(signing), mac,
         &maclen);
    char *s = util_b64url_encode(mac, maclen);
    char *out = malloc(strlen(signing) + strlen(s) + 16);
    sprintf(out, "Bearer %s.%s", signing, s);
    free(h);
    free(p);
    free(s);
    return out;
}

static char *claims(long exp_delta, const char *extra)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"sub\":\"alice\",\"role\":\"operator\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\","
             "\"exp\":%lld%s}",
             (long long)(NOW + exp_delta), extra ? extra : "");
    return buf;
}

static const char HS[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

static struct api_auth hs(void)
{
    struct api_auth a;
    auth_init_hs256(&a, secret, sizeof secret - 1, "gpufleet", "gpufleet");
    return a;
}

static enum auth_result verify(const struct api_auth *a, const char *bearer,
                               struct api_principal *p)
{
    const char *why;
    return auth_verify(a, bearer, NOW, p, &why);
}

static void valid_token(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    char *t = forge(HS, claims(300, NULL), secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_OK);
    CHECK_STR(p.sub, "alice");
    CHECK(p.role == ROLE_OPERATOR);
    free(t);
    /* minted by our own CLI path */
    char *m = NULL;
    CHECK(auth_mint(JWT_ALG_HS256, secret, sizeof secret - 1, "bob", ROLE_ADMIN, 900, "gpufleet",
                    "gpufleet", NOW, &m) == 0);
    char bearer[2048];
    snprintf(bearer, sizeof bearer, "Bearer %s", m);
    CHECK(verify(&a, bearer, &p) == AUTH_OK && p.role == ROLE_ADMIN);
    free(m);
    auth_free(&a);
}

static void missing_and_malformed(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    CHECK(verify(&a, NULL, &p) == AUTH_MISSING);
    CHECK(verify(&a, "Basic dXNlcjpwYXNz", &p) == AUTH_MISSING);
    CHECK(verify(&a, "Bearer ", &p) == AUTH_MISSING);
    CHECK(verify(&a, "Bearer abc", &p) == AUTH_INVALID);
    CHECK(verify(&a, "Bearer a.b", &p) == AUTH_INVALID);
    CHECK(verify(&a, "Bearer a.b.c.d", &p) == AUTH_INVALID);
    CHECK(verify(&a, "Bearer !!!.###.$$$", &p) == AUTH_INVALID);
    auth_free(&a);
}

static void alg_none(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    char *h = b64("{\"alg\":\"none\",\"typ\":\"JWT\"}"), *pl = b64(claims(300, NULL));
    char t[1024];
    snprintf(t, sizeof t, "Bearer %s.%s.", h, pl);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    snprintf(t, sizeof t, "Bearer %s.%s.c2ln", h, pl);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(h);
    free(pl);
    /* lower/mixed case "None" and a missing alg */
    char *t2 = forge("{\"alg\":\"None\"}", claims(300, NULL), secret, sizeof secret - 1);
    CHECK(verify(&a, t2, &p) == AUTH_INVALID);
    free(t2);
    t2 = forge("{\"typ\":\"JWT\"}", claims(300, NULL), secret, sizeof secret - 1);
    CHECK(verify(&a, t2, &p) == AUTH_INVALID);
    free(t2);
    /* HS512 with the right key is still refused: the algorithm is pinned */
    t2 = forge("{\"alg\":\"HS512\"}", claims(300, NULL), secret, sizeof secret - 1);
    CHECK(verify(&a, t2, &p) == AUTH_INVALID);
    free(t2);
    auth_free(&a);
}

static void wrong_secret_and_tamper(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    static const unsigned char other[] = "another-secret-of-sufficient-length-xx";
    char *t = forge(HS, claims(300, NULL), other, sizeof other - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    /* Take a valid token and swap in an admin payload, keeping the signature. */
    char *good = forge(HS, claims(300, NULL), secret, sizeof secret - 1);
    char *evil_payload = b64("{\"sub\":\"alice\",\"role\":\"admin\",\"iss\":\"gpufleet\","
                             "\"aud\":\"gpufleet\",\"exp\":1896017303}");
    char *dot1 = strchr(good, '.');
    char *dot2 = strchr(dot1 + 1, '.');
    char tampered[2048];
    snprintf(tampered, sizeof tampered, "%.*s.%s%s", (int)(dot1 - good), good, evil_payload, dot2);
    CHECK(verify(&a, tampered, &p) == AUTH_INVALID);
    /* Flip one signature character. */
    size_t n = strlen(good);
    good[n - 2] = good[n - 2] == 'A' ? 'B' : 'A';
    CHECK(verify(&a, good, &p) == AUTH_INVALID);
    free(evil_payload);
    free(good);
    auth_free(&a);
}

static void time_claims(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    char *t;
    t = forge(HS, claims(-61, NULL), secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_EXPIRED);
    free(t);
    t = forge(HS, claims(-30, NULL), secret, sizeof secret - 1); /* within the 60 s leeway */
    CHECK(verify(&a, t, &p) == AUTH_OK);
    free(t);
    char extra[64];
    snprintf(extra, sizeof extra, ",\"nbf\":%lld", (long long)(NOW + 300));
    t = forge(HS, claims(600, extra), secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    snprintf(extra, sizeof extra, ",\"nbf\":%lld", (long long)(NOW + 30));
    t = forge(HS, claims(600, extra), secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_OK);
    free(t);
    t = forge(HS, "{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\"}",
              secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID); /* no exp */
    free(t);
    t = forge(HS,
              "{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\","
              "\"exp\":\"1896017303\"}",
              secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID); /* exp as a string */
    free(t);
    auth_free(&a);
}

static void issuer_audience_role(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    char payload[512];
    char *t;
    snprintf(
        payload, sizeof payload,
        "{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"evil\",\"aud\":\"gpufleet\",\"exp\":%lld}",
        (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    snprintf(
        payload, sizeof payload,
        "{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"gpufleet\",\"aud\":\"other\",\"exp\":%lld}",
        (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    snprintf(payload, sizeof payload,
             "{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"gpufleet\",\"aud\":[\"x\",\"gpufleet\"],"
             "\"exp\":%lld}",
             (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_OK && p.role == ROLE_VIEWER);
    free(t);
    snprintf(
        payload, sizeof payload,
        "{\"sub\":\"a\",\"role\":\"root\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\",\"exp\":%lld}",
        (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    snprintf(payload, sizeof payload,
             "{\"role\":\"admin\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\",\"exp\":%lld}",
             (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID); /* no sub */
    free(t);
    /* duplicate claim keys are refused outright */
    snprintf(payload, sizeof payload,
             "{\"sub\":\"a\",\"role\":\"viewer\",\"role\":\"admin\",\"iss\":\"gpufleet\","
             "\"aud\":\"gpufleet\",\"exp\":%lld}",
             (long long)NOW + 300);
    t = forge(HS, payload, secret, sizeof secret - 1);
    CHECK(verify(&a, t, &p) == AUTH_INVALID);
    free(t);
    auth_free(&a);
}

/* Writes a fresh P-256 key pair as PEM files under dir. */
static int write_ec_pair(const char *priv_path, const char *pub_path)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    if (k == NULL)
        return -1;
    FILE *f = fopen(priv_path, "w");
    PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    f = fopen(pub_path, "w");
    PEM_write_PUBKEY(f, k);
    fclose(f);
    EVP_PKEY_free(k);
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 8192);
    *len = fread(buf, 1, 8191, f);
    fclose(f);
    return buf;
}

static void es256_and_confusion(void)
{
    char dir[] = "/tmp/gpufleet-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char priv[128], pub[128], priv2[128], pub2[128], err[256];
    snprintf(priv, sizeof priv, "%s/priv.pem", dir);
    snprintf(pub, sizeof pub, "%s/pub.pem", dir);
    snprintf(priv2, sizeof priv2, "%s/priv2.pem", dir);
    snprintf(pub2, sizeof pub2, "%s/pub2.pem", dir);
    CHECK(write_ec_pair(priv, pub) == 0 && write_ec_pair(priv2, pub2) == 0);
    struct api_auth a;
    CHECK(auth_init(&a, NULL, pub, "gpufleet", "gpufleet", err, sizeof err) == 0);
    CHECK(a.alg == JWT_ALG_ES256);
    struct api_principal p;
    size_t plen, publen, p2len;
    char *pk = slurp(priv, &plen), *pubpem = slurp(pub, &publen), *pk2 = slurp(priv2, &p2len);
    char *m = NULL, bearer[2048];
    int64_t now = (int64_t)time(NULL);
    CHECK(auth_mint(JWT_ALG_ES256, (unsigned char *)pk, plen, "carol", ROLE_VIEWER, 600, "gpufleet",
                    "gpufleet", now, &m) == 0);
    snprintf(bearer, sizeof bearer, "Bearer %s", m);
    const char *why;
    CHECK(auth_verify(&a, bearer, now, &p, &why) == AUTH_OK);
    free(m);
    /* Signed by another EC key. */
    CHECK(auth_mint(JWT_ALG_ES256, (unsigned char *)pk2, p2len, "carol", ROLE_ADMIN, 600,
                    "gpufleet", "gpufleet", now, &m) == 0);
    snprintf(bearer, sizeof bearer, "Bearer %s", m);
    CHECK(auth_verify(&a, bearer, now, &p, &why) == AUTH_INVALID);
    free(m);
    /* Classic confusion: HS256 keyed with the public key PEM the server holds. */
    char payload[256];
    snprintf(payload, sizeof payload,
             "{\"sub\":\"x\",\"role\":\"admin\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\","
             "\"exp\":%lld}",
             (long long)now + 300);
    char *t = forge(HS, payload, (unsigned char *)pubpem, publen);
    CHECK(auth_verify(&a, t, now, &p, &why) == AUTH_INVALID);
    free(t);
    /* alg none against the ES256 verifier */
    char *h = b64("{\"alg\":\"none\"}"), *pl = b64(payload);
    snprintf(bearer, sizeof bearer, "Bearer %s.%s.", h, pl);
    CHECK(auth_verify(&a, bearer, now, &p, &why) == AUTH_INVALID);
    free(h);
    free(pl);
    /* A private key or garbage as the public key file is refused at start. */
    struct api_auth bad;
    CHECK(auth_init(&bad, NULL, priv, "gpufleet", "gpufleet", err, sizeof err) != 0);
    free(pk);
    free(pk2);
    free(pubpem);
    auth_free(&a);
    unlink(priv);
    unlink(pub);
    unlink(priv2);
    unlink(pub2);
    rmdir(dir);
}

static void cache_rechecks_time(void)
{
    struct api_auth a = hs();
    struct api_principal p;
    const char *why;
    char extra[64];
    snprintf(extra, sizeof extra, ",\"nbf\":%lld", (long long)(NOW - 10));
    char *t = forge(HS, claims(300, extra), secret, sizeof secret - 1);
    CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_OK); /* verified, then cached */
    CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_OK); /* cache hit */
    CHECK_STR(p.sub, "alice");
    CHECK(auth_verify(&a, t, NOW + 361, &p, &why) == AUTH_EXPIRED); /* exp re-checked */
    CHECK(auth_verify(&a, t, NOW - 100, &p, &why) == AUTH_INVALID); /* nbf re-checked */
    /* A different token in the same process is verified on its own. */
    char *t2 = forge(HS, claims(300, NULL),
                     (const unsigned char *)"x-other-secret-of-32-bytes-or-more!!", 36);
    CHECK(auth_verify(&a, t2, NOW, &p, &why) == AUTH_INVALID);
    CHECK(auth_verify(&a, t2, NOW, &p, &why) == AUTH_INVALID); /* failures are not cached */
    free(t);
    free(t2);
    auth_free(&a);
}

UNIT_SUITE(auth_tests) = {
    {"auth: verified-token cache re-checks exp and nbf", cache_rechecks_time},
    {"auth: valid HS256 token, hand-made and minted", valid_token},
    {"auth: missing and malformed Authorization", missing_and_malformed},
    {"auth: alg none / None / missing / HS512 refused", alg_none},
    {"auth: wrong secret, tampered payload, flipped signature", wrong_secret_and_tamper},
    {"auth: exp required, 60 s leeway, nbf in the future", time_claims},
    {"auth: wrong iss, wrong aud, aud array, unknown role, no sub, duplicate claims",
     issuer_audience_role},
    {"auth: ES256 valid, other key, HS/ES confusion, alg none", es256_and_confusion},
    UNIT_END,
};
