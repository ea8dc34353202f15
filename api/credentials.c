/* credentials.c — SSH credentials. The private key is parsed (provisioner/sshkey.c),
 * sealed with AES-256-GCM under the process key (common/crypt.c) with the new row's id
 * as AAD, and only the ciphertext is stored. No reply, problem or log line carries the
 * key: problems name the field and say why, never quote the value. */
#include "api/credentials.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "common/crypt.h"
#include "common/log.h"
#include "common/util.h"
#include "db/credentials.h"
#include "provisioner/sshkey.h"

#define END {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL}

/* private_key is checked on a placeholder (its real text has newlines, which the
 * generic string check refuses) and then by sshkey_parse. */
static const struct spec_field credential_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL},
    {"private_key", SPEC_STRING, SPEC_REQUIRED, 1, 1, NULL, NULL, NULL, NULL},
    END,
};

static const char *credential_id(struct api_req *r)
{
    const char *id = api_param(r, 0);
    if (!api_valid_uuid(id)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no credential has this id");
        return NULL;
    }
    return id;
}

/* Overwrites the request's copies of the key (raw body and parsed string). */
static void scrub_request(struct api_req *r, const json_t *key)
{
    if (r->body != NULL)
        OPENSSL_cleanse(r->body, r->body_len);
    if (json_is_string(key))
        OPENSSL_cleanse((char *)json_string_value(key), json_string_length(key));
}

/* Validates the body. Returns 0, or -1 after replying 400. */
static int check_body(struct api_req *r, const json_t **key)
{
    *key = json_object_get(r->json, "private_key");
    json_t *copy = json_copy(r->json); /* shallow: members are shared, not duplicated */
    if (copy == NULL) {
        api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        return -1;
    }
    if (json_is_string(*key))
        json_object_set_new(copy, "private_key", json_string("-"));
    int rc = api_spec_check(r, copy, credential_spec);
    json_decref(copy);
    if (rc != 0)
        return -1;
    size_t len = json_string_length(*key);
    const char *text = json_string_value(*key);
    if (len > SSHKEY_MAX_TEXT) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "private_key",
                          "private_key is longer than %d bytes", SSHKEY_MAX_TEXT);
        return -1;
    }
    if (len == 0 || strlen(text) != len) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "private_key",
                          "private_key must be a non-empty string without NUL characters");
        return -1;
    }
    return 0;
}

struct create_arg {
    struct api_req *r;
    struct db_credential_new in;
    char *doc;
    int conflict;
};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    free(a->doc); /* a retried transaction starts over */
    a->doc = NULL;
    enum db_status s = db_credential_insert(c, &a->in, &a->doc);
    if (s == DB_HARD_ERROR && db_conn_unique_violation(c))
        a->conflict = 1;
    if (s < 0)
        return s;
    return api_audit(c, a->r, "credential.create", "credential", a->in.id, MHD_HTTP_CREATED);
}

enum MHD_Result api_credentials_create(struct api_req *r)
{
    const json_t *key;
    enum MHD_Result ret;
    unsigned char *ct = NULL;
    if (check_body(r, &key) != 0) {
        scrub_request(r, key);
        return MHD_YES;
    }
    struct sshkey_info info;
    char detail[256];
    enum sshkey_err ke =
        sshkey_parse(json_string_value(key), json_string_length(key), &info, detail, sizeof detail);
    if (ke != SSHKEY_OK) {
        ret = api_reply_problem(r, ke == SSHKEY_WEAK ? API_ERR_WEAK_KEY : API_ERR_INVALID_PRIVATE_KEY,
                                "private_key", "%s", detail);
        goto cleanup;
    }
    if (strcmp(info.type, "ssh-rsa") == 0) {
        /* libssh2 1.10 signs RSA with ssh-rsa (SHA-1), which OpenSSH 8.8 and later refuse:
         * the key would store fine and then fail every login. */
        ret = api_reply_problem(r, API_ERR_INVALID_PRIVATE_KEY, "private_key",
                                "RSA keys cannot log in with this build (libssh2 1.10 signs with "
                                "ssh-rsa/SHA-1, which current OpenSSH servers refuse); use an "
                                "ed25519 or ecdsa key");
        goto cleanup;
    }
    const struct crypt_key *mk = crypt_master();
    if (mk == NULL) {
        log_msg(LOG_ERROR, "credential create: no master key loaded");
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "the server has no master key");
        goto cleanup;
    }
    char id[UTIL_UUID_LEN + 1];
    util_uuid4(id);
    unsigned char nonce[CRYPT_NONCE_LEN];
    size_t ctlen;
    if (crypt_seal(mk, (const unsigned char *)json_string_value(key), json_string_length(key),
                   (const unsigned char *)id, strlen(id), nonce, &ct, &ctlen) != 0) {
        log_msg(LOG_ERROR, "credential create: encryption failed");
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "the key could not be sealed");
        goto cleanup;
    }
    scrub_request(r, key); /* from here on only the ciphertext exists */
    struct create_arg a = {r,
                           {id, json_string_value(json_object_get(r->json, "name")), info.type,
                            info.fingerprint, r->principal.sub, mk->kid, nonce, ct, ctlen},
                           NULL,
                           0};
    enum db_status s = db_run_tx(create_fn, &a);
    if (a.conflict || s < 0) {
        free(a.doc);
        ret = a.conflict ? api_reply_problem(r, API_ERR_ALREADY_EXISTS, "name",
                                             "a credential with this name already exists")
                         : api_reply_db(r, s);
        goto cleanup;
    }
    char location[96];
    snprintf(location, sizeof location, "/v1/credentials/%s", id);
    ret = api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
cleanup:
    scrub_request(r, key);
    free(ct);
    return ret;
}

struct read_arg {
    struct api_req *r;
    const char *id;
    char *doc;
    int in_use;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct read_arg *a = arg;
    return db_credential_get(c, a->id, &a->doc);
}

enum MHD_Result api_credentials_get(struct api_req *r)
{
    struct read_arg a = {r, credential_id(r), NULL, 0};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(get_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no credential has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

static int valid_prefix(const char *v) { return strlen(v) <= 128; }

static const struct list_filter credential_filters[] = {
    {"name_prefix", valid_prefix, "1-128 characters"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q,
                                struct db_page *page)
{
    struct db_credential_filter f = {q->values[0], q->after, q->limit + 1};
    return db_credential_list(c, &f, page);
}

static const struct list_def credential_list = {"credential", credential_filters, 1,
                                                api_valid_seq, NULL, NULL, list_page};

enum MHD_Result api_credentials_list(struct api_req *r)
{
    return api_list_serve(r, &credential_list);
}

static const struct api_delete_def credential_delete = {
    "credential", "credential.delete", db_credential_delete, API_ERR_CREDENTIAL_IN_USE,
    "a host uses this credential; delete the host or give it another credential first"};

enum MHD_Result api_credentials_delete(struct api_req *r)
{
    const char *id = credential_id(r);
    return id ? api_delete_resource(r, id, &credential_delete) : MHD_YES;
}
