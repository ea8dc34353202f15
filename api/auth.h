/* auth.h — Bearer JWT verification with a pinned algorithm (HS256 or ES256).
 *
 * libjwt 1.10 takes the algorithm from the token header and accepts "none" when the key
 * is NULL. So the header is decoded and its "alg" compared with the configured one
 * before libjwt sees the token, jwt_get_alg() is compared again after verification, and
 * exp/nbf/iat/iss/aud are checked here (60 s leeway). */
#ifndef GPUFLEET_AUTH_H
#define GPUFLEET_AUTH_H

#include <jwt.h>
#include <stddef.h>
#include <stdint.h>

#include "api/http.h"

#define AUTH_LEEWAY_S  60
#define AUTH_MAX_TOKEN 8192

struct auth_cache;

struct api_auth {
    jwt_alg_t alg;            /* JWT_ALG_HS256 or JWT_ALG_ES256 */
    struct auth_cache *cache; /* verified tokens by SHA-256; see auth.c */
    unsigned char *key;       /* HMAC secret, or PEM public key (NUL-terminated) */
    size_t keylen;
    char *issuer;
    char *audience;
};

enum auth_result {
    AUTH_OK = 0,
    AUTH_MISSING, /* no Authorization header, or not Bearer */
    AUTH_INVALID, /* malformed, bad signature, wrong alg/iss/aud, missing claims, nbf */
    AUTH_EXPIRED, /* exp (plus leeway) is in the past */
};

/* Loads the key selected by the configuration. Returns 0, or -1 with a reason. */
int auth_init(struct api_auth *a, const char *secret_file, const char *public_key_file,
              const char *issuer, const char *audience, char *err, size_t errlen);
/* For tests: an HS256 verifier over raw secret bytes. */
int auth_init_hs256(struct api_auth *a, const unsigned char *secret, size_t len, const char *issuer,
                    const char *audience);
void auth_free(struct api_auth *a);

/* Verifies "Bearer <jwt>" at time now (seconds). On AUTH_OK fills *p. *why gets a short
 * static reason for logs and problem details (never the token). */
enum auth_result auth_verify(const struct api_auth *a, const char *authorization, int64_t now,
                             struct api_principal *p, const char **why);

/* "viewer" → ROLE_VIEWER, …; ROLE_NONE when unknown. */
enum api_role auth_role_parse(const char *s);
const char *auth_role_name(enum api_role r);

/* Mints a token (used by `gpufleetd token`). key is the HMAC secret (HS256) or a PEM
 * EC private key (ES256). Caller frees *out. Returns 0 on success. */
int auth_mint(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
              enum api_role role, long ttl_s, const char *issuer, const char *audience, int64_t now,
              char **out);

#endif
