/* auth.c — see auth.h. */
#include "api/auth.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/secret.h"
#include "common/util.h"

/* Verified-token cache. A token that verified once is identified by the SHA-256 of its
 * text (compared in constant time); its time claims are re-checked on every use, so a
 * cached token expires exactly when it would otherwise. It saves the header/payload JSON
 * parses and the signature check on repeated requests with the same token. */
#define AUTH_CACHE_SLOTS 1024 /* power of two */

struct auth_cache_entry {
    unsigned char digest[32];
    int used;
    int64_t exp, nbf; /* nbf = INT64_MIN when absent */
    struct api_principal principal;
};

struct auth_cache {
    pthread_mutex_t mu;
    struct auth_cache_entry slots[AUTH_CACHE_SLOTS];
};

static struct auth_cache *cache_new(void)
{
    struct auth_cache *c = calloc(1, sizeof *c);
    if (c != NULL)
        pthread_mutex_init(&c->mu, NULL);
    return c;
}

static size_t cache_slot(const unsigned char digest[32])
{
    return ((size_t)digest[0] | (size_t)digest[1] << 8) & (AUTH_CACHE_SLOTS - 1);
}

/* Returns 1 and fills *e when the token is cached. */
static int cache_get(struct auth_cache *c, const unsigned char digest[32],
                     struct auth_cache_entry *e)
{
    if (c == NULL)
        return 0;
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    struct auth_cache_entry *s = &c->slots[cache_slot(digest)];
    if (s->used && CRYPTO_memcmp(s->digest, digest, 32) == 0) {
        *e = *s;
        hit = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static void cache_put(struct auth_cache *c, const struct auth_cache_entry *e)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->slots[cache_slot(e->digest)] = *e;
    pthread_mutex_unlock(&c->mu);
}

enum api_role auth_role_parse(const char *s)
{
    if (s == NULL)
        return ROLE_NONE;
    if (strcmp(s, "viewer") == 0)
        return ROLE_VIEWER;
    if (strcmp(s, "operator") == 0)
        return ROLE_OPERATOR;
    if (strcmp(s, "admin") == 0)
        return ROLE_ADMIN;
    if (strcmp(s, "reporter") == 0)
        return ROLE_REPORTER;
    return ROLE_NONE;
}

const char *auth_role_name(enum api_role r)
{
    switch (r) {
    case ROLE_VIEWER: return "viewer";
    case ROLE_OPERATOR: return "operator";
    case ROLE_ADMIN: return "admin";
    case ROLE_REPORTER: return "reporter";
    default: return "none";
    }
}

int auth_init_hs256(struct api_auth *a, const unsigned char *secret, size_t len, const char *issuer,
                    const char *audience)
{
    memset(a, 0, sizeof *a);
    a->alg = JWT_ALG_HS256;
    a->key = malloc(len + 1);
    if (a->key == NULL)
        return -1;
    memcpy(a->key, secret, len);
    a->key[len] = '\0';
    a->keylen = len;
    a->issuer = strdup(issuer);
    a->audience = strdup(audience);
    a->cache = cache_new();
    return 0;
}

/* Checks that pem is an EC P-256 public key. */
static int check_p256_public(const unsigned char *pem, size_t len, char *err, size_t errlen)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *pk = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    int ok = 0;
    if (pk != NULL && EVP_PKEY_base_id(pk) == EVP_PKEY_EC) {
        char group[64];
        size_t glen = 0;
        if (EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof group, &glen) == 1 &&
            strcmp(group, "prime256v1") == 0)
            ok = 1;
    }
    EVP_PKEY_free(pk);
    BIO_free(bio);
    if (!ok)
        snprintf(err, errlen,
                 "GPUFLEET_JWT_PUBLIC_KEY_FILE must hold a PEM EC P-256 public key (ES256)");
    return ok ? 0 : -1;
}

int auth_init(struct api_auth *a, const char *secret_file, const char *public_key_file,
              const char *issuer, const char *audience, char *err, size_t errlen)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    memset(a, 0, sizeof *a);
    if (secret_file != NULL) {
        if (secret_read_file(secret_file, &buf, &len, err, errlen) != 0)
            return -1;
        int rc = auth_init_hs256(a, buf, len, issuer, audience);
        secret_free(buf, len);
        return rc;
    }
    if (secret_read_file(public_key_file, &buf, &len, err, errlen) != 0)
        return -1;
    if (check_p256_public(buf, len, err, errlen) != 0) {
        secret_free(buf, len);
        return -1;
    }
    a->alg = JWT_ALG_ES256;
    a->key = buf; /* NUL-terminated by secret_read_file's spare byte */
    a->key[len] = '\0';
    a->keylen = len;
    a->issuer = strdup(issuer);
    a->audience = strdup(audience);
    a->cache = cache_new();
    return 0;
}

void auth_free(struct api_auth *a)
{
    secret_free(a->key, a->keylen);
    free(a->issuer);
    free(a->audience);
    if (a->cache != NULL) {
        pthread_mutex_destroy(&a->cache->mu);
        free(a->cache);
    }
    memset(a, 0, sizeof *a);
}

/* Decodes one base64url JWT segment into a JSON object (duplicates rejected). */
static json_t *decode_segment(const char *seg, size_t len)
{
    unsigned char *raw;
    size_t rawlen;
    if (len == 0 || util_b64url_decode(seg, len, &raw, &rawlen) != 0)
        return NULL;
    json_t *j = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, NULL);
    free(raw);
    if (j != NULL && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int printable_ascii(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* Checks the claims. Returns AUTH_OK and fills p, or a failure with *why. */
static enum auth_result check_claims(const struct api_auth *a, json_t *claims, int64_t now,
                                     struct api_principal *p, const char **why)
{
    json_t *exp = json_object_get(claims, "exp");
    if (!json_is_integer(exp)) {
        *why = "the token has no integer exp claim";
        return AUTH_INVALID;
    }
    if ((int64_t)json_integer_value(exp) + AUTH_LEEWAY_S < now) {
        *why = "the token has expired";
        return AUTH_EXPIRED;
    }
    json_t *nbf = json_object_get(claims, "nbf");
    if (nbf != NULL) {
        if (!json_is_integer(nbf)) {
            *why = "the nbf claim is not an integer";
            return AUTH_INVALID;
        }
        if ((int64_t)json_integer_value(nbf) - AUTH_LEEWAY_S > now) {
            *why = "the token is not valid yet (nbf)";
            return AUTH_INVALID;
        }
    }
    json_t *iat = json_object_get(claims, "iat");
    if (iat != NULL &&
        (!json_is_integer(iat) || (int64_t)json_integer_value(iat) - AUTH_LEEWAY_S > now)) {
        *why = "the iat claim is invalid or in the future";
        return AUTH_INVALID;
    }
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (iss == NULL || strcmp(iss, a->issuer) != 0) {
        *why = "the token issuer (iss) is not accepted";
        return AUTH_INVALID;
    }
    json_t *aud = json_object_get(claims, "aud");
    int aud_ok = 0;
    if (json_is_string(aud)) {
        aud_ok = strcmp(json_string_value(aud), a->audience) == 0;
    } else if (json_is_array(aud)) {
        size_t i;
        json_t *v;
        json_array_foreach(aud, i, v)
        {
            if (json_is_string(v) && strcmp(json_string_value(v), a->audience) == 0)
                aud_ok = 1;
        }
    }
    if (!aud_ok) {
        *why = "the token audience (aud) is not accepted";
        return AUTH_INVALID;
    }
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    if (sub == NULL || !printable_ascii(sub, sizeof p->sub - 1)) {
        *why = "the sub claim is missing or not 1-128 printable ASCII characters";
        return AUTH_INVALID;
    }
    enum api_role role = auth_role_parse(json_string_value(json_object_get(claims, "role")));
    if (role == ROLE_NONE) {
        *why = "the role claim is missing or unknown";
        return AUTH_INVALID;
    }
    snprintf(p->sub, sizeof p->sub, "%s", sub);
    p->role = role;
    return AUTH_OK;
}

enum auth_result auth_verify(const struct api_auth *a, const char *authorization, int64_t now,
                             struct api_principal *p, const char **why)
{
    *why = "";
    if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0) {
        *why = "an Authorization: Bearer token is required";
        return AUTH_MISSING;
    }
    const char *token = authorization + 7;
    while (*token == ' ')
        token++;
    size_t tlen = strlen(token);
    if (tlen == 0) {
        *why = "an Authorization: Bearer token is required";
        return AUTH_MISSING;
    }
    if (tlen > AUTH_MAX_TOKEN) {
        *why = "the token is too long";
        return AUTH_INVALID;
    }
    unsigned char digest[32];
    util_sha256(token, tlen, digest);
    struct auth_cache_entry ce;
    if (cache_get(a->cache, digest, &ce)) {
        if (ce.exp + AUTH_LEEWAY_S < now) {
            *why = "the token has expired";
            return AUTH_EXPIRED;
        }
        if (ce.nbf - AUTH_LEEWAY_S > now) {
            *why = "the token is not valid yet (nbf)";
            return AUTH_INVALID;
        }
        *p = ce.principal;
        return AUTH_OK;
    }
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (dot1 == NULL || dot2 == NULL || strchr(dot2 + 1, '.') != NULL || dot2[1] == '\0') {
        *why = "the token is not a signed JWT (header.payload.signature)";
        return AUTH_INVALID;
    }

    /* 1. Pin the algorithm before libjwt chooses one from the header. */
    json_t *hdr = decode_segment(token, (size_t)(dot1 - token));
    if (hdr == NULL) {
        *why = "the token header is not valid base64url JSON";
        return AUTH_INVALID;
    }
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    const char *typ = json_string_value(json_object_get(hdr, "typ"));
    int hdr_ok = alg != NULL && strcmp(alg, jwt_alg_str(a->alg)) == 0 &&
                 (json_object_get(hdr, "typ") == NULL || (typ && strcasecmp(typ, "JWT") == 0)) &&
                 json_object_get(hdr, "crit") == NULL;
    json_decref(hdr);
    if (!hdr_ok) {
        *why = "the token algorithm or header is not accepted";
        return AUTH_INVALID;
    }

    /* 2. Verify the signature with the configured key. */
    jwt_t *jwt = NULL;
    char *tok = strndup(token, tlen);
    int rc = tok ? jwt_decode(&jwt, tok, a->key, (int)a->keylen) : ENOMEM;
    free(tok);
    if (rc != 0 || jwt == NULL || jwt_get_alg(jwt) != a->alg) {
        jwt_free(jwt);
        *why = "the token signature is not valid";
        return AUTH_INVALID;
    }
    jwt_free(jwt);

    /* 3. Claims, parsed strictly from the (now authenticated) payload. */
    json_t *claims = decode_segment(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (claims == NULL) {
        *why = "the token payload is not a JSON object";
        return AUTH_INVALID;
    }
    enum auth_result res = check_claims(a, claims, now, p, why);
    if (res == AUTH_OK) {
        memset(&ce, 0, sizeof ce);
        memcpy(ce.digest, digest, sizeof digest);
        ce.used = 1;
        ce.exp = (int64_t)json_integer_value(json_object_get(claims, "exp"));
        json_t *nbf = json_object_get(claims, "nbf");
        ce.nbf = nbf ? (int64_t)json_integer_value(nbf) : INT64_MIN / 2;
        ce.principal = *p;
        cache_put(a->cache, &ce);
    }
    json_decref(claims);
    return res;
}

int auth_mint(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
              enum api_role role, long ttl_s, const char *issuer, const char *audience, int64_t now,
              char **out)
{
    jwt_t *jwt = NULL;
    int rc = -1;
    char jti[UTIL_UUID_LEN + 1];
    util_uuid4(jti);
    if (jwt_new(&jwt) != 0)
        return -1;
    if (jwt_add_grant(jwt, "sub", sub) || jwt_add_grant(jwt, "role", auth_role_name(role)) ||
        jwt_add_grant(jwt, "iss", issuer) || jwt_add_grant(jwt, "aud", audience) ||
        jwt_add_grant(jwt, "jti", jti) || jwt_add_grant_int(jwt, "iat", (long)now) ||
        jwt_add_grant_int(jwt, "nbf", (long)now) ||
        jwt_add_grant_int(jwt, "exp", (long)(now + ttl_s)) ||
        jwt_set_alg(jwt, alg, key, (int)keylen))
        goto cleanup;
    *out = jwt_encode_str(jwt);
    rc = *out ? 0 : -1;
cleanup:
    jwt_free(jwt);
    return rc;
}
