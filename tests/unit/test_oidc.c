/* test_oidc.c — OIDC pieces without a network: the JWKS URL policy and the key holder
 * (service/jwks.c: file limits, refresh), the role map (syntax and resolution), OIDC token
 * verification against a JWK set file (RS256, ES256, alg confusion, unknown and removed
 * kids, role mapping, scopes), reporter scopes in HS256 tokens, and the configuration. The
 * JWKs themselves are tested in test_jwk.c. */
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/config.h"
#include "api/role.h"
#include "api/rolemap.h"
#include "common/jwk.h"
#include "common/util.h"
#include "service/jwks.h"
#include "tests/unit/test_jwk.h"
#include "tests/unit/unit.h"

#define NOW ((int64_t)1796017303)

/* "b64url(header).b64url(payload)" into input. */
static void signing_input(const char *header, const char *payload, char *input, size_t len)
{
    char *h = util_b64url_encode((const unsigned char *)header, strlen(header));
    char *p = util_b64url_encode((const unsigned char *)payload, strlen(payload));
    snprintf(input, len, "%s.%s", h, p);
    free(h);
    free(p);
}

/* "Bearer input.b64url(sig)". Caller frees. */
static char *bearer_of(const char *input, const unsigned char *sig, size_t siglen)
{
    char *s = util_b64url_encode(sig, siglen);
    char *out = malloc(strlen(input) + strlen(s) + 16);
    sprintf(out, "Bearer %s.%s", input, s);
    free(s);
    return out;
}

/* header.payload signed with pk (RS256 or ES256, JOSE signature form). */
static char *sign(EVP_PKEY *pk, const char *header, const char *payload)
{
    char input[4096];
    signing_input(header, payload, input, sizeof input);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sig[1024];
    size_t siglen = sizeof sig;
    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pk);
    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input));
    EVP_MD_CTX_free(md);
    unsigned char raw[64];
    const unsigned char *der = sig;
    if (EVP_PKEY_base_id(pk) == EVP_PKEY_EC) {
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &der, (long)siglen);
        BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32);
        ECDSA_SIG_free(es);
        memcpy(sig, raw, 64);
        siglen = 64;
    }
    return bearer_of(input, sig, siglen);
}

/* header.payload with HMAC-SHA256 over key (for confusion attacks). */
static char *sign_hs(const unsigned char *key, size_t keylen, const char *header,
                     const char *payload)
{
    char input[4096];
    signing_input(header, payload, input, sizeof input);
    unsigned char mac[32];
    unsigned int maclen = 0;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)input, strlen(input), mac, &maclen);
    return bearer_of(input, mac, maclen);
}

static void jwks_url_policy(void)
{
    char err[256];
    CHECK(jwks_check_url("https://idp.example.com/.well-known/jwks.json", err, sizeof err) == 0);
    CHECK(jwks_check_url("http://127.0.0.1:8080/jwks", err, sizeof err) == 0);
    CHECK(jwks_check_url("http://127.9.8.7/jwks", err, sizeof err) == 0);
    CHECK(jwks_check_url("http://localhost:9/jwks", err, sizeof err) == 0);
    CHECK(jwks_check_url("http://[::1]:9/jwks", err, sizeof err) == 0);
    CHECK(jwks_check_url("http://idp.example.com/jwks", err, sizeof err) != 0 &&
          strstr(err, "loopback"));
    CHECK(jwks_check_url("http://10.0.0.1/jwks", err, sizeof err) != 0);
    CHECK(jwks_check_url("http://169.254.169.254/jwks", err, sizeof err) != 0);
    CHECK(jwks_check_url("ftp://idp.example.com/jwks", err, sizeof err) != 0);
    CHECK(jwks_check_url("file:///etc/passwd", err, sizeof err) != 0);
    CHECK(jwks_check_url("not a url", err, sizeof err) != 0);
    CHECK(jwks_check_url("https://user:pw@idp.example.com/jwks", err, sizeof err) != 0 &&
          strstr(err, "credentials"));
}

/* ---- OIDC verification against a JWK set file ---- */

struct oidc_fixture {
    EVP_PKEY *rsa, *ec, *gone;
    char dir[64], file[96];
    struct api_auth a;
    struct api_principal p; /* the last verification's principal and reason */
    const char *why;
};

static void write_set(const char *file, json_t *keys)
{
    char *doc = ut_set_doc(keys);
    FILE *f = fopen(file, "w");
    fputs(doc, f);
    fclose(f);
    free(doc);
}

static int fixture_up(struct oidc_fixture *f)
{
    memset(f, 0, sizeof *f);
    f->rsa = ut_rsa_new(2048);
    f->ec = ut_ec_new("P-256");
    f->gone = ut_rsa_new(2048);
    snprintf(f->dir, sizeof f->dir, "/tmp/gft-unit-oidc-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->file, sizeof f->file, "%s/jwks.json", f->dir);
    write_set(f->file,
              json_pack("[o, o, o]", ut_jwk_of(f->rsa, "rsa-1", "{\"alg\":\"RS256\"}"),
                        ut_jwk_of(f->ec, "ec-1", NULL), ut_jwk_of(f->gone, "gone-1", NULL)));
    struct jwks_config jc = {NULL, f->file, NULL, 600, 1, 5};
    struct jwks *j = jwks_new(&jc);
    char err[256];
    if (jwks_load(j, err, sizeof err) != 0) {
        printf("    # %s\n", err);
        jwks_free(j);
        return -1;
    }
    return auth_init_oidc(&f->a, j,
                          "platform-admins:admin,platform:operator,rep-a:reporter@pool-a,"
                          "rep-any:reporter",
                          "groups", "sub", "https://idp.test", "gpufleet-api", err, sizeof err);
}

static void fixture_down(struct oidc_fixture *f)
{
    auth_free(&f->a);
    unlink(f->file);
    rmdir(f->dir);
    EVP_PKEY_free(f->rsa);
    EVP_PKEY_free(f->ec);
    EVP_PKEY_free(f->gone);
}

static char *idp_claims(const char *groups, const char *extra)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"sub\":\"svc-1\",\"iss\":\"https://idp.test\",\"aud\":\"gpufleet-api\","
             "\"exp\":%lld,\"iat\":%lld,\"groups\":%s%s}",
             (long long)(NOW + 300), (long long)NOW, groups, extra ? extra : "");
    return buf;
}

/* Verifies bearer (freed here) into f->p and f->why. */
static enum auth_result v(struct oidc_fixture *f, char *bearer)
{
    enum auth_result r = auth_verify(&f->a, bearer, NOW, &f->p, &f->why);
    free(bearer);
    return r;
}

static void oidc_verify(void)
{
    struct oidc_fixture f;
    CHECK(fixture_up(&f) == 0);
    /* RS256 and ES256, each with its own kid; at+jwt accepted. */
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"typ\":\"at+jwt\",\"kid\":\"rsa-1\"}",
                     idp_claims("[\"platform\"]", NULL))) == AUTH_OK);
    CHECK(f.p.role == ROLE_OPERATOR && strcmp(f.p.sub, "svc-1") == 0 && f.p.scope == NULL);
    CHECK(v(&f, sign(f.ec, "{\"alg\":\"ES256\",\"kid\":\"ec-1\"}",
                     idp_claims("[\"platform\",\"platform-admins\"]", NULL))) == AUTH_OK);
    CHECK(f.p.role == ROLE_ADMIN && f.p.platform_admin && f.p.nclaims == 0);
    /* The role claim maps to nothing: a valid token without roles (the request answers 403
     * role_not_mapped unless memberships stored for its subject grant some). */
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}",
                     idp_claims("[\"x\"]", NULL))) == AUTH_OK);
    CHECK(f.p.role == ROLE_NONE && !f.p.platform_admin && f.p.nclaims == 0);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", idp_claims("7", NULL))) ==
          AUTH_OK);
    CHECK(f.p.role == ROLE_NONE && f.p.nclaims == 0);
    /* A reporter scoped by the role map; the token's own pools claim does not widen it. */
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}",
                     idp_claims("[\"rep-a\"]", ",\"pools\":[\"pool-z\"]"))) == AUTH_OK);
    CHECK(f.p.role == ROLE_REPORTER);
    CHECK_STR(f.p.scope, "{\"hosts\":[],\"pools\":[\"pool-a\"]}");
    auth_principal_clear(&f.p);
    /* An unscoped role-map entry: the token's claims scope it, or it stays unscoped. */
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}",
                     idp_claims("[\"rep-any\"]", ",\"hosts\":[\"gpu-1\"]"))) == AUTH_OK);
    CHECK_STR(f.p.scope, "{\"hosts\":[\"gpu-1\"],\"pools\":[]}");
    auth_principal_clear(&f.p);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}",
                     idp_claims("\"rep-any\"", NULL))) == AUTH_OK);
    CHECK(f.p.role == ROLE_REPORTER && f.p.scope == NULL);
    /* Wrong iss / aud / expired still refused. */
    char other[1024];
    snprintf(other, sizeof other,
             "{\"sub\":\"s\",\"iss\":\"https://evil.test\",\"aud\":\"gpufleet-api\",\"exp\":%lld,"
             "\"groups\":[\"platform\"]}",
             (long long)(NOW + 300));
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", other)) == AUTH_INVALID);
    snprintf(other, sizeof other,
             "{\"sub\":\"s\",\"iss\":\"https://idp.test\",\"aud\":\"gpufleet-api\",\"exp\":%lld,"
             "\"groups\":[\"platform\"]}",
             (long long)(NOW - 3600));
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", other)) == AUTH_EXPIRED);
    /* No principal. */
    snprintf(other, sizeof other,
             "{\"iss\":\"https://idp.test\",\"aud\":\"gpufleet-api\",\"exp\":%lld,"
             "\"groups\":[\"platform\"]}",
             (long long)(NOW + 300));
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", other)) == AUTH_INVALID);
    fixture_down(&f);
}

static void oidc_confusion(void)
{
    struct oidc_fixture f;
    CHECK(fixture_up(&f) == 0);
    const char *c = idp_claims("[\"platform-admins\"]", NULL);
    /* HS256 with the RSA public key (PEM, as libjwt would read it) as the HMAC secret. */
    char *pem = ut_pem_of(f.rsa);
    CHECK(v(&f, sign_hs((const unsigned char *)pem, strlen(pem),
                        "{\"alg\":\"HS256\",\"kid\":\"rsa-1\"}", c)) == AUTH_INVALID);
    free(pem);
    /* alg none, with and without a kid. */
    const char *none_hdr = "{\"alg\":\"none\",\"kid\":\"rsa-1\"}";
    char *h = util_b64url_encode((const unsigned char *)none_hdr, strlen(none_hdr));
    char *b = util_b64url_encode((const unsigned char *)c, strlen(c));
    char tok[4096];
    snprintf(tok, sizeof tok, "Bearer %s.%s.", h, b);
    CHECK(auth_verify(&f.a, tok, NOW, &f.p, &f.why) == AUTH_INVALID);
    snprintf(tok, sizeof tok, "Bearer %s.%s.AAAA", h, b);
    CHECK(auth_verify(&f.a, tok, NOW, &f.p, &f.why) == AUTH_INVALID);
    free(h);
    free(b);
    /* ES256 announced for the RSA key, RS256 for the EC key: the key pins the alg. */
    CHECK(v(&f, sign(f.ec, "{\"alg\":\"ES256\",\"kid\":\"rsa-1\"}", c)) == AUTH_INVALID);
    CHECK(strstr(f.why, "algorithm") != NULL);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"ec-1\"}", c)) == AUTH_INVALID);
    /* RS512, PS256: refused before any key lookup. */
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS512\",\"kid\":\"rsa-1\"}", c)) == AUTH_INVALID);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"PS256\",\"kid\":\"rsa-1\"}", c)) == AUTH_INVALID);
    /* Signed by another key under a known kid; unknown kid; no kid; crit; odd typ. */
    CHECK(v(&f, sign(f.gone, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", c)) == AUTH_INVALID);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-9\"}", c)) == AUTH_INVALID);
    CHECK(strstr(f.why, "kid") != NULL);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\"}", c)) == AUTH_INVALID);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"crit\":[\"x\"]}", c)) ==
          AUTH_INVALID);
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"typ\":\"JWE\"}", c)) ==
          AUTH_INVALID);
    /* at+jwt is for OIDC only: the HS256 verifier keeps refusing it. */
    struct api_auth hs;
    auth_init_hs256(&hs, (const unsigned char *)"0123456789abcdef0123456789abcdef", 32, "gpufleet",
                    "gpufleet");
    char hc[512];
    snprintf(hc, sizeof hc,
             "{\"sub\":\"a\",\"role\":\"admin\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\","
             "\"exp\":%lld}",
             (long long)(NOW + 300));
    char *t = sign_hs((const unsigned char *)"0123456789abcdef0123456789abcdef", 32,
                      "{\"alg\":\"HS256\",\"typ\":\"at+jwt\"}", hc);
    CHECK(auth_verify(&hs, t, NOW, &f.p, &f.why) == AUTH_INVALID);
    free(t);
    auth_free(&hs);
    fixture_down(&f);
}

static void oidc_rotation(void)
{
    struct oidc_fixture f;
    CHECK(fixture_up(&f) == 0);
    const char *c = idp_claims("[\"platform\"]", NULL);
    char *gone = sign(f.gone, "{\"alg\":\"RS256\",\"kid\":\"gone-1\"}", c);
    CHECK(auth_verify(&f.a, gone, NOW, &f.p, &f.why) == AUTH_OK); /* verified, now cached */
    CHECK(auth_verify(&f.a, gone, NOW, &f.p, &f.why) == AUTH_OK);
    uint64_t g1 = jwks_generation(f.a.jwks);
    /* The provider drops gone-1: the cached token is verified again, and refused. */
    write_set(f.file,
              json_pack("[o, o]", ut_jwk_of(f.rsa, "rsa-1", NULL), ut_jwk_of(f.ec, "ec-1", NULL)));
    char err[256];
    CHECK(jwks_load(f.a.jwks, err, sizeof err) == 0);
    CHECK(jwks_generation(f.a.jwks) != g1);
    CHECK(auth_verify(&f.a, gone, NOW, &f.p, &f.why) == AUTH_INVALID);
    /* An unchanged document is no new generation. */
    uint64_t g2 = jwks_generation(f.a.jwks);
    CHECK(jwks_load(f.a.jwks, err, sizeof err) == 0 && jwks_generation(f.a.jwks) == g2);
    /* A broken document keeps the keys: health says degraded. */
    FILE *fp = fopen(f.file, "w");
    fputs("{\"keys\": garbage", fp);
    fclose(fp);
    CHECK(jwks_load(f.a.jwks, err, sizeof err) != 0 && strstr(err, "not a JWK set"));
    CHECK(v(&f, sign(f.rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", c)) == AUTH_OK);
    int unavailable = 1;
    json_t *h = jwks_health(f.a.jwks, &unavailable);
    CHECK(unavailable == 0);
    CHECK_STR(json_string_value(json_object_get(h, "status")), "degraded");
    CHECK(json_integer_value(json_object_get(h, "keys")) == 2);
    CHECK(strstr(json_string_value(json_object_get(h, "last_error")), "not a JWK set"));
    json_decref(h);
    free(gone);
    fixture_down(&f);
}

/* A JWK set file over 1 MiB is refused unread; an absent file is an error. */
static void jwks_file_limits(void)
{
    char dir[] = "/tmp/gft-unit-jwks-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64];
    snprintf(file, sizeof file, "%s/big.json", dir);
    FILE *f = fopen(file, "w");
    fputs("{\"keys\":[", f);
    for (int i = 0; i < 80000; i++)
        fputs("{\"kty\":\"OKP\"},", f);
    fputs("{}]}", f);
    fclose(f);
    struct jwks_config jc = {NULL, file, NULL, 600, 1, 5};
    struct jwks *j = jwks_new(&jc);
    char err[256];
    CHECK(jwks_load(j, err, sizeof err) != 0 && strstr(err, "larger than"));
    int unavailable = 0;
    json_t *h = jwks_health(j, &unavailable);
    CHECK(unavailable == 1);
    CHECK_STR(json_string_value(json_object_get(h, "status")), "unavailable");
    json_decref(h);
    jwks_free(j);
    unlink(file);
    jc.file = "/nonexistent/jwks.json";
    j = jwks_new(&jc);
    CHECK(jwks_load(j, err, sizeof err) != 0 && strstr(err, "cannot read"));
    jwks_free(j);
    rmdir(dir);
}

/* The background refresher: an unknown kid asks for a fetch (the lookup answers at
 * once), run at most once per min_refresh_s; a failed fetch keeps the keys. */
static void jwks_refresher(void)
{
    EVP_PKEY *a = ut_rsa_new(2048), *b = ut_ec_new("P-256");
    char dir[] = "/tmp/gft-unit-refresh-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64];
    snprintf(file, sizeof file, "%s/jwks.json", dir);
    write_set(file, json_pack("[o]", ut_jwk_of(a, "a", NULL)));
    struct jwks_config jc = {NULL, file, NULL, 600, 1, 5};
    struct jwks *j = jwks_new(&jc);
    char err[256];
    CHECK(jwks_load(j, err, sizeof err) == 0 && jwks_start(j) == 0);
    struct jwk_set *s;
    const struct jwk_key *k;
    CHECK(jwks_lookup(j, "a", &s, &k) == JWKS_FOUND && k->alg == JWT_ALG_RS256);
    jwk_set_release(s);
    uint64_t g = jwks_generation(j);
    write_set(file, json_pack("[o, o]", ut_jwk_of(a, "a", NULL), ut_jwk_of(b, "b", NULL)));
    /* Not found now (a lookup never waits for a fetch); the refresh it asked for runs
     * once min_refresh_s has passed since the last fetch. */
    CHECK(jwks_lookup(j, "b", &s, &k) == JWKS_UNKNOWN_KID && s == NULL);
    usleep(1100 * 1000);
    for (int i = 0; i < 30 && jwks_lookup(j, "b", &s, &k) != JWKS_FOUND; i++)
        usleep(100 * 1000);
    CHECK(s != NULL && k->alg == JWT_ALG_ES256);
    jwk_set_release(s);
    CHECK(jwks_generation(j) != g);
    /* A broken file: the fetch fails, the keys stay. */
    FILE *f = fopen(file, "w");
    fputs("[]", f);
    fclose(f);
    usleep(1100 * 1000);
    CHECK(jwks_lookup(j, "c", &s, &k) == JWKS_UNKNOWN_KID);
    int unavailable = 1;
    json_t *h = NULL;
    for (int i = 0; i < 30; i++) { /* the fetch it asked for, in the background */
        json_decref(h);
        h = jwks_health(j, &unavailable);
        if (json_integer_value(json_object_get(h, "consecutive_failures")) > 0)
            break;
        usleep(100 * 1000);
    }
    CHECK(jwks_lookup(j, "a", &s, &k) == JWKS_FOUND);
    jwk_set_release(s);
    CHECK(unavailable == 0 && json_integer_value(json_object_get(h, "keys")) == 2);
    CHECK_STR(json_string_value(json_object_get(h, "status")), "degraded");
    json_decref(h);
    jwks_free(j);
    unlink(file);
    rmdir(dir);
    EVP_PKEY_free(a);
    EVP_PKEY_free(b);
}

/* ---- HS256 reporter scopes ---- */

static void reporter_scope_claims(void)
{
    static const unsigned char key[] = "0123456789abcdef0123456789abcdef";
    struct api_auth a;
    auth_init_hs256(&a, key, 32, "gpufleet", "gpufleet");
    struct api_principal p = {0};
    const char *why;
    const char *pools[] = {"pool-a", "0F9C3A52-7E1B-4C7D-9A0B-1C2D3E4F5A6B"};
    const char *hosts[] = {"gpu-07"};
    char *tok = NULL, bearer[4096];
    CHECK(auth_mint_scoped(JWT_ALG_HS256, key, 32, "rep", ROLE_REPORTER, NULL, 300, "gpufleet",
                           "gpufleet", NOW, pools, 2, hosts, 1, &tok) == 0);
    snprintf(bearer, sizeof bearer, "Bearer %s", tok);
    free(tok);
    CHECK(auth_verify(&a, bearer, NOW, &p, &why) == AUTH_OK && p.role == ROLE_REPORTER);
    CHECK_STR(p.scope, "{\"hosts\":[\"gpu-07\"],\"pools\":[\"pool-a\","
                       "\"0f9c3a52-7e1b-4c7d-9a0b-1c2d3e4f5a6b\"]}");
    auth_principal_clear(&p);
    /* The cached copy carries the scope too. */
    CHECK(auth_verify(&a, bearer, NOW, &p, &why) == AUTH_OK);
    CHECK(p.scope != NULL && strstr(p.scope, "pool-a") != NULL);
    auth_principal_clear(&p);
    /* Pools only; an empty pools array is a scope of nothing (not unscoped). */
    CHECK(auth_mint_scoped(JWT_ALG_HS256, key, 32, "rep", ROLE_REPORTER, NULL, 300, "gpufleet",
                           "gpufleet", NOW, pools, 1, NULL, 0, &tok) == 0);
    snprintf(bearer, sizeof bearer, "Bearer %s", tok);
    free(tok);
    CHECK(auth_verify(&a, bearer, NOW, &p, &why) == AUTH_OK);
    CHECK_STR(p.scope, "{\"hosts\":[],\"pools\":[\"pool-a\"]}");
    auth_principal_clear(&p);
    char c[512];
    const char *H = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
#define REP(extra)                                                                              \
    (snprintf(c, sizeof c,                                                                      \
              "{\"sub\":\"r\",\"role\":\"reporter\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\"," \
              "\"exp\":%lld%s}",                                                                \
              (long long)(NOW + 300), extra),                                                   \
     c)
    char *t = sign_hs(key, 32, H, REP(",\"pools\":[]"));
    CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_OK);
    CHECK_STR(p.scope, "{\"hosts\":[],\"pools\":[]}");
    auth_principal_clear(&p);
    free(t);
    /* No claims: unscoped. */
    t = sign_hs(key, 32, H, REP(""));
    CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_OK && p.scope == NULL);
    free(t);
    /* Malformed scope claims: 401. */
    static const char *const bad[] = {",\"pools\":\"pool-a\"",      ",\"pools\":[1]",
                                      ",\"hosts\":[\"\"]",          ",\"hosts\":{}",
                                      ",\"pools\":[\"a\\u0001b\"]", ",\"pools\":null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = sign_hs(key, 32, H, REP(bad[i]));
        CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_INVALID && strstr(why, "pools or hosts"));
        free(t);
    }
    /* Scope claims on other roles are ignored. */
    snprintf(c, sizeof c,
             "{\"sub\":\"o\",\"role\":\"operator\",\"iss\":\"gpufleet\",\"aud\":\"gpufleet\","
             "\"exp\":%lld,\"pools\":\"x\"}",
             (long long)(NOW + 300));
    t = sign_hs(key, 32, H, c);
    CHECK(auth_verify(&a, t, NOW, &p, &why) == AUTH_OK && p.scope == NULL);
    free(t);
    /* Minting refuses oversize scopes. */
    const char *many[AUTH_MAX_SCOPE_ITEMS + 1];
    for (int i = 0; i <= AUTH_MAX_SCOPE_ITEMS; i++)
        many[i] = "p";
    CHECK(auth_mint_scoped(JWT_ALG_HS256, key, 32, "rep", ROLE_REPORTER, NULL, 300, "gpufleet",
                           "gpufleet", NOW, many, AUTH_MAX_SCOPE_ITEMS + 1, NULL, 0, &tok) != 0);
    CHECK(auth_scope_item_ok("pool a") && !auth_scope_item_ok("") && !auth_scope_item_ok("a\nb"));
    auth_free(&a);
#undef REP
}

/* ---- configuration ---- */

static const char *const *vars;

static const char *fake_env(const char *name)
{
    for (const char *const *p = vars; p && *p; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static int load(const char *const *table, struct api_config *cfg, char *err)
{
    vars = table;
    int rc = config_load(cfg, CONFIG_NEED_JWT, fake_env, err, 512);
    config_free(cfg);
    return rc;
}

#define OIDC_OK                                                                                  \
    "GPUFLEET_JWT_JWKS_URL", "https://idp.example.com/jwks", "GPUFLEET_JWT_ISSUER",              \
        "https://idp.example.com", "GPUFLEET_JWT_AUDIENCE", "gpufleet", "GPUFLEET_JWT_ROLE_MAP", \
        "admins:admin"

static void config_oidc(void)
{
    struct api_config cfg;
    char err[512];
    static const char *const ok[] = {OIDC_OK, NULL};
    vars = ok;
    CHECK(config_load(&cfg, CONFIG_NEED_JWT, fake_env, err, sizeof err) == 0);
    CHECK(cfg.jwt_jwks_refresh_s == 600 && cfg.jwt_jwks_min_refresh_s == 30);
    CHECK(cfg.jwt_jwks_timeout_s == 5 && cfg.allow_unscoped_reporters == 0);
    CHECK_STR(cfg.jwt_role_claim, "groups");
    CHECK_STR(cfg.jwt_principal_claim, "sub");
    config_free(&cfg);
    static const char *const tuned[] = {OIDC_OK,
                                        "GPUFLEET_JWT_JWKS_REFRESH_SECONDS",
                                        "60",
                                        "GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS",
                                        "1",
                                        "GPUFLEET_JWT_ROLE_CLAIM",
                                        "realm_access.roles",
                                        "GPUFLEET_JWT_PRINCIPAL_CLAIM",
                                        "client_id",
                                        "GPUFLEET_ALLOW_UNSCOPED_REPORTERS",
                                        "1",
                                        NULL};
    vars = tuned;
    CHECK(config_load(&cfg, CONFIG_NEED_JWT, fake_env, err, sizeof err) == 0);
    CHECK(cfg.jwt_jwks_refresh_s == 60 && cfg.jwt_jwks_min_refresh_s == 1);
    CHECK(cfg.allow_unscoped_reporters == 1);
    CHECK_STR(cfg.jwt_role_claim, "realm_access.roles");
    config_free(&cfg);

    /* Each refusal names its variable. */
    static const char *const both[] = {OIDC_OK, "GPUFLEET_JWT_SECRET_FILE", "/etc/hostname", NULL};
    CHECK(load(both, &cfg, err) != 0 && strstr(err, "only one"));
    static const char *const two[] = {OIDC_OK, "GPUFLEET_JWT_JWKS_FILE", "/etc/hostname", NULL};
    CHECK(load(two, &cfg, err) != 0 && strstr(err, "only one"));
    /* The OIDC settings one at a time, to leave one out. */
#define V_URL "GPUFLEET_JWT_JWKS_URL", "https://idp/jwks"
#define V_ISS "GPUFLEET_JWT_ISSUER", "a"
#define V_AUD "GPUFLEET_JWT_AUDIENCE", "a"
#define V_MAP "GPUFLEET_JWT_ROLE_MAP", "a:admin"
    static const char *const no_iss[] = {V_URL, V_AUD, V_MAP, NULL};
    CHECK(load(no_iss, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_ISSUER"));
    static const char *const no_aud[] = {V_URL, V_ISS, V_MAP, NULL};
    CHECK(load(no_aud, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_AUDIENCE"));
    static const char *const no_map[] = {V_URL, V_ISS, V_AUD, NULL};
    CHECK(load(no_map, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_ROLE_MAP must be set"));
    static const char *const bad_map[] = {"GPUFLEET_JWT_ROLE_MAP", "admins:root", OIDC_OK, NULL};
    CHECK(load(bad_map, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_ROLE_MAP"));
    static const char *const http[] = {"GPUFLEET_JWT_JWKS_URL", "http://idp/jwks", OIDC_OK, NULL};
    CHECK(load(http, &cfg, err) != 0 && strstr(err, "https"));
    static const char *const nofile[] = {
        "GPUFLEET_JWT_JWKS_FILE", "/nonexistent/jwks.json", V_ISS, V_AUD, V_MAP, NULL};
#undef V_URL
#undef V_ISS
#undef V_AUD
#undef V_MAP
    CHECK(load(nofile, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_JWKS_FILE"));
    static const char *const noca[] = {OIDC_OK, "GPUFLEET_JWT_JWKS_CA_FILE", "/nonexistent/ca",
                                       NULL};
    CHECK(load(noca, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_JWKS_CA_FILE"));
    static const char *const claim[] = {OIDC_OK, "GPUFLEET_JWT_ROLE_CLAIM", "has space", NULL};
    CHECK(load(claim, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_ROLE_CLAIM"));
    static const char *const minmax[] = {OIDC_OK, "GPUFLEET_JWT_JWKS_REFRESH_SECONDS",
                                         "60",    "GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS",
                                         "120",   NULL};
    CHECK(load(minmax, &cfg, err) != 0 && strstr(err, "must not exceed"));
    static const char *const refresh[] = {OIDC_OK, "GPUFLEET_JWT_JWKS_REFRESH_SECONDS", "5", NULL};
    CHECK(load(refresh, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_JWKS_REFRESH_SECONDS"));
    static const char *const timeout[] = {OIDC_OK, "GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS", "0", NULL};
    CHECK(load(timeout, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS"));
    static const char *const unscoped[] = {"GPUFLEET_ALLOW_UNSCOPED_REPORTERS", "yes", NULL};
    vars = unscoped;
    CHECK(config_load(&cfg, 0, fake_env, err, sizeof err) != 0 &&
          strstr(err, "GPUFLEET_ALLOW_UNSCOPED_REPORTERS"));
    config_free(&cfg);
    /* OIDC-only settings without OIDC are refused rather than ignored. */
    static const char *const stray[] = {"GPUFLEET_JWT_SECRET_FILE", "/etc/hostname",
                                        "GPUFLEET_JWT_ROLE_MAP", "a:admin", NULL};
    CHECK(load(stray, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_ROLE_MAP applies to OIDC"));
    static const char *const none[] = {NULL};
    CHECK(load(none, &cfg, err) != 0 && strstr(err, "GPUFLEET_JWT_JWKS_URL"));
}

UNIT_SUITE(oidc_tests) = {
    {"oidc: JWKS URL policy (https, http only to loopback)", jwks_url_policy},
    {"oidc: JWK set file over 1 MiB or missing: refused, unavailable", jwks_file_limits},
    {"oidc: RS256/ES256 tokens, role mapping, reporter scope, iss/exp/sub", oidc_verify},
    {"oidc: alg confusion (HS256 with the public key, none, key/alg mismatch, kid)",
     oidc_confusion},
    {"oidc: key removed → cached token refused; garbage refresh keeps keys (degraded)",
     oidc_rotation},
    {"oidc: background refresh on an unknown kid, rate-limited; a failed one keeps keys",
     jwks_refresher},
    {"auth: reporter scope claims (minted, cached, empty, malformed, other roles)",
     reporter_scope_claims},
    {"config: OIDC settings and GPUFLEET_ALLOW_UNSCOPED_REPORTERS validated", config_oidc},
    UNIT_END,
};
