/* tokens.h — the tokens gpufleetd minted (by jti) and the revocation list
 * (migrations/0025_tokens.sql). */
#ifndef GPUFLEET_DB_TOKENS_H
#define GPUFLEET_DB_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "db/db.h"

/* Records a minted token: jti (a UUID), subject, role name, project (NULL: none) and its
 * lifetime in Unix seconds. */
enum db_status db_token_record(struct db_conn *c, const char *jti, const char *sub,
                               const char *role, const char *project, int64_t iat, int64_t exp);

/* Revokes one jti, or (jti NULL) every token of sub issued up to now. The entry lives
 * until the last token it can name has expired: a recorded token's exp (a jti), the
 * latest exp of the subject's recorded tokens, and at least min_keep_s from now (tokens
 * not recorded here: an identity provider's, or minted before 0025). Revoking again
 * refreshes the entry. Bumps the list's version. *doc: the entry as the API shows it
 * (caller frees). */
enum db_status db_token_revoke(struct db_conn *c, const char *jti, const char *sub,
                               const char *reason, const char *revoked_by, long min_keep_s,
                               char **doc);

/* The list's version (it moves with every revocation). */
enum db_status db_token_revocation_version(struct db_conn *c, int64_t *version);

/* One unexpired entry: a jti, or a subject with the time (Unix seconds) up to which its
 * tokens are revoked. */
struct db_token_revocation {
    char *jti; /* NULL for a subject's entry */
    char *sub; /* NULL for a jti's entry */
    int64_t issued_before;
    int64_t expires_at;
};
struct db_token_revocations {
    struct db_token_revocation *items;
    size_t n;
    int64_t version; /* read just before the entries */
};
enum db_status db_token_revocations_load(struct db_conn *c, struct db_token_revocations *out);
void db_token_revocations_free(struct db_token_revocations *l);

/* Deletes expired tokens and revocations; *deleted: how many rows. */
enum db_status db_tokens_prune(struct db_conn *c, long *deleted);

#endif
