/* webhooks.c — /v1/webhooks. A new webhook gets a random 32-byte HMAC key, sealed with
 * AES-256-GCM under the process key with the new row's id as AAD (as SSH credentials,
 * common/crypt.c); its text form (whsec_…) is in the 201 answer and nowhere else: not in
 * GET, not in a log line, not in the stored answer of an Idempotency-Key (a replayed
 * create answers the webhook without it). */
#include "api/webhooks.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "common/webhook.h"
#include "db/events.h"
#include "db/webhooks.h"
#include "service/audit.h"

static const char *allow_cidrs = "";

void api_webhooks_configure(const char *cidrs)
{
    allow_cidrs = cidrs ? cidrs : "";
}

struct webhook_in {
    const char *url, *description, *format;
    const json_t *event_types;
};

static const char *const formats[] = {"standard", "slack", NULL};

static const struct spec_field webhook_spec[] = {
    {"url", SPEC_STRING, SPEC_REQUIRED, 1, WH_URL_MAX, NULL, NULL, NULL, NULL,
     SPEC_TO(struct webhook_in, url)},
    {"event_types", SPEC_ENUM_ARRAY, SPEC_REQUIRED, 1, 64, NULL, NULL, db_event_types, NULL,
     SPEC_TO(struct webhook_in, event_types)},
    {"description", SPEC_STRING, 0, 0, 500, NULL, NULL, NULL, NULL,
     SPEC_TO(struct webhook_in, description)},
    {"format", SPEC_ENUM, 0, 0, 0, NULL, NULL, formats, NULL, SPEC_TO(struct webhook_in, format)},
    SPEC_END,
};

/* The event types as a text[] literal (the names are [a-z_.], checked by the spec). */
static char *types_literal(const json_t *types)
{
    struct sbuf b;
    sbuf_init(&b, 256);
    sbuf_adds(&b, "{");
    size_t i;
    const json_t *t;
    json_array_foreach(types, i, t)
    {
        if (i > 0)
            sbuf_adds(&b, ",");
        sbuf_adds(&b, json_string_value(t));
    }
    sbuf_adds(&b, "}");
    return sbuf_take(&b, NULL);
}

/* Audits a write refused by scope (docs/projects.md): webhook.denied with the status
 * answered, in the webhook's project when it exists (NULL: the project named). */
struct denied_arg {
    struct api_req *r;
    const char *id, *project;
    int status;
};

static enum db_status denied_fn(struct db_conn *c, void *arg)
{
    struct denied_arg *a = arg;
    return svc_audit_row(c, &a->r->actor, "webhook.denied", "webhook", a->id, a->status, NULL,
                         a->project, NULL, NULL);
}

static void audit_denied(struct api_req *r, const char *id, const char *project, int status)
{
    struct denied_arg a = {r, id, project && project[0] ? project : NULL, status};
    db_run_tx(denied_fn, &a); /* the refusal is answered whatever becomes of its row */
}

struct project_arg {
    const char *id;
    char *project;
};

static enum db_status project_fn(struct db_conn *c, void *arg)
{
    struct project_arg *a = arg;
    return db_webhook_project(c, a->id, a->project);
}

static enum db_status webhook_project_of(const char *id, char project[37])
{
    struct project_arg a = {id, project};
    return db_run(project_fn, &a);
}

/* An id outside the route's scope: 404 as for no webhook, audited when it exists (another
 * project's). */
static enum MHD_Result not_found(struct api_req *r, const char *id, int check)
{
    char project[37] = "";
    if (check && webhook_project_of(id, project) == DB_ONE_RESULT)
        audit_denied(r, id, project, MHD_HTTP_NOT_FOUND);
    return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no webhook has this id");
}

struct create_arg {
    struct api_req *r;
    struct db_webhook_new in;
    char *doc;
};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    enum db_status s = db_webhook_insert(c, &a->in, &a->doc);
    if (s < 0)
        return s;
    return api_audit(c, a->r, "webhook.create", "webhook", a->in.id, MHD_HTTP_CREATED);
}

/* A reply buffer that is cleansed when libmicrohttpd is done with it. */
struct secret_text {
    size_t len;
    char text[];
};

static void secret_text_free(void *cls)
{
    struct secret_text *t = cls;
    OPENSSL_cleanse(t->text, t->len);
    free(t);
}

/* 201 with the document and the secret (added as "secret"); when an Idempotency-Key is
 * being served, what is stored for a replay is the document alone. */
static enum MHD_Result reply_created(struct api_req *r, const char *doc, const char *secret,
                                     const char *location)
{
    json_t *o = json_loads(doc, 0, NULL);
    if (o == NULL || json_object_set_new(o, "secret", json_string(secret)) != 0) {
        json_decref(o);
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "cannot encode the reply");
    }
    char *text = api_json_text(o);
    json_t *s = json_object_get(o, "secret");
    OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
    json_decref(o);
    size_t len = text ? strlen(text) : 0;
    struct secret_text *t = text ? malloc(sizeof *t + len + 1) : NULL;
    if (t == NULL) {
        if (text != NULL)
            OPENSSL_cleanse(text, len);
        free(text);
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
    }
    t->len = len;
    memcpy(t->text, text, len + 1);
    OPENSSL_cleanse(text, len);
    free(text);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(len, t->text, secret_text_free, t);
    if (resp == NULL) {
        secret_text_free(t);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->idem_key != NULL) {
        free(r->reply_body);
        r->reply_body = strdup(doc);
        r->reply_len = r->reply_body ? strlen(doc) : 0;
        r->reply_ct = "application/json";
        free(r->reply_location);
        r->reply_location = strdup(location);
    }
    return api_queue(r, MHD_HTTP_CREATED, resp);
}

enum MHD_Result api_webhooks_create(struct api_req *r)
{
    struct webhook_in in = {NULL, "", "standard", NULL};
    char project[37];
    if (api_create_project(r, ROLE_ADMIN, project, NULL) != 0) {
        if (r->status == MHD_HTTP_NOT_FOUND || r->status == MHD_HTTP_FORBIDDEN)
            audit_denied(r, NULL, NULL, (int)r->status);
        return MHD_YES;
    }
    if (api_spec_parse(r, r->json, webhook_spec, &in) != 0)
        return MHD_YES;
    char detail[512], *url = NULL, *types = NULL;
    unsigned char key[WH_SECRET_BYTES];
    char secret[WH_SECRET_TEXT_LEN + 8];
    struct api_sealed sealed = {0};
    enum MHD_Result ret;
    enum wh_url u = wh_url_check(in.url, allow_cidrs, &url, detail, sizeof detail);
    if (u != WH_URL_OK) {
        return api_reply_problem(
            r, u == WH_URL_ADDRESS ? API_ERR_ADDRESS_NOT_ALLOWED : API_ERR_INVALID_FIELD, "url",
            "%s", detail);
    }
    types = types_literal(in.event_types);
    if (types == NULL || util_random(key, sizeof key) != 0 ||
        wh_secret_text(key, sizeof key, secret, sizeof secret) != 0) {
        log_msg(LOG_ERROR, "webhook create: the secret could not be made");
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "the secret could not be made");
        goto cleanup;
    }
    if (api_seal_new(r, "webhook create", "the secret", key, sizeof key, &sealed, &ret) != 0)
        goto cleanup;
    const char *id = sealed.id;
    struct create_arg a = {r,
                           {id, url, types, in.description, in.format, r->principal.sub, project,
                            sealed.kid, sealed.nonce, sealed.ct, sealed.ctlen},
                           NULL};
    enum db_status s = api_run_tx_doc(create_fn, &a, &a.doc);
    if (s < 0) {
        ret = api_reply_db(r, s);
        goto cleanup;
    }
    char location[96];
    snprintf(location, sizeof location, "/v1/webhooks/%s", id);
    ret = reply_created(r, a.doc, secret, location);
    free(a.doc);
cleanup:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(secret, sizeof secret);
    free(sealed.ct);
    free(url);
    free(types);
    return ret;
}

/* Webhooks are an admin's: every route reads and changes those of the projects where the
 * caller is an admin (api_scope_route), a platform admin's every one. */

struct get_arg {
    const char *id, *scope;
    char *doc;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return db_webhook_get(c, a->id, a->scope, &a->doc);
}

enum MHD_Result api_webhooks_get(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    if (id == NULL)
        return MHD_YES;
    struct get_arg a = {id, api_scope_route(r), NULL};
    enum db_status s = db_run(get_fn, &a);
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    if (a.doc == NULL)
        return not_found(r, id, 0);
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}

static const struct list_filter webhook_filters[] = {
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    return db_webhook_list(c, q->scope, q->values[0], q->after, q->limit + 1, page);
}

static const struct list_def webhook_list = {"webhook", webhook_filters, 1, api_valid_seq, NULL,
                                             NULL,      list_page};

enum MHD_Result api_webhooks_list(struct api_req *r)
{
    return api_list_serve(r, &webhook_list); /* the route's scope: admin */
}

struct delete_arg {
    struct api_req *r;
    const char *id, *scope;
    char project[37];
};

static enum db_status delete_fn(struct db_conn *c, void *arg)
{
    struct delete_arg *a = arg;
    enum db_status s = db_webhook_delete(c, a->id, a->scope, a->project);
    if (s <= 0)
        return s;
    /* The row is gone: its project is named (audit_project() cannot find it). */
    return svc_audit_row(c, &a->r->actor, "webhook.delete", "webhook", a->id, MHD_HTTP_NO_CONTENT,
                         NULL, a->project, NULL, NULL);
}

enum MHD_Result api_webhooks_delete(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    if (id == NULL)
        return MHD_YES;
    struct delete_arg a = {r, id, api_scope_route(r), ""};
    enum db_status s = db_run_tx(delete_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return not_found(r, id, 1);
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

/* ---- deliveries ---- */

static int valid_status(const char *v)
{
    return !strcmp(v, "delivered") || !strcmp(v, "retrying") || !strcmp(v, "failed");
}

static const struct list_filter delivery_filters[] = {
    {"status", valid_status, "delivered, retrying or failed"},
};

struct deliveries_arg {
    const char *id, *scope;
    const struct list_query *q;
    struct db_page page;
    int exists;
};

static enum db_status deliveries_fn(struct db_conn *c, void *arg)
{
    struct deliveries_arg *a = arg;
    return db_webhook_deliveries(c, a->id, a->scope, a->q->values[0], a->q->after, a->q->limit + 1,
                                 &a->page, &a->exists);
}

enum MHD_Result api_webhooks_deliveries(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, "webhook-delivery", delivery_filters, 1, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !api_valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct deliveries_arg a = {id, api_scope_route(r), &q, {NULL}, 0};
    enum db_status s = db_run(deliveries_fn, &a);
    long limit = q.limit;
    api_list_query_free(&q);
    return api_child_page_reply(r, s, a.exists, &a.page, limit, "webhook-delivery",
                                "no webhook has this id");
}

/* ---- replay ---- */

struct replay_in {
    json_int_t from_event_id;
};

static const struct spec_field replay_spec[] = {
    {"from_event_id", SPEC_INTEGER, SPEC_REQUIRED, 1, 9007199254740991.0, NULL, NULL, NULL, NULL,
     SPEC_TO(struct replay_in, from_event_id)},
    SPEC_END,
};

struct replay_arg {
    struct api_req *r;
    const char *id, *scope;
    int64_t from;
    char *doc;
};

static enum db_status replay_fn(struct db_conn *c, void *arg)
{
    struct replay_arg *a = arg;
    enum db_status s = db_webhook_replay(c, a->id, a->scope, a->from, &a->doc);
    if (s <= 0)
        return s;
    char reason[64];
    snprintf(reason, sizeof reason, "from event %lld", (long long)a->from);
    return api_audit_reason(c, a->r, "webhook.replay", "webhook", a->id, MHD_HTTP_OK, reason);
}

enum MHD_Result api_webhooks_replay(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    if (id == NULL)
        return MHD_YES;
    struct replay_in in = {0};
    if (api_spec_parse(r, r->json, replay_spec, &in) != 0)
        return MHD_YES;
    struct replay_arg a = {r, id, api_scope_route(r), (int64_t)in.from_event_id, NULL};
    enum db_status s = api_run_tx_doc(replay_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return not_found(r, id, 1);
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
