/* sealed.h — secrets stored sealed in a row (AES-256-GCM under the master key, the row's
 * id as AAD; common/crypt.h): the bytea parameters that store one, and the opening of one
 * read back as hex (encode(x, 'hex')). For the db/ files that keep such secrets
 * (credentials, webhooks); no SQL here. */
#ifndef GPUFLEET_DB_SEALED_H
#define GPUFLEET_DB_SEALED_H

#include <stddef.h>

#include "common/crypt.h"

/* The bytea text form of b[n] ("\x" + lowercase hex), for a parameter. Caller frees; NULL
 * when out of memory. */
char *db_bytea_hex(const unsigned char *b, size_t n);

enum db_sealed {
    DB_SEALED_OK = 0,
    DB_SEALED_NO_KEY,    /* no master key is loaded */
    DB_SEALED_OTHER_KEY, /* sealed under another key id than the loaded master key's */
    DB_SEALED_MALFORMED, /* the stored nonce or ciphertext is not what was written */
    DB_SEALED_FORGED,    /* authentication failed: wrong master key or a tampered row */
};
/* Opens the secret sealed under key id kid, with nonce and ciphertext as lowercase hex and
 * aad the row's id, into *out (caller frees with crypt_secret_free; empty unless
 * DB_SEALED_OK). */
enum db_sealed db_sealed_open(const char *kid, const char *nonce_hex, const char *ct_hex,
                              const char *aad, struct crypt_secret *out);

#endif
