/* auth.h — Bearer JWT verification with a pinned algorithm: HS256 or ES256 with a
 * configured key, or RS256/ES256 with the keys of an OpenID provider's JWK set (OIDC mode,
 * service/jwks.h and common/jwk.h), where each key pins its own algorithm.
 *
 * libjwt 1.10 takes the algorithm from the token header and accepts "none" when the key
 * is NULL. So the header is decoded and its "alg" compared with the configured (or the
 * key's) one before libjwt sees the token, jwt_get_alg() is compared again after
 * verification, and exp/nbf/iat/iss/aud are checked here (60 s leeway).
 *
 * Roles: the "role" claim (HS256/ES256), or the role claim through the role map (OIDC,
 * api/rolemap.h). A reporter may be scoped to pools and hosts: the "pools" and "hosts"
 * claims (arrays of names or ids), or the role map's scope in OIDC mode. */
#ifndef GPUFLEET_AUTH_H
#define GPUFLEET_AUTH_H

#include <jwt.h>
#include <stddef.h>
#include <stdint.h>

#include "api/http.h"

#define AUTH_LEEWAY_S  60
#define AUTH_MAX_TOKEN 8192

#define AUTH_MAX_SCOPE_ITEMS 256 /* members of a pools or hosts claim */

struct auth_cache;
struct auth_rolemap;
struct jwks;

struct api_auth {
    jwt_alg_t alg;            /* JWT_ALG_HS256 or JWT_ALG_ES256; JWT_ALG_NONE in OIDC mode */
    struct auth_cache *cache; /* verified tokens by SHA-256; see auth.c */
    unsigned char *key;       /* HMAC secret, or PEM public key (NUL-terminated) */
    size_t keylen;
    char *issuer;
    char *audience;
    /* OIDC mode (jwks != NULL): keys from the JWK set, roles through the role map. */
    struct jwks *jwks;            /* owned */
    struct auth_rolemap *rolemap; /* owned */
    char *role_claim;             /* e.g. "groups"; a dotted path when no such claim */
    char *principal_claim;        /* e.g. "sub" */
    /* gpufleetd's own tokens (not OIDC): the longest lifetime (exp - iat) accepted, by
     * role (GPUFLEET_TOKEN_MAX_TTL_SECONDS, _REPORTER_); 0: not checked. */
    long max_ttl_s, reporter_max_ttl_s;
};

enum auth_result {
    AUTH_OK = 0,
    AUTH_MISSING, /* no Authorization header, or not Bearer */
    AUTH_INVALID, /* malformed, bad signature, wrong alg/iss/aud, missing claims, nbf */
    AUTH_EXPIRED, /* exp (plus leeway) is in the past */
    AUTH_NO_ROLE, /* OIDC: a valid token whose role claim maps to no role (403) */
};

/* Loads the key selected by the configuration. Returns 0, or -1 with a reason. */
int auth_init(struct api_auth *a, const char *secret_file, const char *public_key_file,
              const char *issuer, const char *audience, char *err, size_t errlen);
/* For tests: an HS256 verifier over raw secret bytes. */
int auth_init_hs256(struct api_auth *a, const unsigned char *secret, size_t len, const char *issuer,
                    const char *audience);
/* OIDC mode. Takes ownership of jwks (loaded or not; see service/jwks.h). role_map is parsed
 * here (the configuration has validated it). Returns 0, or -1 with a reason. */
int auth_init_oidc(struct api_auth *a, struct jwks *jwks, const char *role_map,
                   const char *role_claim, const char *principal_claim, const char *issuer,
                   const char *audience, char *err, size_t errlen);
void auth_free(struct api_auth *a);
/* Frees what auth_verify put into p (its scope). */
void auth_principal_clear(struct api_principal *p);

/* Verifies "Bearer <jwt>" at time now (seconds). On AUTH_OK fills *p (overwritten: clear a
 * previous principal first); p->scope is then owned by the caller (auth_principal_clear).
 * *why gets a short reason for logs and problem details (never the token): static, or
 * per thread until its next call. */
enum auth_result auth_verify(const struct api_auth *a, const char *authorization, int64_t now,
                             struct api_principal *p, const char **why);

/* Mints a token (used by `gpufleetd token`). key is the HMAC secret (HS256) or a PEM
 * EC private key (ES256). Caller frees *out. Returns 0 on success. */
int auth_mint(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
              enum api_role role, long ttl_s, const char *issuer, const char *audience, int64_t now,
              char **out);
/* The same in a project (its name; NULL: a role without a project — a platform admin, or
 * the project named default for the other roles), with a reporter scope: pools and hosts
 * (names or ids; either may be empty, and a token with neither is unscoped). */
int auth_mint_scoped(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
                     enum api_role role, const char *project, long ttl_s, const char *issuer,
                     const char *audience, int64_t now, const char *const *pools, size_t npools,
                     const char *const *hosts, size_t nhosts, char **out);
/* The same with the jti given (a UUID the caller records: gpufleetd token). */
int auth_mint_jti(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
                  enum api_role role, const char *project, long ttl_s, const char *issuer,
                  const char *audience, int64_t now, const char *const *pools, size_t npools,
                  const char *const *hosts, size_t nhosts, const char *jti, char **out);
/* A project name as tokens carry it: 1-63 of [a-z0-9._-], starting with a letter or digit. */
int auth_project_name_ok(const char *s);
/* Validates one scope member (a pool or host name or id): 1-128 characters, no control
 * characters. */
int auth_scope_item_ok(const char *s);

#endif
