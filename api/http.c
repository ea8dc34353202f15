/* http.c — request lifecycle on libmicrohttpd: context, routing, auth, body, dispatch,
 * idempotency, access log and metrics. Handlers see a parsed, authorised request. */
#include "api/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "api/auth.h"
#include "api/cors.h"
#include "api/events.h"
#include "api/metrics.h"
#include "api/ratelimit.h"
#include "api/routes.h"
#include "api/scope.h"
#include "api/server.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "db/idempotency.h"
#include "service/events_hub.h"
#include "service/grants.h"
#include "service/tokens.h"

static struct MHD_Daemon *daemon_handle;
static const struct api_auth *auth_cfg;

/* ---- request context ---- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    struct api_req *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->conn = conn;
    r->start_us = util_mono_us();
    r->uri_len = strlen(uri);
    r->metric_route = -1;
    r->rl_class = -1;
    /* MHD hands the handler an unescaped, NUL-terminated path: "/ui/index.html%00.js"
     * would arrive as "/ui/index.html". Such a path names nothing; remember to refuse it. */
    const char *q = strchr(uri, '?');
    r->path_has_nul = memmem(uri, q ? (size_t)(q - uri) : r->uri_len, "%00", 3) != NULL;
    return r;
}

static void req_free(struct api_req *r)
{
    if (r->held_resp != NULL)
        MHD_destroy_response(r->held_resp);
    for (int i = 0; i < r->nparams; i++)
        free(r->params[i]);
    free(r->body);
    json_decref(r->json);
    free(r->idem_key);
    free(r->reply_body);
    free(r->reply_location);
    api_scope_free(r);
    auth_principal_clear(&r->principal);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    struct api_req *r = *req_cls;
    if (r == NULL)
        return;
    int64_t dur = util_mono_us() - r->start_us;
    if (r->method != NULL) {
        api_metrics_observe(r->metric_route, r->method_idx, r->status, dur);
        if (log_enabled(LOG_INFO)) {
            /* the path and method are the client's bytes: valid UTF-8, no control character,
             * bounded (json_pack refuses invalid UTF-8, which dropped the whole line) */
            char path[1024], method[64];
            utf8_log_text(r->path, r->path ? strlen(r->path) : 0, path, sizeof path);
            utf8_log_text(r->method, strlen(r->method), method, sizeof method);
            json_t *line = json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:s?, s:s?}", "msg", "request", "request_id",
                r->request_id, "method", method, "route",
                r->route ? r->route->path
                         : (r->metric_route >= 0 ? api_routes[r->metric_route].path : "unmatched"),
                "path", path, "status", (int)r->status, "duration_ms", (double)dur / 1000.0,
                "principal", r->authenticated ? r->principal.sub : NULL, "error", r->error_code);
            if (line != NULL && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
                json_object_set_new(line, "terminated", json_integer((json_int_t)toe));
            if (r->stream != NULL) {
                r->stream_done(r->stream, line);
                r->stream = NULL;
            }
            log_json_steal(LOG_INFO, line);
        }
    }
    if (r->stream != NULL)
        r->stream_done(r->stream, NULL);
    req_free(r);
    *req_cls = NULL;
}

static int valid_request_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > API_REQUEST_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.'))
            return 0;
    return 1;
}

/* ---- early checks (first callback) ---- */

static int method_has_body(const char *m)
{
    return !strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH");
}

static int is_json_content_type(const char *ct)
{
    if (ct == NULL)
        return 0;
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* Records a denied attempt at a mutating route in the audit trail (best effort). */
struct denied_arg {
    struct api_req *r;
};

static enum db_status denied_fn(struct db_conn *c, void *arg)
{
    struct api_req *r = ((struct denied_arg *)arg)->r;
    char action[64];
    /* "/v1/gpu-models" → resource "gpu_model" */
    const char *res = r->route->path + 4;
    char type[48];
    size_t k = 0;
    for (; *res && *res != '/' && k + 1 < sizeof type; res++)
        type[k++] = *res == '-' ? '_' : *res;
    if (k > 0 && type[k - 1] == 's')
        k--;
    type[k] = '\0';
    snprintf(action, sizeof action, "%s.denied", type);
    return api_audit(c, r, action, type, NULL, MHD_HTTP_FORBIDDEN);
}

/* What the principal may do where (service/grants.h): its grants by project, the union of
 * its roles, and r->actor. 0, or -1 after replying (no role anywhere, or PostgreSQL cannot
 * be read). */
static int resolve_actor(struct api_req *r)
{
    struct api_principal *p = &r->principal;
    struct svc_claim claims[API_MAX_PROJECT_CLAIMS];
    int n = 0;
    unsigned roles = 0;
    for (int i = 0; i < p->nclaims; i++)
        claims[i] = (struct svc_claim){p->claims[i].project, (unsigned)p->claims[i].role};
    if (!p->platform_admin) {
        n = svc_grants_resolve(p->sub, claims, p->nclaims, r->grants, API_MAX_GRANTS, &roles);
        if (n < 0) {
            api_reply_db(r, DB_UNAVAILABLE);
            return -1;
        }
        if (n == 0) {
            api_reply_problem(r, API_ERR_ROLE_NOT_MAPPED, NULL,
                              p->from_idp ? "no value of the token's role claim is in "
                                            "GPUFLEET_JWT_ROLE_MAP and the subject is a member "
                                            "of no project"
                                          : "the token's project does not exist");
            return -1;
        }
    }
    r->roles = p->platform_admin ? (unsigned)ROLE_ADMIN : roles;
    r->ngrants = n;
    api_actor(r, &r->actor);
    return 0;
}

static enum MHD_Result authenticate(struct api_req *r)
{
    if (r->route->flags & ROUTE_TICKET) {
        int t = api_ticket_authenticate(r);
        if (t < 0) {
            if (r->status == MHD_HTTP_UNAUTHORIZED)
                api_rl_charge_auth_failure(r); /* the 401 is already queued */
            return MHD_YES;                    /* replied */
        }
        if (t > 0)
            goto role;
    }
    const char *why;
    enum auth_result res = auth_verify(auth_cfg, api_header(r, MHD_HTTP_HEADER_AUTHORIZATION),
                                       (int64_t)time(NULL), &r->principal, &why);
    /* Each 401 is charged to the address's authentication-failure bucket; once it is empty
     * the answer is 429 instead (docs/operations.md#rate-limits). */
    if ((res == AUTH_MISSING || res == AUTH_EXPIRED || res == AUTH_INVALID) &&
        api_rl_auth_failure(r) != 0)
        return MHD_YES; /* 429 queued */
    switch (res) {
    case AUTH_OK: break;
    case AUTH_MISSING: return api_reply_problem(r, API_ERR_MISSING_TOKEN, NULL, "%s", why);
    case AUTH_EXPIRED: return api_reply_problem(r, API_ERR_TOKEN_EXPIRED, NULL, "%s", why);
    case AUTH_INVALID: return api_reply_problem(r, API_ERR_INVALID_TOKEN, NULL, "%s", why);
    case AUTH_NO_ROLE: return api_reply_problem(r, API_ERR_ROLE_NOT_MAPPED, NULL, "%s", why);
    }
    r->authenticated = 1;
role:
    /* The revocation list, held in memory (service/tokens.h): no query per request. */
    switch (svc_token_revoked(r->principal.jti, r->principal.sub, r->principal.iat)) {
    case 0: break;
    case 1:
        return api_reply_problem(r, API_ERR_TOKEN_REVOKED, NULL,
                                 "the token has been revoked (POST /v1/tokens/revoke)");
    default:
        return api_reply_problem(r, API_ERR_DATABASE_UNAVAILABLE, NULL,
                                 "the token revocation list cannot be read yet; retry shortly");
    }
    if (resolve_actor(r) != 0)
        return MHD_YES; /* replied */
    if (api_rl_check(r, r->roles == ROLE_REPORTER ? RL_REPORTER : RL_PRINCIPAL) != 0)
        return MHD_YES; /* 429 queued */
    if ((r->route->roles & r->roles) == 0) {
        enum MHD_Result ret =
            api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL, "the %s role may not %s %s",
                              actor_role_name(&r->actor), r->route->method, r->route->path);
        if (r->route->flags & ROUTE_MUTATES) {
            struct denied_arg a = {r};
            db_run_tx(denied_fn, &a);
        }
        return ret;
    }
    return MHD_YES;
}

/* Returns MHD_YES with r->state == REQ_BODY to continue, or after queueing a reply. */
/* Answers an OPTIONS request (preflight or not). allow lists the path's methods. */
static enum MHD_Result cors_preflight(struct api_req *r, const char *allow)
{
    const char *req_method = api_header(r, "Access-Control-Request-Method");
    if (req_method != NULL && api_header(r, "Origin") != NULL && r->cors_origin == NULL)
        return api_reply_problem(r, API_ERR_ORIGIN_NOT_ALLOWED, NULL,
                                 "this origin is not in GPUFLEET_CORS_ORIGINS");
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (r->cors_origin != NULL && req_method != NULL) {
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, If-Match, If-None-Match, "
                                "Idempotency-Key, X-Request-Id, Last-Event-ID");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    return api_queue(r, MHD_HTTP_NO_CONTENT, resp);
}

static enum MHD_Result begin_request(struct api_req *r, const char *url, const char *method)
{
    r->method = method;
    r->path = url;
    r->method_idx = api_metrics_method_index(method);
    const char *rid = api_header(r, "X-Request-Id");
    if (rid != NULL && valid_request_id(rid))
        snprintf(r->request_id, sizeof r->request_id, "%s", rid);
    else
        util_uuid4(r->request_id);
    r->cors_origin = api_cors_allowed(api_header(r, "Origin"));

    if (r->uri_len > API_MAX_URL)
        return api_reply_problem(r, API_ERR_URI_TOO_LONG, NULL,
                                 "the request URI is longer than %d bytes", API_MAX_URL);
    if (r->path_has_nul)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL,
                                 "no route matches this path (it holds an encoded NUL byte)");
    enum api_match m = api_route_match(method, url, &r->route, r->params, &r->nparams, r->allow,
                                       sizeof r->allow, &r->metric_route);
    /* Every request is charged to its client address; the probes (health, metrics) to a
     * bucket of their own, so that API traffic from a shared address cannot starve them. */
    if (api_rl_check(r, m == MATCH_OK && (r->route->flags & ROUTE_PROBE) ? RL_PROBE : RL_ADDRESS) !=
        0)
        return MHD_YES; /* 429 queued */
    if (m == MATCH_NO_PATH)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no route matches this path");
    if (!strcmp(method, "OPTIONS"))
        return cors_preflight(r, r->allow);
    if (m == MATCH_WRONG_METHOD) {
        return api_reply_problem(r, API_ERR_METHOD_NOT_ALLOWED, NULL,
                                 "%s is not allowed here; allowed: %s", method, r->allow);
    }
    if (!(r->route->flags & ROUTE_PUBLIC)) {
        enum MHD_Result ret = authenticate(r);
        if (r->state == REQ_REPLIED || ret != MHD_YES)
            return ret;
    }
    if (method_has_body(method) && (r->route->flags & (ROUTE_BODY | ROUTE_BODY_OPTIONAL))) {
        const char *cl = api_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
        long len;
        if (cl != NULL && util_parse_long(cl, 0, 1L << 40, &len) == 0 && len > API_MAX_BODY) {
            if (len > API_DRAIN_MAX)
                return api_reply_problem(r, API_ERR_PAYLOAD_TOO_LARGE, NULL,
                                         "the body is %ld bytes; the limit is %d", len,
                                         API_MAX_BODY);
            r->too_large = 1; /* read it to the end, then answer 413 */
        }
        /* an optional body's type is checked once it is known not to be empty */
        if ((r->route->flags & ROUTE_BODY) &&
            !is_json_content_type(api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE)))
            return api_reply_problem(r, API_ERR_UNSUPPORTED_MEDIA_TYPE, NULL,
                                     "send the body as Content-Type: application/json");
    }
    r->state = REQ_BODY;
    return MHD_YES;
}

static int append_body(struct api_req *r, const char *data, size_t size)
{
    if (r->body_len + size > API_MAX_BODY)
        return -1;
    if (r->body_len + size + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + size + 1)
            cap *= 2;
        if (cap > API_MAX_BODY + 1)
            cap = API_MAX_BODY + 1;
        char *nb = realloc(r->body, cap);
        if (nb == NULL)
            return -1;
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, size);
    r->body_len += size;
    return 0;
}

/* Parses the accumulated body into r->json. Returns 0, or -1 after replying. */
static int parse_body(struct api_req *r)
{
    if (r->body_len == 0) {
        api_reply_problem(r, API_ERR_INVALID_JSON, NULL, "the request body is empty");
        return -1;
    }
    json_error_t jerr;
    r->json = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (r->json == NULL) {
        if (json_error_code(&jerr) == json_error_duplicate_key)
            api_reply_problem(r, API_ERR_DUPLICATE_KEY, NULL,
                              "the body repeats a key (line %d, column %d)", jerr.line,
                              jerr.column);
        else {
            /* jansson's text may quote the input ("... near '<token>'"), and the input may
             * be a secret (a private key): keep only the reason and the position. */
            char *near = strstr(jerr.text, " near ");
            if (near != NULL)
                *near = '\0';
            api_reply_problem(r, API_ERR_INVALID_JSON, NULL,
                              "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
                              jerr.line, jerr.column);
        }
        return -1;
    }
    if (!json_is_object(r->json)) {
        api_reply_problem(r, API_ERR_BODY_NOT_OBJECT, NULL, "the body must be one JSON object");
        return -1;
    }
    return 0;
}

/* ---- idempotency ---- */

static int valid_idem_key(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] < 0x20 || k[i] > 0x7e)
            return 0;
    return 1;
}

struct idem_arg {
    struct api_req *r;
    enum db_idem_outcome outcome;
    struct db_idem_reply reply;
};

static enum db_status idem_begin_fn(struct db_conn *c, void *arg)
{
    struct idem_arg *a = arg;
    db_idem_reply_free(&a->reply);
    return db_idem_begin(c, a->r->principal.sub, a->r->idem_key, a->r->method, a->r->path,
                         a->r->idem_hash, &a->outcome, &a->reply);
}

static enum db_status idem_finish_fn(struct db_conn *c, void *arg)
{
    struct api_req *r = ((struct idem_arg *)arg)->r;
    enum db_status s = db_idem_finish(c, r->principal.sub, r->idem_key, (int)r->status,
                                      r->reply_location, r->reply_ct, r->reply_body);
    return s == DB_ONE_RESULT ? s : s < 0 ? s : DB_HARD_ERROR; /* the claim must be there */
}

static enum MHD_Result replay(struct api_req *r, struct db_idem_reply *rep)
{
    size_t len = rep->body ? strlen(rep->body) : 0;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, rep->body, MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    if (rep->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
    if (rep->location)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, rep->location);
    MHD_add_response_header(resp, "Idempotent-Replayed", "true");
    return api_queue(r, (unsigned)rep->status, resp);
}

/* Returns 1 when the handler should run (new key or none), 0 after replying. */
static int idem_begin(struct api_req *r)
{
    const char *key = api_header(r, "Idempotency-Key");
    if (key == NULL || strcmp(r->method, "POST") != 0 || !(r->route->flags & ROUTE_MUTATES))
        return 1;
    if (!valid_idem_key(key)) {
        api_reply_problem(r, API_ERR_INVALID_IDEMPOTENCY_KEY, NULL,
                          "Idempotency-Key must be 1-255 printable ASCII characters");
        return 0;
    }
    /* The request's identity: method, path and body bytes. */
    size_t n = strlen(r->method) + strlen(r->path) + 2 + r->body_len;
    char *buf = malloc(n);
    if (buf == NULL) {
        api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        return 0;
    }
    int off = snprintf(buf, n, "%s\n%s\n", r->method, r->path);
    if (r->body_len)
        memcpy(buf + off, r->body, r->body_len);
    util_sha256_hex(buf, (size_t)off + r->body_len, r->idem_hash);
    free(buf);
    r->idem_key = strdup(key);
    struct idem_arg a = {r, IDEM_NEW, {0}};
    /* The claim, the handler's writes and the stored answer are one transaction (the
     * request transaction, db/db.h): a failure or a crash anywhere leaves neither an
     * effect without its record nor a claim without an outcome. A concurrent request with
     * the same key waits on the claim's row, then replays the answer. */
    enum db_status s = db_request_begin();
    if (s >= 0)
        s = db_run(idem_begin_fn, &a);
    int run = 0;
    if (s < 0) {
        if (db_request_active())
            db_request_end(0);
        free(r->idem_key);
        r->idem_key = NULL;
        api_reply_db(r, s);
    } else if (a.outcome == IDEM_NEW) {
        r->idem_tx = 1;
        run = 1;
    } else {
        db_request_end(0); /* nothing was written */
        char *k = r->idem_key;
        r->idem_key = NULL; /* nothing to store for these answers */
        if (a.outcome == IDEM_REPLAY)
            replay(r, &a.reply);
        else if (a.outcome == IDEM_MISMATCH)
            api_reply_problem(r, API_ERR_IDEMPOTENCY_KEY_REUSED, NULL,
                              "this Idempotency-Key was used for a different request");
        else
            api_reply_problem(r, API_ERR_IDEMPOTENCY_IN_PROGRESS, NULL,
                              "the first request with this Idempotency-Key is still running");
        free(k);
    }
    db_idem_reply_free(&a.reply);
    return run;
}

/* Ends the request transaction of a POST with Idempotency-Key, then sends the held reply:
 * a 2xx-4xx answer is stored with the handler's writes and both commit, or neither does
 * and the client gets an error instead (the key stays free); a 5xx (or no answer) rolls
 * everything back. Returns what queueing answered (ret when there was nothing to send). */
static enum MHD_Result idem_finish(struct api_req *r, enum MHD_Result ret)
{
    if (!r->idem_tx)
        return ret;
    r->idem_tx = 0;
    struct MHD_Response *resp = r->held_resp;
    r->held_resp = NULL;
    int keep = resp != NULL && r->status < 500 && r->reply_body != NULL;
    enum db_status s = DB_NO_RESULTS;
    if (keep) {
        struct idem_arg a = {r, IDEM_NEW, {0}};
        s = db_run(idem_finish_fn, &a);
        s = s >= 0 ? db_request_end(1) : (db_request_end(0), s);
    } else {
        db_request_end(0);
    }
    if (resp == NULL)
        return ret;
    if (s >= 0) {
        enum MHD_Result q = MHD_queue_response(r->conn, r->status, resp);
        MHD_destroy_response(resp);
        return q;
    }
    MHD_destroy_response(resp); /* its effect was rolled back: never sent */
    log_msg(LOG_WARN, "could not commit the request with its idempotent answer (request %s)",
            r->request_id);
    free(r->idem_key);
    r->idem_key = NULL;
    free(r->reply_body);
    r->reply_body = NULL;
    free(r->reply_location);
    r->reply_location = NULL;
    r->error_code = NULL;
    return api_reply_db(r, s);
}

/* ---- the MHD access handler ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)version;
    struct api_req *r = *req_cls;
    if (r == NULL) /* on_uri failed to allocate */
        return MHD_NO;
    if (r->state == REQ_NEW) {
        r->conn = conn;
        enum MHD_Result ret = begin_request(r, url, method);
        if (r->state == REQ_REPLIED || ret != MHD_YES)
            return ret;
        return MHD_YES;
    }
    if (r->state == REQ_REPLIED) { /* reply queued early: discard what still arrives */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_large == 0 && append_body(r, upload_data, n) != 0)
            r->too_large = (long)r->body_len + 1; /* (never 0: it marks the state) */
        if (r->too_large > 0) {                   /* discard, up to API_DRAIN_MAX */
            r->too_large += (long)n;
            if (r->too_large > API_DRAIN_MAX)
                return api_reply_problem(r, API_ERR_PAYLOAD_TOO_LARGE, NULL,
                                         "the body is larger than %d bytes", API_MAX_BODY);
        }
        return MHD_YES;
    }
    if (r->too_large > 0)
        return api_reply_problem(r, API_ERR_PAYLOAD_TOO_LARGE, NULL,
                                 "the body is larger than %d bytes", API_MAX_BODY);
    /* Whole request received: dispatch. */
    if ((r->route->flags & ROUTE_BODY) && parse_body(r) != 0)
        return MHD_YES;
    if ((r->route->flags & ROUTE_BODY_OPTIONAL) && r->body_len > 0) {
        if (!is_json_content_type(api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE)))
            return api_reply_problem(r, API_ERR_UNSUPPORTED_MEDIA_TYPE, NULL,
                                     "send the body as Content-Type: application/json");
        if (parse_body(r) != 0)
            return MHD_YES;
    }
    if (!idem_begin(r))
        return MHD_YES;
    enum MHD_Result ret = r->route->handler(r);
    return idem_finish(r, ret);
}

/* ---- daemon ---- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    buf[strcspn(buf, "\n")] = '\0';
    /* A client that goes away (a closed event stream, typically) is no server problem;
     * the access log records the request as terminated. */
    int gone = strstr(buf, "no longer available for sending") != NULL ||
               strstr(buf, "closed by remote peer") != NULL;
    log_msg(gone ? LOG_DEBUG : LOG_WARN, "httpd: %s", buf);
}

int api_server_start(const struct api_config *cfg, const struct api_auth *auth, char *err,
                     size_t errlen)
{
    auth_cfg = auth;
    api_cors_configure(cfg->cors_origins, cfg->ncors);
    if (api_rl_configure(cfg, err, errlen) != 0)
        return -1;
    api_metrics_configure(cfg->metrics_token_sha256, cfg->metrics_cache_s);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (strchr(cfg->listen_host, ':') != NULL) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)cfg->listen_port);
        inet_pton(AF_INET6, cfg->listen_host, &a6->sin6_addr);
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)cfg->listen_port);
        inet_pton(AF_INET, cfg->listen_host, &a4->sin_addr);
    }
    daemon_handle = MHD_start_daemon(
        flags, (uint16_t)cfg->listen_port, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)cfg->threads, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (daemon_handle == NULL) {
        snprintf(err, errlen, "cannot listen on %s (address in use or not available)", cfg->listen);
        return -1;
    }
    return 0;
}

void api_server_stop(void)
{
    /* MHD must not be stopped with suspended connections: end the event streams first. */
    ev_hub_end_streams(2000);
    if (daemon_handle != NULL)
        MHD_stop_daemon(daemon_handle);
    daemon_handle = NULL;
    api_rl_shutdown();
    api_metrics_shutdown();
}
