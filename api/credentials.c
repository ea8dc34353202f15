/* credentials.c — SSH credentials. The private key is parsed (common/sshkey.c),
 * sealed with AES-256-GCM under the process key (common/crypt.c) with the new row's id
 * as AAD, and only the ciphertext is stored. No reply, problem or log line carries the
 * key: problems name the field and say why, never quote the value. A credential belongs
 * to a project and is bound: the login users (allowed_users) and the addresses
 * (allowed_cidrs) a host may use it with; PATCH changes the binding, audited with its
 * before and after. */
#include "api/credentials.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hosts.h"
#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "common/netpolicy.h"
#include "common/sshkey.h"
#include "db/credentials.h"
#include "service/audit.h"

struct credential_in {
    const char *name;
    const json_t *private_key; /* a string */
    const json_t *allowed_users, *allowed_cidrs;
};

/* One CIDR (or a bare address) as the address policy reads it (net_cidr_match, asked on a
 * probe address as the configuration's lists are). */
static int valid_cidr(const char *s)
{
    return strcspn(s, ", \t") == strlen(s) && net_cidr_match("127.0.0.1", s) >= 0;
}

static const struct spec_field user_item[] = {
    {"", SPEC_STRING, 0, 1, 32, api_valid_login_user,
     "a login name like ubuntu (a-z, 0-9, _ and -)", NULL, NULL, SPEC_NONE},
};
static const struct spec_field cidr_item[] = {
    {"", SPEC_STRING, 0, 1, 49, valid_cidr, "a CIDR like 10.0.0.0/8 or fd00::/8", NULL, NULL,
     SPEC_NONE},
};
#define BINDING_FIELDS                                                                  \
    {"allowed_users",                                                                   \
     SPEC_ARRAY,                                                                        \
     SPEC_NULLABLE,                                                                     \
     1,                                                                                 \
     64,                                                                                \
     NULL,                                                                              \
     NULL,                                                                              \
     NULL,                                                                              \
     user_item,                                                                         \
     SPEC_TO(struct credential_in, allowed_users)},                                     \
    {                                                                                   \
        "allowed_cidrs", SPEC_ARRAY, SPEC_NULLABLE, 1, 64, NULL, NULL, NULL, cidr_item, \
            SPEC_TO(struct credential_in, allowed_cidrs)                                \
    }

/* private_key is only typed here (its real text has newlines, which the generic string
 * check refuses): check_body checks its length, then sshkey_parse its content. */
static const struct spec_field credential_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL,
     SPEC_TO(struct credential_in, name)},
    {"private_key", SPEC_STRING, SPEC_REQUIRED | SPEC_RAW, 0, 0, NULL, NULL, NULL, NULL,
     SPEC_TO(struct credential_in, private_key)},
    BINDING_FIELDS,
    SPEC_END,
};
static const struct spec_field binding_spec[] = {
    BINDING_FIELDS,
    SPEC_END,
};

/* A list of the binding as stored: its JSON text (caller frees), or NULL for any (absent or
 * null). *oom is set when the text cannot be made. */
static char *binding_text(const json_t *list, int *oom)
{
    if (list == NULL || json_is_null(list))
        return NULL;
    char *t = json_dumps(list, JSON_COMPACT);
    if (t == NULL)
        *oom = 1;
    return t;
}

/* Overwrites the request's copies of the key: the raw body and the parsed string. With
 * key NULL (a body refused before the key was read) every string of the body is. */
static void scrub_request(struct api_req *r, const json_t *key)
{
    if (r->body != NULL)
        OPENSSL_cleanse(r->body, r->body_len);
    if (key != NULL) {
        OPENSSL_cleanse((char *)json_string_value(key), json_string_length(key));
        return;
    }
    const char *member;
    json_t *v;
    json_object_foreach(r->json, member, v)
    {
        if (json_is_string(v))
            OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
    }
}

/* Validates the body into *in. Returns 0, or -1 after replying 400. */
static int check_body(struct api_req *r, struct credential_in *in)
{
    if (api_spec_parse(r, r->json, credential_spec, in) != 0)
        return -1;
    size_t len = json_string_length(in->private_key);
    const char *text = json_string_value(in->private_key);
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
    const struct api_violation *violation;
};

static const struct api_violation duplicate_name = {
    API_ERR_ALREADY_EXISTS, "name", "a credential with this name already exists in the project"};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    enum db_status s = db_credential_insert(c, &a->in, &a->doc);
    a->violation = api_violation_of(c, s, &duplicate_name, NULL);
    if (s < 0)
        return s;
    return api_audit(c, a->r, "credential.create", "credential", a->in.id, MHD_HTTP_CREATED);
}

enum MHD_Result api_credentials_create(struct api_req *r)
{
    struct credential_in in = {NULL, NULL, NULL, NULL};
    enum MHD_Result ret;
    struct api_sealed sealed = {0};
    char project_id[37];
    char *users = NULL, *cidrs = NULL;
    int oom = 0;
    if (api_create_project(r, api_route_roles(r), project_id, NULL) != 0 ||
        check_body(r, &in) != 0) {
        scrub_request(r, NULL);
        return MHD_YES;
    }
    const json_t *key = in.private_key;
    users = binding_text(in.allowed_users, &oom);
    cidrs = binding_text(in.allowed_cidrs, &oom);
    if (oom) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto cleanup;
    }
    struct sshkey_info info;
    char detail[256];
    enum sshkey_err ke =
        sshkey_parse(json_string_value(key), json_string_length(key), &info, detail, sizeof detail);
    if (ke != SSHKEY_OK) {
        ret =
            api_reply_problem(r, ke == SSHKEY_WEAK ? API_ERR_WEAK_KEY : API_ERR_INVALID_PRIVATE_KEY,
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
    if (api_seal_new(r, "credential create", "the key",
                     (const unsigned char *)json_string_value(key), json_string_length(key),
                     &sealed, &ret) != 0)
        goto cleanup;
    scrub_request(r, key); /* from here on only the ciphertext exists */
    const char *id = sealed.id;
    struct create_arg a = {r,
                           {id, in.name, info.type, info.fingerprint, r->principal.sub, sealed.kid,
                            sealed.nonce, sealed.ct, sealed.ctlen, project_id, users, cidrs},
                           NULL,
                           NULL};
    enum db_status s = api_run_tx_doc(create_fn, &a, &a.doc);
    if (s < 0) {
        ret = api_reply_write_error(r, a.violation, s);
        goto cleanup;
    }
    char location[96];
    snprintf(location, sizeof location, "/v1/credentials/%s", id);
    ret = api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
cleanup:
    scrub_request(r, key);
    free(sealed.ct);
    free(users);
    free(cidrs);
    return ret;
}

/* Credentials are read by admins only (the route's role): a project where the caller holds
 * another role does not show its credentials, so the read is scoped by the route's roles
 * (api_scope_route), not by what the caller may read elsewhere. */
struct get_arg {
    const char *id, *scope;
    char *doc;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return db_credential_get(c, a->id, a->scope, &a->doc);
}

enum MHD_Result api_credentials_get(struct api_req *r)
{
    struct get_arg a = {api_path_id(r, "credential"), api_scope_route(r), NULL};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(get_fn, &a);
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no credential has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

static const struct list_filter credential_filters[] = {
    {"name_prefix", api_valid_name_prefix, "1-128 characters"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_credential_filter f = {q->values[0], q->after, q->limit + 1, q->scope, q->values[1]};
    return db_credential_list(c, &f, page);
}

static const struct list_def credential_list = {
    "credential", credential_filters, 2, api_valid_seq, NULL, NULL, list_page};

enum MHD_Result api_credentials_list(struct api_req *r)
{
    return api_list_serve(r, &credential_list);
}

static const struct api_delete_in_def credential_delete = {
    "credential", "credential.delete", db_credential_delete, API_ERR_CREDENTIAL_IN_USE,
    "a host uses this credential; delete the host or give it another credential first"};

enum MHD_Result api_credentials_delete(struct api_req *r)
{
    const char *id = api_path_id(r, "credential");
    return id ? api_delete_resource_in(r, id, &credential_delete) : MHD_YES;
}

/* ---- the binding ---- */

struct bind_arg {
    struct api_req *r;
    const char *id, *scope;
    struct db_credential_bind in;
    struct db_credential_change ch;
};

static enum db_status bind_fn(struct db_conn *c, void *arg)
{
    struct bind_arg *a = arg;
    db_credential_change_free(&a->ch); /* a retried transaction starts over */
    enum db_status s = db_credential_bind(c, a->id, a->scope, &a->in, &a->ch);
    if (s <= 0)
        return s;
    struct actor who;
    api_actor(a->r, &who);
    return svc_audit_change(c, &who, "credential.bind", "credential", a->id, a->ch.project_id,
                            MHD_HTTP_OK, a->ch.before, a->ch.after);
}

enum MHD_Result api_credentials_patch(struct api_req *r)
{
    struct credential_in in = {NULL, NULL, NULL, NULL};
    struct bind_arg a = {.r = r, .id = api_path_id(r, "credential")};
    if (a.id == NULL || api_spec_parse(r, r->json, binding_spec, &in) != 0)
        return MHD_YES;
    const json_t *users = json_object_get(r->json, "allowed_users");
    const json_t *cidrs = json_object_get(r->json, "allowed_cidrs");
    if (users == NULL && cidrs == NULL)
        return api_reply_problem(r, API_ERR_MISSING_FIELD, "allowed_users",
                                 "give allowed_users, allowed_cidrs or both (null: any)");
    int oom = 0;
    char *u = binding_text(users, &oom), *cl = binding_text(cidrs, &oom);
    a.in = (struct db_credential_bind){u, cl, users != NULL, cidrs != NULL};
    a.scope = api_scope_route(r);
    enum db_status s = oom ? DB_HARD_ERROR : db_run_tx(bind_fn, &a);
    free(u);
    free(cl);
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (s == DB_NO_RESULTS)
        ret = api_scope_refuse(r, "credential", a.id, "credential");
    else {
        ret = api_reply_text(r, MHD_HTTP_OK, a.ch.doc, NULL);
        a.ch.doc = NULL; /* sent */
    }
    db_credential_change_free(&a.ch);
    return ret;
}
