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
#include "common/log.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "common/webhook.h"
#include "db/events.h"
#include "db/webhooks.h"

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
                           {id, url, types, in.description, in.format, r->principal.sub, sealed.kid,
                            sealed.nonce, sealed.ct, sealed.ctlen},
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

enum MHD_Result api_webhooks_get(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    return id ? api_get_document(r, id, "webhook", db_webhook_get) : MHD_YES;
}

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    return db_webhook_list(c, q->after, q->limit + 1, page);
}

static const struct list_def webhook_list = {"webhook", NULL, 0,        api_valid_seq,
                                             NULL,      NULL, list_page};

enum MHD_Result api_webhooks_list(struct api_req *r)
{
    return api_list_serve(r, &webhook_list);
}

static const struct api_delete_def webhook_delete = {"webhook", "webhook.delete", db_webhook_delete,
                                                     API_ERR_INTERNAL_ERROR,
                                                     "the webhook could not be deleted"};

enum MHD_Result api_webhooks_delete(struct api_req *r)
{
    const char *id = api_path_id(r, "webhook");
    return id ? api_delete_resource(r, id, &webhook_delete) : MHD_YES;
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
    const char *id;
    const struct list_query *q;
    struct db_page page;
    int exists;
};

static enum db_status deliveries_fn(struct db_conn *c, void *arg)
{
    struct deliveries_arg *a = arg;
    return db_webhook_deliveries(c, a->id, a->q->values[0], a->q->after, a->q->limit + 1, &a->page,
                                 &a->exists);
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
    struct deliveries_arg a = {id, &q, {NULL}, 0};
    enum db_status s = db_run(deliveries_fn, &a);
    long limit = q.limit;
    api_list_query_free(&q);
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (!a.exists)
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no webhook has this id");
    else
        ret = api_page_reply(r, &a.page, limit, "webhook-delivery");
    db_page_clear(&a.page);
    return ret;
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
    const char *id;
    int64_t from;
    char *doc;
};

static enum db_status replay_fn(struct db_conn *c, void *arg)
{
    struct replay_arg *a = arg;
    enum db_status s = db_webhook_replay(c, a->id, a->from, &a->doc);
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
    struct replay_arg a = {r, id, (int64_t)in.from_event_id, NULL};
    enum db_status s = api_run_tx_doc(replay_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no webhook has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
