/* jwk.h — the pure part of OIDC signing keys (no I/O, no threads; thread-safe): one JWK
 * (RFC 7517) into an OpenSSL public key, a JWK set document into an immutable,
 * reference-counted key set, and JWS signature checks (RFC 7515) with such a key.
 * service/jwks.h fetches the documents, refreshes them and holds the current set.
 *
 * Each usable key carries the one algorithm it may verify, pinned from the JWK itself
 * (RSA → RS256, EC P-256 → ES256; a JWK "alg" must agree), never from a token header.
 * EdDSA (kty OKP) keys are skipped: libjwt 1.10 has no EdDSA.
 *
 * Signatures are checked here with OpenSSL (jwk_verify), not with libjwt: libjwt 1.10's
 * jwt_decode refuses every "typ" but "JWT", and OAuth access tokens are "at+jwt" (RFC
 * 9068). Verifying the JWS ourselves also means no library ever reads "alg" from the
 * header: the key's pinned algorithm is the only one tried. */
#ifndef GPUFLEET_JWK_H
#define GPUFLEET_JWK_H

#include <jansson.h>
#include <jwt.h>
#include <stddef.h>
#include <stdint.h>

#define JWK_MAX_KEYS 64
#define JWK_MAX_KID  128

struct evp_pkey_st;

struct jwk_key {
    char kid[JWK_MAX_KID + 1];
    jwt_alg_t alg;          /* JWT_ALG_RS256 or JWT_ALG_ES256 */
    struct evp_pkey_st *pk; /* the public key (owned; EVP_PKEY) */
    char *pem;              /* the same as SubjectPublicKeyInfo PEM, NUL-terminated (owned) */
    size_t pemlen;
};

/* An immutable set of keys. */
struct jwk_set {
    int refs;                 /* atomic */
    uint64_t gen;             /* set once by the holder that installs it (service/jwks.c) */
    unsigned char digest[32]; /* SHA-256 over the keys: an unchanged document is no change */
    size_t n;
    struct jwk_key keys[];
};

/* Converts one JWK into k. Returns 0 (usable), 1 (skipped: not a signing key this build
 * verifies — why says which), or -1 (malformed — why says how). k->kid is kept (when the
 * JWK has a valid one) whatever the result; call jwk_key_clear in every case. */
int jwk_key_from_json(const json_t *jwk, struct jwk_key *k, char *why, size_t whylen);
void jwk_key_clear(struct jwk_key *k);

/* Checks a JWS signature (the raw bytes of the third segment) over signing_input
 * ("header.payload") with k and k's algorithm: RSASSA-PKCS1-v1_5 SHA-256 for RS256, ECDSA
 * P-256 SHA-256 with a 64-byte R||S signature for ES256. Returns 1 when valid. */
int jwk_verify(const struct jwk_key *k, const char *signing_input, size_t len,
               const unsigned char *sig, size_t siglen);
/* The same for a compact JWS "header.payload.signature" (NUL-terminated), whose second '.'
 * is at jws[signing_len]: the signature after it is base64url-decoded first. */
int jwk_verify_compact(const struct jwk_key *k, const char *jws, size_t signing_len);

/* Called for each key of a document that is skipped (malformed = 0) or malformed (1):
 * kid is "" when the JWK has no valid one; why is the reason (no key material). */
typedef void jwk_note_fn(void *ud, const char *kid, const char *why, int malformed);

/* Parses a JWK set document ({"keys": [...]}, duplicates refused). Usable keys go into
 * *out (refs = 1, gen = 0); skipped and malformed keys are passed to note (when not NULL).
 * Fails when the document is not a JWK set, holds more than JWK_MAX_KEYS keys, repeats a
 * kid among its usable keys, or has no usable key at all. */
int jwk_set_parse(const char *doc, size_t len, jwk_note_fn *note, void *ud, struct jwk_set **out,
                  char *err, size_t errlen);
const struct jwk_key *jwk_set_find(const struct jwk_set *s, const char *kid);
/* Takes a reference (returns s). */
struct jwk_set *jwk_set_ref(struct jwk_set *s);
/* Drops a reference; the last one frees the set. NULL is ignored. */
void jwk_set_release(struct jwk_set *s);

#endif
