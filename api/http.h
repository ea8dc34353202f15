/* http.h — the per-request context and the pieces every handler shares.
 * api/ translates HTTP to the domain: no SQL here, no business rules. */
#ifndef GPUFLEET_HTTP_H
#define GPUFLEET_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "common/actor.h"
#include "common/tbucket.h"
#include "db/db.h"

#define API_MAX_BODY (1024 * 1024) /* 1 MiB */
/* A body over the limit is read and discarded up to this much before the 413 is sent, so
 * the client can finish sending and read the answer (an answer sent mid-upload makes
 * the server close the connection under the client's write: EPIPE, no 413 seen). Larger
 * uploads are answered at once. */
#define API_DRAIN_MAX      (16L * 1024 * 1024)
#define API_MAX_URL        8192
#define API_MAX_PARAMS     4
#define API_REQUEST_ID_MAX 128
#define API_ETAG_LEN       40

enum api_error {
#define X(e, code, status, title) API_ERR_##e,
#include "api/errors.def"
#undef X
    API_ERR__COUNT
};

enum api_role {
    ROLE_NONE = 0,
    ROLE_VIEWER = 1,
    ROLE_OPERATOR = 2,
    ROLE_ADMIN = 4,
    ROLE_REPORTER = 8,
};
#define ROLES_READ  (ROLE_VIEWER | ROLE_OPERATOR | ROLE_ADMIN)
#define ROLES_WRITE (ROLE_OPERATOR | ROLE_ADMIN)
#define ROLES_ADMIN (ROLE_ADMIN)

#define API_MAX_PROJECT_CLAIMS 16
#define API_MAX_GRANTS         64

/* A role a token names in a project (by the project's name, resolved per request). */
struct api_project_claim {
    char project[64];
    enum api_role role;
};

struct api_principal {
    char sub[129];
    /* The token's role claim (a gpufleetd token), or the role map's highest role of the
     * entries without a project (an OIDC token); ROLE_NONE when only projects are named. */
    enum api_role role;
    /* A reporter's scope: {"hosts":[…],"pools":[…]} as compact JSON (owned; freed by
     * auth_principal_clear), or NULL when the token is unscoped. */
    char *scope;
    int from_idp; /* the identity provider signed the token (an OIDC user), not gpufleetd */
    /* For the revocation list and the end of event streams: the token's jti ("" when it
     * has none, or one that is not 1-128 printable ASCII characters), iat (INT64_MIN when
     * absent) and exp (Unix seconds). */
    char jti[129];
    int64_t iat, exp;
    /* Projects: a role without a project is a platform admin's (admin) or acts on the
     * project named default (viewer, operator, reporter); a token may name projects
     * instead (the claim "project", or role map entries with @project=NAME). */
    int platform_admin;
    int nclaims;
    struct api_project_claim claims[API_MAX_PROJECT_CLAIMS];
};

struct api_route;

enum api_req_state { REQ_NEW = 0, REQ_BODY, REQ_REPLIED };

/* Allocated on the first MHD callback, freed in the completion callback. */
struct api_req {
    struct MHD_Connection *conn;
    enum api_req_state state;
    int64_t start_us;
    size_t uri_len;
    int path_has_nul;   /* the raw path holds %00 (MHD's unescaped copy is cut there) */
    const char *method; /* MHD-owned, valid for the request */
    const char *path;   /* MHD-owned, unescaped, without query string */
    int method_idx;
    const struct api_route *route; /* NULL when unmatched */
    int metric_route;              /* metrics label index */
    char request_id[API_REQUEST_ID_MAX + 1];
    char *params[API_MAX_PARAMS]; /* path parameters, owned */
    int nparams;
    int authenticated;
    struct api_principal principal;
    /* What the principal may do where, resolved once the token is verified (the token's
     * projects by name, and the memberships stored for its subject): the grants by project
     * id, the union of its roles (the route table's door), and the actor every handler and
     * the audit rows name. */
    struct actor_grant grants[API_MAX_GRANTS];
    int ngrants;
    unsigned roles;
    struct actor actor;
    char *scope_text[4];     /* api_scope(): readable and writable project lists, cached */
    const char *cors_origin; /* MHD-owned; set when the Origin is allowed */
    char allow[128];         /* methods the matched path supports (Allow header on 405) */
    char *body;
    size_t body_len, body_cap;
    long too_large;    /* > 0: the body is over the limit (its size so far): discard, then 413 */
    json_t *json;      /* parsed body (owned) */
    int etag_on_write; /* a 200 to a write (PUT) carries the new ETag */
    unsigned status;
    const char *error_code; /* problem code of the reply, for the log */
    /* Idempotency: set while a POST with Idempotency-Key is being served. */
    char *idem_key;
    char idem_hash[65];
    /* Copy of the reply (only kept while idem_key is set). */
    char *reply_body;
    size_t reply_len;
    const char *reply_ct;
    char *reply_location;
    /* While the handler of such a POST runs inside the request transaction (db/db.h), its
     * reply is held here (api_queue) and queued once the effect and the stored answer have
     * committed together (or replaced by an error when they could not). */
    int idem_tx;
    struct MHD_Response *held_resp;
    /* A streaming reply (GET /v1/events): stream_done(stream, line) runs when the request
     * ends, adds to its access-log line (NULL when not logged) and releases stream. */
    void *stream;
    void (*stream_done)(void *stream, json_t *line);
    /* Rate limits (api/ratelimit.h): the class whose verdict the RateLimit headers show
     * (-1: none), that verdict, the RateLimit-Policy value and the policy's name (static;
     * NULL: no headers). api_queue writes RateLimit, and Retry-After on a 429. */
    int rl_class;
    struct tb_verdict rl_verdict;
    const char *rl_policy;
    const char *rl_name;
};

typedef enum MHD_Result (*api_handler)(struct api_req *r);

/* Path parameter i (0-based, in template order). */
const char *api_param(const struct api_req *r, int i);
/* Request header (case-insensitive), or NULL. */
const char *api_header(const struct api_req *r, const char *name);

/* ---- replies (problem.c). Each queues exactly one response. ---- */

/* 200/201 JSON. Steals body. For GET 200 replies adds an ETag and answers 304 when
 * If-None-Match matches. location may be NULL. */
enum MHD_Result api_reply_json(struct api_req *r, unsigned status, json_t *body,
                               const char *location);
/* Same for a JSON text already encoded (steals text, a malloc'd string). */
enum MHD_Result api_reply_text(struct api_req *r, unsigned status, char *text,
                               const char *location);
/* RFC 9457 problem. field may be NULL. */
enum MHD_Result api_reply_problem(struct api_req *r, enum api_error err, const char *field,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A reply without a body (204). */
enum MHD_Result api_reply_empty(struct api_req *r, unsigned status);
/* The one JSON encoding used for replies (and so for ETags). Caller frees. */
char *api_json_text(const json_t *body);
/* ETag of a reply body: a quoted 128-bit SHA-256 prefix. */
void api_etag_of(const char *text, size_t len, char out[API_ETAG_LEN]);
/* True when an If-None-Match (weak) or If-Match (strong) header value names etag. */
int api_etag_matches(const char *header, const char *etag, int weak);
/* A problem for a failed database call: 503 database_unavailable or 500. */
enum MHD_Result api_reply_db(struct api_req *r, enum db_status s);
/* Raw body (copied). */
enum MHD_Result api_reply_raw(struct api_req *r, unsigned status, const char *content_type,
                              const char *body, size_t len);
/* Queues resp with the common headers (request id, CORS, caching); takes resp. */
enum MHD_Result api_queue(struct api_req *r, unsigned status, struct MHD_Response *resp);

unsigned api_error_status(enum api_error err);
const char *api_error_code(enum api_error err);
const char *api_error_title(enum api_error err);

/* The request's actor (common/actor.h; borrows r's strings): a user of the identity
 * provider or a token's subject, its role, and the request for the audit row. */
void api_actor(const struct api_req *r, struct actor *a);
/* The audit row of the request's act (service/audit.h), in the caller's transaction. */
enum db_status api_audit(struct db_conn *c, const struct api_req *r, const char *action,
                         const char *resource_type, const char *resource_id, unsigned status);
enum db_status api_audit_reason(struct db_conn *c, const struct api_req *r, const char *action,
                                const char *resource_type, const char *resource_id, unsigned status,
                                const char *reason);

#endif
