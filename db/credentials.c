/* credentials.c — credentials access. bytea values travel as hex text ("\x…"). */
#include "db/credentials.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"
#include "db/sealed.h"

/* {"id":…,"name":…,"project":{…},"key_type":…,"fingerprint":…,"allowed_users":[…]|null,
 *  "allowed_cidrs":[…]|null,"created_at":…,"created_by":…} */
// clang-format off
#define CREDENTIAL_DOC                                                             \
    "'{\"id\":\"' || id || '\",\"name\":' || to_json(name)::text ||"               \
    " ',\"project\":' || (" DB_PROJECT_JSON("project_id") ")::text ||"             \
    " ',\"key_type\":\"' || key_type || '\",\"fingerprint\":\"' || fingerprint ||" \
    " '\",\"allowed_users\":' || coalesce(to_json(allowed_users)::text, 'null') ||"  \
    " ',\"allowed_cidrs\":' || coalesce(to_json(allowed_cidrs)::text, 'null') ||"    \
    " ',\"created_at\":\"' || " DB_TS("created_at") " ||"                         \
    " '\",\"created_by\":' || to_json(created_by)::text || '}'"
/* The binding as audited: {"allowed_users": …, "allowed_cidrs": …}. */
#define BINDING_JSON                                                                 \
    "json_build_object('allowed_users', allowed_users, 'allowed_cidrs', allowed_cidrs)::text"
// clang-format on

/* A JSON array of strings (text) as text[]; NULL stays NULL. */
#define TEXT_ARRAY(p)                                                            \
    "(SELECT array_agg(v ORDER BY n) FROM json_array_elements_text(" p "::json)" \
    " WITH ORDINALITY AS a(v, n))"

const struct db_stmt db_credential_stmts[] = {
    {"credential_insert",
     "INSERT INTO credentials (id, name, key_type, fingerprint, kid, nonce, ciphertext,"
     " created_by, project_id, allowed_users, allowed_cidrs) VALUES ($1::uuid, $2, $3, $4, $5,"
     " $6::bytea, $7::bytea, $8, $9::uuid, " TEXT_ARRAY("$10") ", " TEXT_ARRAY(
         "$11") ")"
                " RETURNING " CREDENTIAL_DOC " AS doc"},
    {"credential_get", "SELECT " CREDENTIAL_DOC " AS doc FROM credentials WHERE id = $1::uuid"
                       " AND " DB_IN_SCOPE("project_id", "$2")},
    {"credential_delete", "DELETE FROM credentials WHERE id = $1::uuid"
                          " AND " DB_IN_SCOPE("project_id", "$2") " RETURNING project_id::text"},
    {"credential_list", "SELECT " CREDENTIAL_DOC " AS doc, seq::text AS key FROM credentials"
                        " WHERE ($1::text IS NULL OR starts_with(name, $1))"
                        "   AND " DB_IN_SCOPE("project_id", "$4") "   AND " DB_OF_PROJECT(
                            "project_id", "$5") "   AND seq > coalesce($2::bigint, 0)"
                                                " ORDER BY seq LIMIT $3::int"},
    {"credential_secret",
     "SELECT kid, encode(nonce, 'hex') AS nonce, encode(ciphertext, 'hex') AS ciphertext,"
     " id::text AS id"
     " FROM credentials WHERE id = $1::uuid"},
    /* $2/$3: the new lists (JSON arrays, NULL: any) when $5/$6 are true */
    {"credential_bind",
     "WITH old AS (SELECT id, project_id::text AS project_id, " BINDING_JSON " AS before"
     "   FROM credentials WHERE id = $1::uuid AND " DB_IN_SCOPE(
         "project_id", "$4") "   FOR UPDATE),"
                             " upd AS (UPDATE credentials c SET"
                             "   allowed_users = CASE WHEN $5::bool THEN " TEXT_ARRAY(
                                 "$2") " ELSE c.allowed_users END,"
                                       "   allowed_cidrs = CASE WHEN $6::bool THEN " TEXT_ARRAY(
                                           "$3") " ELSE c.allowed_cidrs END"
                                                 "   FROM old WHERE c.id = old.id RETURNING c.*)"
                                                 " SELECT old.project_id, old.before,"
                                                 "   (SELECT json_build_object('allowed_users', "
                                                 "u.allowed_users, 'allowed_cidrs',"
                                                 "     u.allowed_cidrs)::text FROM upd u) AS after,"
                                                 "   (SELECT " CREDENTIAL_DOC
                                                 " FROM upd) AS doc FROM old"},
    {"credential_binding",
     "SELECT project_id::text AS project_id, array_to_string(allowed_users, ',') AS users,"
     " array_to_string(allowed_cidrs, ',') AS cidrs FROM credentials WHERE id = $1::uuid"},
};
const size_t db_credential_nstmts = sizeof db_credential_stmts / sizeof db_credential_stmts[0];

enum db_status db_credential_insert(struct db_conn *c, const struct db_credential_new *in,
                                    char **doc)
{
    *doc = NULL;
    char *nonce = db_bytea_hex(in->nonce, CRYPT_NONCE_LEN);
    char *ct = db_bytea_hex(in->ciphertext, in->ciphertext_len);
    const char *p[11] = {
        in->id, in->name,       in->key_type,   in->fingerprint,   in->kid,          nonce,
        ct,     in->created_by, in->project_id, in->allowed_users, in->allowed_cidrs};
    enum db_status s =
        nonce && ct ? db_exec_doc(c, "credential_insert", 11, p, doc) : DB_HARD_ERROR;
    free(nonce);
    free(ct);
    return s;
}

enum db_status db_credential_get(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    const char *p[2] = {id, scope};
    return db_exec_doc(c, "credential_get", 2, p, doc);
}

enum db_status db_credential_delete(struct db_conn *c, const char *id, const char *scope,
                                    char project_id[37])
{
    const char *p[2] = {id, scope};
    return db_exec_returning_id(c, "credential_delete", 2, p, project_id);
}

enum db_status db_credential_bind(struct db_conn *c, const char *id, const char *scope,
                                  const struct db_credential_bind *b,
                                  struct db_credential_change *out)
{
    memset(out, 0, sizeof *out);
    const char *p[6] = {id,
                        b->allowed_users,
                        b->allowed_cidrs,
                        scope,
                        b->set_users ? "true" : "false",
                        b->set_cidrs ? "true" : "false"};
    PGresult *r;
    enum db_status s = db_exec(c, "credential_bind", 6, p, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        db_copy(r, 0, "project_id", out->project_id, sizeof out->project_id);
        out->before = db_dup(r, 0, "before", &oom);
        out->after = db_dup(r, 0, "after", &oom);
        out->doc = db_dup(r, 0, "doc", &oom);
        if (oom || out->doc == NULL) {
            db_credential_change_free(out);
            s = DB_HARD_ERROR;
        }
    }
    PQclear(r);
    return s;
}

void db_credential_change_free(struct db_credential_change *ch)
{
    free(ch->before);
    free(ch->after);
    free(ch->doc);
    ch->before = ch->after = ch->doc = NULL;
}

enum db_status db_credential_binding(struct db_conn *c, const char *id, char project_id[37],
                                     char **users, char **cidrs)
{
    const char *p[1] = {id};
    PGresult *r;
    project_id[0] = '\0';
    *users = *cidrs = NULL;
    enum db_status s = db_exec(c, "credential_binding", 1, p, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        db_copy(r, 0, "project_id", project_id, 37);
        *users = db_dup(r, 0, "users", &oom);
        *cidrs = db_dup(r, 0, "cidrs", &oom);
        if (oom) {
            free(*users);
            free(*cidrs);
            *users = *cidrs = NULL;
            project_id[0] = '\0';
            s = DB_HARD_ERROR;
        }
    }
    PQclear(r);
    return s;
}

enum db_status db_credential_list(struct db_conn *c, const struct db_credential_filter *f,
                                  struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[5] = {f->name_prefix, f->after_seq, limit, f->scope, f->project_id};
    return db_exec_page(c, "credential_list", 5, p, page);
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
