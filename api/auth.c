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

#include "api/role.h"
#include "api/rolemap.h"
#include "common/secret.h"
#include "common/util.h"
#include "service/jwks.h"

/* Verified-token cache. A token that verified once is identified by the SHA-256 of its
 * text (compared in constant time); its time claims are re-checked on every use, so a
 * cached token expires exactly when it would otherwise. It saves the header/payload JSON
 * parses and the signature check on repeated requests with the same token. */
#define AUTH_CACHE_SLOTS 1024 /* power of two */

struct auth_cache_entry {
    unsigned char digest[32];
    int used;
    int64_t exp, nbf; /* nbf = INT64_MIN when absent */
    uint64_t gen;     /* OIDC: the key set generation that verified it (0 otherwise) */
    struct api_principal principal; /* scope owned by the slot */
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

/* Returns 1 and fills *e when the token is cached; e->principal.scope is then a copy the
 * caller owns. */
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
        e->principal.scope = s->principal.scope ? strdup(s->principal.scope) : NULL;
        hit = !(s->principal.scope != NULL && e->principal.scope == NULL);
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* Stores a copy of e (and of its scope). */
static void cache_put(struct auth_cache *c, const struct auth_cache_entry *e)
{
    if (c == NULL)
        return;
    char *scope = NULL;
    if (e->principal.scope != NULL && (scope = strdup(e->principal.scope)) == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    struct auth_cache_entry *s = &c->slots[cache_slot(e->digest)];
    char *old = s->principal.scope;
    *s = *e;
    s->principal.scope = scope;
    pthread_mutex_unlock(&c->mu);
    free(old);
}

static void cache_free(struct auth_cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++)
        free(c->slots[i].principal.scope);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void auth_principal_clear(struct api_principal *p)
{
    free(p->scope);
    p->scope = NULL;
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
    if (secret_read_public_file(public_key_file, &buf, &len, err, errlen) != 0)
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

int auth_init_oidc(struct api_auth *a, struct jwks *jwks, const char *role_map,
                   const char *role_claim, const char *principal_claim, const char *issuer,
                   const char *audience, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->alg = JWT_ALG_NONE;
    a->jwks = jwks;
    if (auth_rolemap_parse(role_map, &a->rolemap, err, errlen) != 0) {
        auth_free(a);
        return -1;
    }
    a->role_claim = strdup(role_claim);
    a->principal_claim = strdup(principal_claim);
    a->issuer = strdup(issuer);
    a->audience = strdup(audience);
    a->cache = cache_new();
    if (a->role_claim == NULL || a->principal_claim == NULL || a->issuer == NULL ||
        a->audience == NULL || a->cache == NULL) {
        snprintf(err, errlen, "out of memory");
        auth_free(a);
        return -1;
    }
    return 0;
}

void auth_free(struct api_auth *a)
{
    secret_free(a->key, a->keylen);
    free(a->issuer);
    free(a->audience);
    cache_free(a->cache);
    jwks_free(a->jwks);
    auth_rolemap_free(a->rolemap);
    free(a->role_claim);
    free(a->principal_claim);
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

int auth_scope_item_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* A scope member as compared with the database: a UUID in lowercase, a name as is. */
static json_t *scope_member(const char *v)
{
    if (!util_is_uuid(v))
        return json_string(v);
    char low[UTIL_UUID_LEN + 1];
    for (size_t i = 0; i <= UTIL_UUID_LEN; i++)
        low[i] = (char)tolower((unsigned char)v[i]);
    return json_string(low);
}

/* The token's own "pools" and "hosts" claims. Returns 0 with *scope (NULL when the token
 * has neither), or -1 when either is not an array of at most AUTH_MAX_SCOPE_ITEMS valid
 * names. */
static int claims_scope(json_t *claims, json_t **scope)
{
    static const char *const names[] = {"pools", "hosts"};
    *scope = NULL;
    json_t *out = NULL;
    for (int k = 0; k < 2; k++) {
        json_t *c = json_object_get(claims, names[k]);
        if (c == NULL)
            continue;
        if (!json_is_array(c) || json_array_size(c) > AUTH_MAX_SCOPE_ITEMS)
            goto bad;
        if (out == NULL)
            out = json_pack("{s:[], s:[]}", "pools", "hosts");
        json_t *arr = json_object_get(out, names[k]);
        size_t i;
        json_t *v;
        json_array_foreach(c, i, v)
        {
            if (!json_is_string(v) || !auth_scope_item_ok(json_string_value(v)))
                goto bad;
            json_array_append_new(arr, scope_member(json_string_value(v)));
        }
    }
    *scope = out;
    return 0;
bad:
    json_decref(out);
    return -1;
}

/* A claim by name; when there is none and the name has dots, by path (realm_access.roles). */
static json_t *claim_at(json_t *claims, const char *name)
{
    json_t *v = json_object_get(claims, name);
    if (v != NULL || strchr(name, '.') == NULL)
        return v;
    char path[256];
    snprintf(path, sizeof path, "%s", name);
    char *save = NULL;
    v = claims;
    for (char *part = strtok_r(path, ".", &save); part && v; part = strtok_r(NULL, ".", &save))
        v = json_is_object(v) ? json_object_get(v, part) : NULL;
    return v;
}

/* exp, nbf, iat, iss and aud. */
static enum auth_result check_time_iss_aud(const struct api_auth *a, json_t *claims, int64_t now,
                                           const char **why)
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
    return AUTH_OK;
}

/* gpufleetd's own tokens: a lifetime (exp - iat, or - nbf, or - now) over the role's cap
 * — a token minted before the cap, or by hand with the secret — is refused. */
static enum auth_result check_lifetime(const struct api_auth *a, json_t *claims,
                                       const struct api_principal *p, int64_t now, const char **why)
{
    int reporter = p->role == ROLE_REPORTER;
    for (int i = 0; i < p->nclaims; i++)
        reporter |= p->claims[i].role == ROLE_REPORTER;
    long cap = reporter ? a->reporter_max_ttl_s : a->max_ttl_s;
    if (a->jwks != NULL || cap <= 0)
        return AUTH_OK;
    json_t *from = json_object_get(claims, "iat");
    if (from == NULL)
        from = json_object_get(claims, "nbf");
    int64_t start = json_is_integer(from) ? (int64_t)json_integer_value(from) : now;
    if (p->exp - start <= cap)
        return AUTH_OK;
    *why = reporter ? "the token lives longer than GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS "
                      "allows; mint a new one"
                    : "the token lives longer than GPUFLEET_TOKEN_MAX_TTL_SECONDS allows; mint "
                      "a new one";
    return AUTH_INVALID;
}

/* A gpufleetd token's project claim: a project name, or absent. */
static int project_claim(json_t *claims, const char **name)
{
    const json_t *v = json_object_get(claims, "project");
    *name = NULL;
    if (v == NULL)
        return 0;
    const char *s = json_string_value(v);
    if (s == NULL || !auth_project_name_ok(s))
        return -1;
    *name = s;
    return 0;
}

/* Where the roles apply: the projects named, else (a role without a project) a platform
 * admin, or the project named default for the other roles. */
static void place_roles(struct api_principal *p, enum api_role role, const char *project)
{
    if (project != NULL) {
        snprintf(p->claims[0].project, sizeof p->claims[0].project, "%s", project);
        p->claims[0].role = role;
        p->nclaims = 1;
        return;
    }
    if (role == ROLE_ADMIN) {
        p->platform_admin = 1;
        return;
    }
    if (role == ROLE_NONE || p->nclaims >= API_MAX_PROJECT_CLAIMS)
        return;
    for (int i = 0; i < p->nclaims; i++)
        if (!strcmp(p->claims[i].project, "default")) {
            if (auth_role_rank(role) > auth_role_rank(p->claims[i].role))
                p->claims[i].role = role;
            return;
        }
    snprintf(p->claims[p->nclaims].project, sizeof p->claims[0].project, "default");
    p->claims[p->nclaims++].role = role;
}

/* The token's roles: the role claim and the optional project (gpufleetd tokens), or the
 * role map (identity-provider tokens; no match is not refused here: memberships stored
 * for the subject may still grant roles). */
static enum auth_result token_roles(const struct api_auth *a, json_t *claims,
                                    struct api_principal *p, json_t **scope, const char **why)
{
    if (a->jwks != NULL) {
        p->role = auth_rolemap_resolve(a->rolemap, claim_at(claims, a->role_claim), scope,
                                       p->claims, API_MAX_PROJECT_CLAIMS, &p->nclaims);
        place_roles(p, p->role, NULL);
        return AUTH_OK;
    }
    const char *project;
    p->role = auth_role_parse(json_string_value(json_object_get(claims, "role")));
    if (p->role == ROLE_NONE) {
        *why = "the role claim is missing or unknown";
        return AUTH_INVALID;
    }
    if (project_claim(claims, &project) != 0) {
        *why = "the project claim is not a project name";
        return AUTH_INVALID;
    }
    place_roles(p, p->role, project);
    return AUTH_OK;
}

/* The principal: sub (or the configured claim), roles and, for a reporter, the scope. */
static enum auth_result check_identity(const struct api_auth *a, json_t *claims,
                                       struct api_principal *p, const char **why)
{
    const char *pclaim = a->jwks ? a->principal_claim : "sub";
    const char *sub = json_string_value(claim_at(claims, pclaim));
    if (sub == NULL || !util_printable_ascii(sub, sizeof p->sub - 1)) {
        *why = a->jwks ? "the principal claim is missing or not 1-128 printable ASCII characters"
                       : "the sub claim is missing or not 1-128 printable ASCII characters";
        return AUTH_INVALID;
    }
    json_t *scope = NULL;
    p->platform_admin = p->nclaims = 0;
    enum auth_result res = token_roles(a, claims, p, &scope, why);
    if (res != AUTH_OK)
        return res;
    int reporter = p->role == ROLE_REPORTER;
    for (int i = 0; i < p->nclaims; i++)
        reporter |= p->claims[i].role == ROLE_REPORTER;
    if (reporter && scope == NULL && claims_scope(claims, &scope) != 0) {
        *why = "the pools or hosts claim is not an array of at most 256 names or ids";
        return AUTH_INVALID;
    }
    char *text = NULL;
    if (reporter && scope != NULL)
        text = json_dumps(scope, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(scope);
    if (reporter && scope != NULL && text == NULL) {
        *why = "out of memory";
        return AUTH_INVALID;
    }
    snprintf(p->sub, sizeof p->sub, "%s", sub);
    p->scope = text;
    p->from_idp = a->jwks != NULL;
    const char *jti = json_string_value(json_object_get(claims, "jti"));
    snprintf(p->jti, sizeof p->jti, "%s",
             jti != NULL && util_printable_ascii(jti, sizeof p->jti - 1) ? jti : "");
    json_t *iat = json_object_get(claims, "iat");
    p->iat = json_is_integer(iat) ? (int64_t)json_integer_value(iat) : INT64_MIN;
    p->exp = (int64_t)json_integer_value(json_object_get(claims, "exp"));
    return AUTH_OK;
}

/* typ may be absent, JWT, or (OIDC access tokens, RFC 9068) at+jwt. */
static int typ_ok(const json_t *hdr, int oidc)
{
    const json_t *t = json_object_get(hdr, "typ");
    if (t == NULL)
        return 1;
    const char *typ = json_string_value(t);
    if (typ == NULL)
        return 0;
    if (strcasecmp(typ, "JWT") == 0)
        return 1;
    return oidc && (strcasecmp(typ, "at+jwt") == 0 || strcasecmp(typ, "application/at+jwt") == 0);
}

/* A reason that names something of the token (the unknown kid): per thread, valid until
 * the thread's next auth_verify. */
static _Thread_local char why_buf[JWK_MAX_KID + 192];

/* The key for a token: the configured one (*key, *keylen, *alg), or the JWK set's key named
 * by kid (*jk) — whose algorithm must be the header's. On AUTH_OK in OIDC mode *set holds
 * a reference the caller releases. */
static enum auth_result pick_key(const struct api_auth *a, json_t *hdr, const unsigned char **key,
                                 size_t *keylen, jwt_alg_t *alg, struct jwk_set **set,
                                 const struct jwk_key **jk, const char **why)
{
    const char *halg = json_string_value(json_object_get(hdr, "alg"));
    *set = NULL;
    if (halg == NULL || !typ_ok(hdr, a->jwks != NULL) || json_object_get(hdr, "crit") != NULL) {
        *why = "the token algorithm or header is not accepted";
        return AUTH_INVALID;
    }
    if (a->jwks == NULL) {
        if (strcmp(halg, jwt_alg_str(a->alg)) != 0) {
            *why = "the token algorithm or header is not accepted";
            return AUTH_INVALID;
        }
        *key = a->key;
        *keylen = a->keylen;
        *alg = a->alg;
        return AUTH_OK;
    }
    /* Only algorithms a JWK can pin get as far as a key lookup (which may fetch). */
    if (strcmp(halg, "RS256") != 0 && strcmp(halg, "ES256") != 0) {
        *why = "the token algorithm is not accepted (RS256 or ES256 with a key of the JWK set)";
        return AUTH_INVALID;
    }
    const char *kid = json_string_value(json_object_get(hdr, "kid"));
    if (kid == NULL || !util_printable_ascii(kid, JWK_MAX_KID)) {
        *why = "the token header has no valid kid";
        return AUTH_INVALID;
    }
    const struct jwk_key *k;
    switch (jwks_lookup(a->jwks, kid, set, &k)) {
    case JWKS_FOUND: break;
    case JWKS_NO_KEYS:
        *why = "no signing keys are loaded from the identity provider yet (a fetch has been "
               "asked for; retry shortly)";
        return AUTH_INVALID;
    case JWKS_UNKNOWN_KID:
        /* Named (printable ASCII, bounded above), so a client can tell a rotation from a
         * typo; the refresh it asked for runs in the background. */
        snprintf(why_buf, sizeof why_buf,
                 "the token's kid \"%s\" is not a key of the identity provider's JWK set "
                 "held now (a refresh has been asked for: after a key rotation, retry shortly)",
                 kid);
        *why = why_buf;
        return AUTH_INVALID;
    }
    if (strcmp(halg, jwt_alg_str(k->alg)) != 0) {
        jwk_set_release(*set);
        *set = NULL;
        *why = "the token algorithm is not the one its key is for";
        return AUTH_INVALID;
    }
    *jk = k;
    return AUTH_OK;
}

/* The token of "Bearer <token>": *token and *tlen, or AUTH_MISSING / AUTH_INVALID. */
static enum auth_result bearer_token(const char *authorization, const char **token, size_t *tlen,
                                     const char **why)
{
    if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0) {
        *why = "an Authorization: Bearer token is required";
        return AUTH_MISSING;
    }
    const char *t = authorization + 7;
    while (*t == ' ')
        t++;
    *token = t;
    *tlen = strlen(t);
    if (*tlen == 0) {
        *why = "an Authorization: Bearer token is required";
        return AUTH_MISSING;
    }
    if (*tlen > AUTH_MAX_TOKEN) {
        *why = "the token is too long";
        return AUTH_INVALID;
    }
    return AUTH_OK;
}

/* A token verified before: 1 with its answer in *res (and *p on AUTH_OK), or 0 when it is
 * to be verified (not cached; or OIDC, verified with an earlier key set: its key may be
 * gone). */
static int cached_answer(const struct api_auth *a, const unsigned char digest[32], int64_t now,
                         struct api_principal *p, enum auth_result *res, const char **why)
{
    struct auth_cache_entry ce;
    if (!cache_get(a->cache, digest, &ce))
        return 0;
    if (a->jwks != NULL && ce.gen != jwks_generation(a->jwks)) {
        auth_principal_clear(&ce.principal);
        return 0;
    }
    if (ce.exp + AUTH_LEEWAY_S < now) {
        auth_principal_clear(&ce.principal);
        *why = "the token has expired";
        *res = AUTH_EXPIRED;
    } else if (ce.nbf - AUTH_LEEWAY_S > now) {
        auth_principal_clear(&ce.principal);
        *why = "the token is not valid yet (nbf)";
        *res = AUTH_INVALID;
    } else {
        *p = ce.principal;
        *res = AUTH_OK;
    }
    return 1;
}

enum auth_result auth_verify(const struct api_auth *a, const char *authorization, int64_t now,
                             struct api_principal *p, const char **why)
{
    *why = "";
    p->scope = NULL;
    const char *token = NULL;
    size_t tlen = 0;
    enum auth_result res = bearer_token(authorization, &token, &tlen, why);
    if (res != AUTH_OK)
        return res;
    unsigned char digest[32];
    util_sha256(token, tlen, digest);
    if (cached_answer(a, digest, now, p, &res, why))
        return res;
    struct auth_cache_entry ce;
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (dot1 == NULL || dot2 == NULL || strchr(dot2 + 1, '.') != NULL || dot2[1] == '\0') {
        *why = "the token is not a signed JWT (header.payload.signature)";
        return AUTH_INVALID;
    }

    /* 1. Pin the algorithm (and pick the key) before libjwt chooses one from the header. */
    json_t *hdr = decode_segment(token, (size_t)(dot1 - token));
    if (hdr == NULL) {
        *why = "the token header is not valid base64url JSON";
        return AUTH_INVALID;
    }
    const unsigned char *key = NULL;
    size_t keylen = 0;
    jwt_alg_t alg = JWT_ALG_NONE;
    struct jwk_set *set = NULL;
    const struct jwk_key *jk = NULL;
    res = pick_key(a, hdr, &key, &keylen, &alg, &set, &jk, why);
    json_decref(hdr);
    if (res != AUTH_OK)
        return res;
    uint64_t gen = set ? set->gen : 0;

    /* 2. Verify the signature with that key: libjwt for the configured key, OpenSSL with
     *    the key's pinned algorithm for a JWK (see common/jwk.h). */
    int ok;
    if (jk != NULL) {
        ok = jwk_verify_compact(jk, token, (size_t)(dot2 - token));
    } else {
        jwt_t *jwt = NULL;
        char *tok = strndup(token, tlen);
        int rc = tok ? jwt_decode(&jwt, tok, key, (int)keylen) : ENOMEM;
        free(tok);
        ok = rc == 0 && jwt != NULL && jwt_get_alg(jwt) == alg;
        jwt_free(jwt);
    }
    jwk_set_release(set);
    if (!ok) {
        *why = "the token signature is not valid";
        return AUTH_INVALID;
    }

    /* 3. Claims, parsed strictly from the (now authenticated) payload. */
    json_t *claims = decode_segment(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (claims == NULL) {
        *why = "the token payload is not a JSON object";
        return AUTH_INVALID;
    }
    res = check_time_iss_aud(a, claims, now, why);
    if (res == AUTH_OK)
        res = check_identity(a, claims, p, why);
    if (res == AUTH_OK && (res = check_lifetime(a, claims, p, now, why)) != AUTH_OK)
        auth_principal_clear(p);
    if (res == AUTH_OK) {
        memset(&ce, 0, sizeof ce);
        memcpy(ce.digest, digest, sizeof digest);
        ce.used = 1;
        ce.gen = gen;
        ce.exp = (int64_t)json_integer_value(json_object_get(claims, "exp"));
        json_t *nbf = json_object_get(claims, "nbf");
        ce.nbf = nbf ? (int64_t)json_integer_value(nbf) : INT64_MIN / 2;
        ce.principal = *p;
        cache_put(a->cache, &ce);
    }
    json_decref(claims);
    return res;
}
