/* credentials.h — SSH credentials. The private key is stored only as AES-256-GCM
 * ciphertext (common/crypt.h); reads render documents without it. */
#ifndef GPUFLEET_DB_CREDENTIALS_H
#define GPUFLEET_DB_CREDENTIALS_H

#include <stddef.h>

#include "common/crypt.h"
#include "db/db.h"

struct db_credential_new {
    const char *id; /* chosen by the caller: it is the AAD of the ciphertext */
    const char *name, *key_type, *fingerprint, *created_by;
    const char *kid;
    const unsigned char *nonce; /* CRYPT_NONCE_LEN bytes */
    const unsigned char *ciphertext;
    size_t ciphertext_len;
};
/* DB_HARD_ERROR with a unique violation when the name is taken. *doc gets the
 * Credential document (caller frees). */
enum db_status db_credential_insert(struct db_conn *c, const struct db_credential_new *in,
                                    char **doc);
enum db_status db_credential_get(struct db_conn *c, const char *id, char **doc);
/* DB_HARD_ERROR with a foreign-key violation (23503) while a host references it. */
enum db_status db_credential_delete(struct db_conn *c, const char *id);

struct db_credential_filter {
    const char *name_prefix, *after_seq;
    long limit;
};
enum db_status db_credential_list(struct db_conn *c, const struct db_credential_filter *f,
                                  struct db_page *page);

/* For the provisioner: fetches credential id and decrypts its private key (the OpenSSH
 * text) with the process key (crypt_master()) into *out, which the caller frees with
 * crypt_secret_free as soon as the key is handed to libssh2. Returns DB_ONE_RESULT,
 * DB_NO_RESULTS (no such credential), a negative database status, or DB_HARD_ERROR with
 * *decrypt_failed = 1 and a reason in err when the row cannot be decrypted (no key
 * loaded, sealed under another master key, tampered row). Never logs key material. */
enum db_status db_credential_load(struct db_conn *c, const char *id, struct crypt_secret *out,
                                  int *decrypt_failed, char *err, size_t errlen);

#endif
