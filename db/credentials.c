/* credentials.c — credentials access. bytea values travel as hex text ("\x…"). */
#include "db/credentials.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/sealed.h"

/* {"id":…,"name":…,"key_type":…,"fingerprint":…,"created_at":…,"created_by":…} */
// clang-format off
#define CREDENTIAL_DOC                                                             \
    "'{\"id\":\"' || id || '\",\"name\":' || to_json(name)::text ||"               \
    " ',\"key_type\":\"' || key_type || '\",\"fingerprint\":\"' || fingerprint ||" \
    " '\",\"created_at\":\"' || " DB_TS("created_at") " ||"                        \
    " '\",\"created_by\":' || to_json(created_by)::text || '}'"
// clang-format on

const struct db_stmt db_credential_stmts[] = {
    {"credential_insert",
     "INSERT INTO credentials (id, name, key_type, fingerprint, kid, nonce, ciphertext,"
     " created_by) VALUES ($1::uuid, $2, $3, $4, $5, $6::bytea, $7::bytea, $8)"
     " RETURNING " CREDENTIAL_DOC " AS doc"},
    {"credential_get", "SELECT " CREDENTIAL_DOC " AS doc FROM credentials WHERE id = $1::uuid"},
    {"credential_delete", "DELETE FROM credentials WHERE id = $1::uuid"},
    {"credential_list", "SELECT " CREDENTIAL_DOC " AS doc, seq::text AS key FROM credentials"
                        " WHERE ($1::text IS NULL OR starts_with(name, $1))"
                        "   AND seq > coalesce($2::bigint, 0)"
                        " ORDER BY seq LIMIT $3::int"},
    {"credential_secret",
     "SELECT kid, encode(nonce, 'hex') AS nonce, encode(ciphertext, 'hex') AS ciphertext,"
     " id::text AS id"
     " FROM credentials WHERE id = $1::uuid"},
};
const size_t db_credential_nstmts = sizeof db_credential_stmts / sizeof db_credential_stmts[0];

enum db_status db_credential_insert(struct db_conn *c, const struct db_credential_new *in,
                                    char **doc)
{
    *doc = NULL;
    char *nonce = db_bytea_hex(in->nonce, CRYPT_NONCE_LEN);
    char *ct = db_bytea_hex(in->ciphertext, in->ciphertext_len);
    const char *p[8] = {in->id,  in->name, in->key_type, in->fingerprint,
                        in->kid, nonce,    ct,           in->created_by};
    enum db_status s = nonce && ct ? db_exec_doc(c, "credential_insert", 8, p, doc) : DB_HARD_ERROR;
    free(nonce);
    free(ct);
    return s;
}

enum db_status db_credential_get(struct db_conn *c, const char *id, char **doc)
{
    const char *p[1] = {id};
    return db_exec_doc(c, "credential_get", 1, p, doc);
}

enum db_status db_credential_delete(struct db_conn *c, const char *id)
{
    const char *p[1] = {id};
    return db_exec_noresult(c, "credential_delete", 1, p);
}

enum db_status db_credential_list(struct db_conn *c, const struct db_credential_filter *f,
                                  struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[3] = {f->name_prefix, f->after_seq, limit};
    return db_exec_page(c, "credential_list", 3, p, page);
}

enum db_status db_credential_load(struct db_conn *c, const char *id, struct crypt_secret *out,
                                  int *decrypt_failed, char *err, size_t errlen)
{
    out->data = NULL;
    out->len = 0;
    *decrypt_failed = 0;
    err[0] = '\0';
    const char *p[1] = {id};
    PGresult *r;
    enum db_status s = db_exec(c, "credential_secret", 1, p, &r);
    if (s < 0)
        return s;
    if (s == DB_NO_RESULTS) {
        PQclear(r);
        snprintf(err, errlen, "credential %s does not exist", id);
        return DB_NO_RESULTS;
    }
    /* Every column is NOT NULL (the nonce and ciphertext as hex). */
    const char *kid = db_str(r, 0, "kid");
    enum db_sealed o = db_sealed_open(kid, db_str(r, 0, "nonce"), db_str(r, 0, "ciphertext"),
                                      db_str(r, 0, "id"), out);
    *decrypt_failed = o != DB_SEALED_OK;
    switch (o) {
    case DB_SEALED_OK: break;
    case DB_SEALED_NO_KEY:
        snprintf(err, errlen, "credential %s cannot be decrypted: no master key is loaded", id);
        break;
    case DB_SEALED_OTHER_KEY:
        snprintf(err, errlen,
                 "credential %s was sealed under key id %.16s, but the loaded master key has id "
                 "%s (was GPUFLEET_MASTER_KEY_FILE changed?)",
                 id, kid, crypt_master()->kid);
        break;
    case DB_SEALED_MALFORMED:
        snprintf(err, errlen, "credential %s cannot be decrypted: the stored row is malformed", id);
        break;
    case DB_SEALED_FORGED:
        snprintf(err, errlen,
                 "credential %s cannot be decrypted: authentication failed (wrong master key or "
                 "a tampered row)",
                 id);
        break;
    }
    PQclear(r);
    return o == DB_SEALED_OK ? DB_ONE_RESULT : DB_HARD_ERROR;
}
