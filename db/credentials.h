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
    const char *project_id;
    /* The binding: JSON arrays of strings (validated), or NULL for any user / address. */
    const char *allowed_users, *allowed_cidrs;
};
/* DB_HARD_ERROR with a unique violation when the name is taken in the project. *doc gets
 * the Credential document (caller frees). */
enum db_status db_credential_insert(struct db_conn *c, const struct db_credential_new *in,
                                    char **doc);
/* The Credential document when its project lies in scope (a uuid[] literal; NULL: every
 * project). */
enum db_status db_credential_get(struct db_conn *c, const char *id, const char *scope, char **doc);
/* Deletes it when its project lies in scope; project_id gets the project it had.
 * DB_NO_RESULTS: none in scope. DB_HARD_ERROR with a foreign-key violation (23503) while a
 * host references it. */
enum db_status db_credential_delete(struct db_conn *c, const char *id, const char *scope,
                                    char project_id[37]);

/* A change of a credential's binding: each list (a JSON array of strings, or NULL for
 * any) is written when its set_ flag is true, kept otherwise. */
struct db_credential_bind {
    const char *allowed_users, *allowed_cidrs;
    int set_users, set_cidrs;
};
/* What the change did (members malloc'd; db_credential_change_free): the credential's
 * project, the binding before and after ({"allowed_users": …, "allowed_cidrs": …} JSON
 * texts, for the audit row) and the new Credential document. */
struct db_credential_change {
    char project_id[37];
    char *before, *after, *doc;
};
/* Locks the credential (when its project lies in scope) and changes its binding.
 * DB_NO_RESULTS: none in scope (nothing written). */
enum db_status db_credential_bind(struct db_conn *c, const char *id, const char *scope,
                                  const struct db_credential_bind *b,
                                  struct db_credential_change *out);
void db_credential_change_free(struct db_credential_change *ch);

/* The binding of credential id, for the check at host registration and move (a host may
 * use only a credential of its own pool's project, with a login user and an address the
 * credential allows): project_id gets the credential's project; *users the login names
 * it allows, comma-separated ("ubuntu,root"), or NULL for any user; *cidrs the CIDRs a
 * host address must lie in, comma-separated as net_cidr_match (common/netpolicy.h) reads
 * them, or NULL for any address (the global allow list applies either way). The caller
 * frees *users and *cidrs. Unscoped: the caller has already read the host's pool in its
 * own scope. DB_NO_RESULTS: no such credential (then project_id is "" and both NULL). */
enum db_status db_credential_binding(struct db_conn *c, const char *id, char project_id[37],
                                     char **users, char **cidrs);

struct db_credential_filter {
    const char *name_prefix, *after_seq;
    long limit;
    const char *scope, *project_id; /* the caller's read scope; the ?project= filter (or NULL) */
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
