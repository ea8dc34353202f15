/* crypt.h — AES-256-GCM sealing of secrets at rest (SSH private keys), with the key
 * derived from GPUFLEET_MASTER_KEY_FILE by HKDF-SHA256. Key material is never logged. */
#ifndef GPUFLEET_CRYPT_H
#define GPUFLEET_CRYPT_H

#include <stddef.h>

#define CRYPT_KEY_LEN   32
#define CRYPT_NONCE_LEN 12
#define CRYPT_TAG_LEN   16
#define CRYPT_KID_HEX   16 /* kid: first 8 bytes of SHA-256(key), lowercase hex */

/* A derived data-encryption key and its id. */
struct crypt_key {
    unsigned char key[CRYPT_KEY_LEN];
    char kid[CRYPT_KID_HEX + 1];
};

/* Plaintext handed to a caller. data is NUL-terminated (len excludes the NUL); free with
 * crypt_secret_free, which cleanses it. */
struct crypt_secret {
    unsigned char *data;
    size_t len;
};
void crypt_secret_free(struct crypt_secret *s);

/* Derives the key from master key material: HKDF-SHA256 with salt
 * "gpufleet-master-key-v1" and info "credentials aes-256-gcm". Returns 0 on success. */
int crypt_key_derive(const unsigned char *ikm, size_t ikmlen, struct crypt_key *out);
/* Cleanses a key. */
void crypt_key_clear(struct crypt_key *k);

/* Process-wide key: read the master key file once at start. Returns 0, or -1 with a
 * one-line reason in err (never the file's content). */
int crypt_init_from_file(const char *path, char *err, size_t errlen);
void crypt_shutdown(void);
/* The loaded key, or NULL before crypt_init_from_file. Borrowed; valid until shutdown. */
const struct crypt_key *crypt_master(void);

/* Encrypts pt with a fresh random nonce. *ct receives ciphertext || 16-byte tag
 * (malloc'd, caller frees; *ctlen = ptlen + CRYPT_TAG_LEN). aad is authenticated, not
 * stored. Returns 0, or -1. */
int crypt_seal(const struct crypt_key *k, const unsigned char *pt, size_t ptlen,
               const unsigned char *aad, size_t aadlen, unsigned char nonce[CRYPT_NONCE_LEN],
               unsigned char **ct, size_t *ctlen);
/* Decrypts and authenticates ct (ciphertext || tag) into out (caller frees with
 * crypt_secret_free). Returns 0, or -1 when the tag does not verify (wrong key, wrong
 * aad, tampered bytes) or on a malformed input; out is then empty. */
int crypt_open(const struct crypt_key *k, const unsigned char nonce[CRYPT_NONCE_LEN],
               const unsigned char *ct, size_t ctlen, const unsigned char *aad, size_t aadlen,
               struct crypt_secret *out);

#endif
