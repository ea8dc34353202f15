/* credentials.c — credentials access. bytea values travel as hex text ("\x…"). */
#include "db/credentials.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

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

/* "\x" + hex; caller frees. */
static char *bytea_hex(const unsigned char *b, size_t n)
{
    char *s = malloc(2 * n + 3);
    if (s == NULL)
        return NULL;
    s[0] = '\\';
    s[1] = 'x';
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 + 2 * i, 3, "%02x", b[i]);
    return s;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes lowercase hex into a malloc'd buffer. Returns 0, or -1. */
static int unhex(const char *s, unsigned char **out, size_t *len)
{
    size_t n = strlen(s);
    *out = NULL;
    *len = 0;
    if (n % 2 != 0)
        return -1;
    unsigned char *b = malloc(n / 2 + 1);
    if (b == NULL)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return -1;
        }
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    *out = b;
    *len = n / 2;
    return 0;
}

enum db_status db_credential_insert(struct db_conn *c, const struct db_credential_new *in,
                                    char **doc)
{
    *doc = NULL;
    char *nonce = bytea_hex(in->nonce, CRYPT_NONCE_LEN);
    char *ct = bytea_hex(in->ciphertext, in->ciphertext_len);
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
    const struct crypt_key *k = crypt_master();
    /* Every column is NOT NULL (the nonce and ciphertext as hex). */
    const char *kid = db_str(r, 0, "kid"), *row_id = db_str(r, 0, "id");
    unsigned char *nonce = NULL, *ct = NULL;
    size_t nlen = 0, ctlen = 0;
    s = DB_HARD_ERROR;
    *decrypt_failed = 1;
    if (k == NULL) {
        snprintf(err, errlen, "credential %s cannot be decrypted: no master key is loaded", id);
    } else if (strcmp(kid, k->kid) != 0) {
        snprintf(err, errlen,
                 "credential %s was sealed under key id %.16s, but the loaded master key has id "
                 "%s (was GPUFLEET_MASTER_KEY_FILE changed?)",
                 id, kid, k->kid);
    } else if (unhex(db_str(r, 0, "nonce"), &nonce, &nlen) != 0 || nlen != CRYPT_NONCE_LEN ||
               unhex(db_str(r, 0, "ciphertext"), &ct, &ctlen) != 0) {
        snprintf(err, errlen, "credential %s cannot be decrypted: the stored row is malformed", id);
    } else if (crypt_open(k, nonce, ct, ctlen, (const unsigned char *)row_id, strlen(row_id),
                          out) != 0) {
        snprintf(err, errlen,
                 "credential %s cannot be decrypted: authentication failed (wrong master key or "
                 "a tampered row)",
                 id);
    } else {
        *decrypt_failed = 0;
        s = DB_ONE_RESULT;
    }
    free(nonce);
    if (ct != NULL) {
        OPENSSL_cleanse(ct, ctlen);
        free(ct);
    }
    PQclear(r);
    return s;
}
