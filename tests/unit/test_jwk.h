/* test_jwk.h — keys and JWKs made for the unit tests (test_jwk.c; test_oidc.c uses them
 * too). */
#ifndef GPUFLEET_TEST_JWK_H
#define GPUFLEET_TEST_JWK_H

#include <jansson.h>
#include <openssl/evp.h>

/* A fresh key pair: RSA of bits, or EC on curve ("P-256", "P-384"). Caller frees. */
EVP_PKEY *ut_rsa_new(int bits);
EVP_PKEY *ut_ec_new(const char *curve);
/* A JWK (public part) for pk, with the members of extra_json (may be NULL) merged in.
 * Caller decrefs. */
json_t *ut_jwk_of(EVP_PKEY *pk, const char *kid, const char *extra_json);
/* pk's public key as SubjectPublicKeyInfo PEM. Caller frees. */
char *ut_pem_of(EVP_PKEY *pk);
/* {"keys": keys} as compact JSON text (steals keys). Caller frees. */
char *ut_set_doc(json_t *keys);

#endif
