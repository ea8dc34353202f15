/* problem.c — the one place that builds replies: JSON, problems (RFC 9457), ETags. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/cors.h"
#include "api/http.h"
#include "api/routes.h"
#include "common/sbuf.h"
#include "common/util.h"

static const struct {
    const char *code;
    unsigned status;
    const char *title;
} errors[] = {
#define X(e, c, s, t) {#c, s, t},
#include "api/errors.def"
#undef X
};

unsigned api_error_status(enum api_error err)
{
    return errors[err].status;
}
const char *api_error_code(enum api_error err)
{
    return errors[err].code;
}
const char *api_error_title(enum api_error err)
{
    return errors[err].title;
}

const char *api_param(const struct api_req *r, int i)
{
    return (i >= 0 && i < r->nparams) ? r->params[i] : NULL;
}

const char *api_header(const struct api_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Keeps a copy of the reply when an idempotent POST must store its first answer. */
static void remember_reply(struct api_req *r, const char *ct, const char *body, size_t len,
                           const char *location)
{
    if (r->idem_key == NULL)
        return;
    r->reply_body = malloc(len + 1);
    if (r->reply_body != NULL) {
        memcpy(r->reply_body, body, len);
        r->reply_body[len] = '\0';
        r->reply_len = len;
    }
    r->reply_ct = ct;
    r->reply_location = location ? strdup(location) : NULL;
}

/* Every answer forbids everything to a browser that would render it (JSON, YAML, metrics
 * text have no business running script or being framed); the status page gets its own,
 * still strict, policy. */
#define API_CSP "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
/* The status page's policy: scripts, styles, images and connections from this origin
 * only, no inline script or style, no framing, no form posts, no <base>. Carried by the
 * routes flagged ROUTE_UI. */
#define API_UI_CSP                                                              \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* RateLimit-Policy and RateLimit for the verdict api/ratelimit.c remembered on r; on a
 * 429, Retry-After (the seconds until one request is allowed, at least 1). */
static void add_rate_limit_headers(const struct api_req *r, unsigned status,
                                   struct MHD_Response *resp)
{
    const struct tb_verdict *v = &r->rl_verdict;
    long long t = (long long)(v->allowed ? v->reset_s : v->retry_s);
    char state[96];
    snprintf(state, sizeof state, "\"%s\";r=%lld;t=%lld", r->rl_name, (long long)v->remaining, t);
    MHD_add_response_header(resp, "RateLimit-Policy", r->rl_policy);
    MHD_add_response_header(resp, "RateLimit", state);
    if (status == 429 && !v->allowed) {
        char retry[24];
        snprintf(retry, sizeof retry, "%lld", t > 0 ? t : 1);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    }
}

enum MHD_Result api_queue(struct api_req *r, unsigned status, struct MHD_Response *resp)
{
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "X-Request-Id", r->request_id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            r->route && (r->route->flags & ROUTE_UI) ? API_UI_CSP : API_CSP);
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    if (strncmp(r->path ? r->path : "", "/v1/", 4) == 0 &&
        MHD_get_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL) == NULL)
        MHD_add_response_header(resp, "Cache-Control", "private, no-cache");
    api_cors_add_headers(r->cors_origin, resp);
    if (r->rl_policy != NULL) /* draft-ietf-httpapi-ratelimit-headers (api/ratelimit.c) */
        add_rate_limit_headers(r, status, resp);
    r->status = status;
    r->state = REQ_REPLIED;
    if (r->idem_tx) { /* sent once the request transaction has committed (api/http.c) */
        if (r->held_resp != NULL)
            MHD_destroy_response(r->held_resp);
        r->held_resp = resp;
        return MHD_YES;
    }
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result reply_buffer(struct api_req *r, unsigned status, const char *ct, char *buf,
                                    size_t len, const char *etag, const char *location)
{
    remember_reply(r, ct, buf, len, location);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
    if (etag != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    if (location != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    return api_queue(r, status, resp);
}

/* json_dump_callback's sink: the text grows in an sbuf, whose realloc moves a large block by
 * remapping its pages, where json_dumps copies its buffer into a fresh one at each doubling
 * (a 5 MB document, the recommendations at 10,000 hosts, was 10 MB of copies and the page
 * faults of 16 MB of fresh blocks per reply). */
static int text_append(const char *b, size_t n, void *data)
{
    struct sbuf *t = data;
    sbuf_add(t, b, n);
    return t->failed ? -1 : 0;
}

char *api_json_text(const json_t *body)
{
    struct sbuf t;
    sbuf_init(&t, 4096);
    if (json_dump_callback(body, text_append, &t,
                           JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) != 0) {
        free(sbuf_take(&t, NULL)); /* (NULL, already freed, when an allocation failed) */
        return NULL;
    }
    return sbuf_take(&t, NULL);
}

void api_etag_of(const char *text, size_t len, char out[API_ETAG_LEN])
{
    char hex[65];
    util_sha256_hex(text, len, hex);
    snprintf(out, API_ETAG_LEN, "\"%.32s\"", hex);
}

int api_etag_matches(const char *header, const char *etag, int weak)
{
    if (header == NULL)
        return 0;
    const char *p = header;
    size_t elen = strlen(etag);
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0) {
            if (!weak) { /* If-Match uses the strong comparison */
                while (*p && *p != ',')
                    p++;
                continue;
            }
            p += 2;
        }
        if (strncmp(p, etag, elen) == 0 &&
            (p[elen] == '\0' || p[elen] == ',' || p[elen] == ' ' || p[elen] == '\t'))
            return 1;
        while (*p && *p != ',')
            p++;
    }
    return 0;
}

enum MHD_Result api_reply_text(struct api_req *r, unsigned status, char *text, const char *location)
{
    if (text == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "cannot encode the reply");
    size_t len = strlen(text);
    int is_read = !strcmp(r->method, "GET") || !strcmp(r->method, "HEAD");
    if (status == MHD_HTTP_OK && (is_read || r->etag_on_write)) {
        char etag[API_ETAG_LEN];
        api_etag_of(text, len, etag);
        if (is_read && api_etag_matches(api_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH), etag, 1)) {
            free(text);
            struct MHD_Response *resp =
                MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
            return api_queue(r, MHD_HTTP_NOT_MODIFIED, resp);
        }
        return reply_buffer(r, status, "application/json", text, len, etag, location);
    }
    return reply_buffer(r, status, "application/json", text, len, NULL, location);
}

enum MHD_Result api_reply_json(struct api_req *r, unsigned status, json_t *body,
                               const char *location)
{
    char *text = api_json_text(body);
    json_decref(body);
    return api_reply_text(r, status, text, location);
}

enum MHD_Result api_reply_problem(struct api_req *r, enum api_error err, const char *field,
                                  const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char type[96];
    snprintf(type, sizeof type, "urn:gpufleet:problem:%s", errors[err].code);
    json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title",
                          errors[err].title, "status", (int)errors[err].status, "detail", detail,
                          "code", errors[err].code, "request_id", r->request_id);
    if (p == NULL) /* detail was not valid UTF-8 (it may echo input) */
        p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title", errors[err].title,
                      "status", (int)errors[err].status, "detail", errors[err].title, "code",
                      errors[err].code, "request_id", r->request_id);
    if (field != NULL)
        json_object_set_new(p, "field", json_string(field));
    if (json_object_get(p, "field") == NULL && field != NULL)
        json_object_set_new(p, "field", json_string("?"));
    r->error_code = errors[err].code;
    char *s = json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(p);
    if (s == NULL)
        return MHD_NO;
    unsigned status = errors[err].status;
    struct MHD_Response *resp;
    remember_reply(r, "application/problem+json", s, strlen(s), NULL);
    resp = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
    if (status == MHD_HTTP_UNAUTHORIZED) {
        const char *hdr = err == API_ERR_MISSING_TOKEN
                              ? "Bearer realm=\"gpufleet\""
                              : "Bearer realm=\"gpufleet\", error=\"invalid_token\"";
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, hdr);
    }
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED && r->allow[0] != '\0')
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == MHD_HTTP_CONTENT_TOO_LARGE || status == MHD_HTTP_URI_TOO_LONG)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    return api_queue(r, status, resp);
}

enum MHD_Result api_reply_db(struct api_req *r, enum db_status s)
{
    if (s == DB_UNAVAILABLE)
        return api_reply_problem(r, API_ERR_DATABASE_UNAVAILABLE, NULL,
                                 "the database cannot be reached; retry shortly");
    if (s == DB_TIMEOUT)
        return api_reply_problem(r, API_ERR_QUERY_TIMEOUT, NULL,
                                 "the query ran past the statement timeout; retry later, or "
                                 "ask for less (a shorter window)");
    return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL,
                             "the request failed on the server (request id %s)", r->request_id);
}

enum MHD_Result api_reply_raw(struct api_req *r, unsigned status, const char *content_type,
                              const char *body, size_t len)
{
    char *copy = malloc(len ? len : 1);
    if (copy == NULL)
        return MHD_NO;
    memcpy(copy, body, len);
    return reply_buffer(r, status, content_type, copy, len, NULL, NULL);
}

enum MHD_Result api_reply_empty(struct api_req *r, unsigned status)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    return api_queue(r, status, resp);
}
