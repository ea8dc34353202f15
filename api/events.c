/* events.c — see events.h. */
#include "api/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/auth.h"
#include "api/list.h"
#include "api/role.h"
#include "api/scope.h"
#include "common/util.h"
#include "db/events.h"
#include "service/events_hub.h"

#define TICKET_BYTES 32
#define TICKET_LEN   43 /* base64url of 32 bytes, unpadded */
#define STREAM_BLOCK (16 * 1024)

static int ticket_ttl_s = 60;

void api_events_configure(int ttl_s)
{
    ticket_ttl_s = ttl_s;
}

/* ---- tickets ---- */

struct ticket_arg {
    const char *hash, *sub, *role, *principal;
    char expires_at[40];
    char got_sub[129], got_role[16];
    char *got_principal; /* malloc'd */
};

static enum db_status ticket_insert_fn(struct db_conn *c, void *arg)
{
    struct ticket_arg *a = arg;
    return db_event_ticket_insert(c, a->hash, a->sub, a->role, a->principal, ticket_ttl_s,
                                  a->expires_at, sizeof a->expires_at);
}

static enum db_status ticket_redeem_fn(struct db_conn *c, void *arg)
{
    struct ticket_arg *a = arg;
    free(a->got_principal);
    a->got_principal = NULL;
    return db_event_ticket_redeem(c, a->hash, a->got_sub, sizeof a->got_sub, a->got_role,
                                  sizeof a->got_role, &a->got_principal);
}

/* What the ticket keeps of the principal besides sub and role: where its roles apply (the
 * token's projects by name, or platform admin), whether the identity provider signed it,
 * and the token's exp, jti and iat (the stream ends with the token, and a revoked token's
 * ticket is refused). Caller frees; NULL when out of memory. */
static char *principal_text(const struct api_principal *p)
{
    json_t *claims = json_array();
    if (claims == NULL)
        return NULL;
    for (int i = 0; i < p->nclaims; i++)
        json_array_append_new(claims, json_pack("{s:s,s:s}", "project", p->claims[i].project,
                                                "role", auth_role_name(p->claims[i].role)));
    json_t *o = json_pack("{s:b,s:b,s:o,s:I,s:s}", "platform_admin", p->platform_admin, "from_idp",
                          p->from_idp, "claims", claims, "exp", (json_int_t)p->exp, "jti", p->jti);
    if (o != NULL && p->iat != INT64_MIN)
        json_object_set_new(o, "iat", json_integer((json_int_t)p->iat));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The principal a redeemed ticket stands for: sub, its role claim and what
 * principal_text kept (a ticket minted before projects kept nothing: its role acts in the
 * project named default, an admin's everywhere). Returns 0, or -1 when the stored claims
 * make no sense (the ticket is refused). */
static int principal_restore(struct api_principal *p, const char *sub, const char *role,
                             const char *text)
{
    memset(p, 0, sizeof *p);
    snprintf(p->sub, sizeof p->sub, "%s", sub);
    p->role = auth_role_parse(role);
    json_t *o = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
    int rc = -1;
    if (!json_is_object(o))
        goto out;
    /* The token's lifetime and jti (a ticket minted before 0025 has none: refused, it
     * lived 60 s). */
    const json_t *exp = json_object_get(o, "exp"), *iat = json_object_get(o, "iat");
    const char *jti = json_string_value(json_object_get(o, "jti"));
    if (!json_is_integer(exp) || jti == NULL || (iat != NULL && !json_is_integer(iat)))
        goto out;
    p->exp = (int64_t)json_integer_value(exp);
    p->iat = iat ? (int64_t)json_integer_value(iat) : INT64_MIN;
    snprintf(p->jti, sizeof p->jti, "%s", jti);
    const json_t *claims = json_object_get(o, "claims");
    if (claims == NULL) { /* minted before projects */
        p->platform_admin = p->role == ROLE_ADMIN;
        if (p->role != ROLE_ADMIN && p->role != ROLE_NONE) {
            snprintf(p->claims[0].project, sizeof p->claims[0].project, "default");
            p->claims[0].role = p->role;
            p->nclaims = 1;
        }
        rc = p->role == ROLE_NONE ? -1 : 0;
        goto out;
    }
    if (!json_is_array(claims) || json_array_size(claims) > API_MAX_PROJECT_CLAIMS)
        goto out;
    p->platform_admin = json_is_true(json_object_get(o, "platform_admin"));
    p->from_idp = json_is_true(json_object_get(o, "from_idp"));
    size_t i;
    const json_t *c;
    json_array_foreach(claims, i, c)
    {
        const char *project = json_string_value(json_object_get(c, "project"));
        enum api_role r = auth_role_parse(json_string_value(json_object_get(c, "role")));
        if (project == NULL || !auth_project_name_ok(project) || r == ROLE_NONE)
            goto out;
        snprintf(p->claims[p->nclaims].project, sizeof p->claims[0].project, "%s", project);
        p->claims[p->nclaims++].role = r;
    }
    rc = 0;
out:
    json_decref(o);
    return rc;
}

enum MHD_Result api_event_tickets_create(struct api_req *r)
{
    unsigned char raw[TICKET_BYTES];
    if (util_random(raw, sizeof raw) != 0)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "no randomness available");
    char *ticket = util_b64url_encode(raw, sizeof raw);
    memset(raw, 0, sizeof raw);
    char *principal = principal_text(&r->principal);
    if (ticket == NULL || principal == NULL) {
        free(ticket);
        free(principal);
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
    }
    char hash[65];
    util_sha256_hex(ticket, strlen(ticket), hash);
    struct ticket_arg a = {
        hash, r->principal.sub, auth_role_name(r->principal.role), principal, "", "", "", NULL};
    enum db_status s = db_run(ticket_insert_fn, &a);
    free(principal);
    if (s != DB_ONE_RESULT) {
        free(ticket);
        return api_reply_db(r, s < 0 ? s : DB_HARD_ERROR);
    }
    json_t *body = json_pack("{s:s, s:s, s:i}", "ticket", ticket, "expires_at", a.expires_at,
                             "expires_in", ticket_ttl_s);
    memset(ticket, 0, strlen(ticket));
    free(ticket);
    char *text = body ? api_json_text(body) : NULL;
    json_decref(body);
    if (text == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "cannot encode the reply");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return api_queue(r, MHD_HTTP_CREATED, resp);
}

static int valid_ticket_text(const char *t)
{
    if (strlen(t) != TICKET_LEN)
        return 0;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_'))
            return 0;
    return 1;
}

int api_ticket_authenticate(struct api_req *r)
{
    static const char *const url_tokens[] = {"access_token", "token", "jwt", "bearer"};
    for (size_t i = 0; i < sizeof url_tokens / sizeof url_tokens[0]; i++) {
        if (MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, url_tokens[i]) != NULL) {
            api_reply_problem(r, API_ERR_INVALID_PARAMETER, url_tokens[i],
                              "a token is never accepted in the URL: send Authorization: "
                              "Bearer, or get a ticket from POST /v1/event-tickets");
            return -1;
        }
    }
    const char *ticket = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "ticket");
    if (ticket == NULL)
        return 0;
    if (api_header(r, MHD_HTTP_HEADER_AUTHORIZATION) != NULL) {
        api_reply_problem(r, API_ERR_INVALID_PARAMETER, "ticket",
                          "send either Authorization or a ticket, not both");
        return -1;
    }
    if (!valid_ticket_text(ticket)) {
        api_reply_problem(r, API_ERR_INVALID_TICKET, NULL,
                          "the ticket is not one POST /v1/event-tickets issued");
        return -1;
    }
    char hash[65];
    util_sha256_hex(ticket, strlen(ticket), hash);
    struct ticket_arg a = {hash, NULL, NULL, NULL, "", "", "", NULL};
    enum db_status s = db_run(ticket_redeem_fn, &a);
    if (s < 0) {
        free(a.got_principal);
        api_reply_db(r, s);
        return -1;
    }
    /* The grants are resolved from these claims and the subject's memberships as for a
     * bearer token (http.c), so the stream sees what the minting request could see. */
    int ok = s == DB_ONE_RESULT &&
             principal_restore(&r->principal, a.got_sub, a.got_role, a.got_principal) == 0;
    free(a.got_principal);
    if (!ok) {
        api_reply_problem(r, API_ERR_INVALID_TICKET, NULL,
                          "the ticket is unknown, expired or already used; get a new one "
                          "from POST /v1/event-tickets");
        return -1;
    }
    r->authenticated = 1;
    return 1;
}

/* ---- the stream ---- */

static int valid_types(const char *v)
{
    char buf[LIST_MAX_VALUE + 1];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    int n = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
        if (ev_type_index(t) < 0)
            return 0;
    return n > 0 && v[strlen(v) - 1] != ',' && v[0] != ',' && strstr(v, ",,") == NULL;
}

enum { F_TYPES, F_POOL, F_HOST, F_LAST_EVENT_ID, F_TICKET, F_PROJECT };
static const struct list_filter stream_params[] = {
    [F_TYPES] = {"types", valid_types, "a comma-separated list of event types, each one of:"
#define EVENT_TYPE(name) " " name
#include "db/event_types.def"
#undef EVENT_TYPE
    },
    [F_POOL] = {"pool_id", api_valid_uuid, "a pool id (UUID)"},
    [F_HOST] = {"host_id", api_valid_uuid, "a host id (UUID)"},
    [F_LAST_EVENT_ID] = {"last_event_id", api_valid_seq, "a whole number of 0 or more"},
    [F_TICKET] = {"ticket", NULL, NULL}, /* redeemed before the handler runs */
    [F_PROJECT] = {"project", NULL, "a project name or id"},
};

/* The event hub's subscriber is the response's content; MHD suspends the connection
 * while it is parked and resumes it when the hub wakes it. */

static void stream_park(void *conn)
{
    MHD_suspend_connection(conn);
}

static void stream_wake(void *conn)
{
    MHD_resume_connection(conn);
}

static const struct ev_sub_ops stream_ops = {stream_park, stream_wake};

/* MHD_ContentReaderCallback; cls is the subscriber. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = ev_sub_read(cls, buf, max);
    return n == EV_SUB_END ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

/* MHD_ContentReaderFreeCallback: the connection is done with the subscriber. */
static void stream_free(void *cls)
{
    ev_sub_close(cls);
    ev_sub_unref(cls);
}

/* The request ended: adds the stream's figures to its access-log line (line may be
 * NULL) and drops the request's reference. */
static void stream_done(void *cls, json_t *line)
{
    struct ev_sub *s = cls;
    if (line != NULL) {
        json_object_set_new(line, "events_sent", json_integer((json_int_t)ev_sub_sent(s)));
        json_object_set_new(line, "stream_end", json_string(ev_sub_end_reason(s)));
    }
    ev_sub_unref(s);
}

static void lower_uuid(const char *in, char out[37])
{
    out[0] = '\0';
    if (in == NULL)
        return;
    for (int i = 0; i < 36 && in[i]; i++)
        out[i] = (char)((in[i] >= 'A' && in[i] <= 'F') ? in[i] + 32 : in[i]);
    out[36] = '\0';
}

enum MHD_Result api_events_stream(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, NULL, stream_params,
                       (int)(sizeof stream_params / sizeof stream_params[0]), &q) != 0)
        return MHD_YES;
    api_list_query_free(&q); /* frees the cursor only; values stay MHD's */
    const char *hdr = api_header(r, "Last-Event-ID");
    if (hdr != NULL && !api_valid_seq(hdr))
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "Last-Event-ID",
                                 "Last-Event-ID must be a whole number of 0 or more");
    const char *from = hdr != NULL ? hdr : q.values[F_LAST_EVENT_ID];
    int64_t after = from != NULL ? strtoll(from, NULL, 10) : -1;

    struct ev_filter f;
    memset(&f, 0, sizeof f);
    if (q.values[F_TYPES] != NULL) {
        char buf[LIST_MAX_VALUE + 1];
        snprintf(buf, sizeof buf, "%s", q.values[F_TYPES]);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            f.types |= 1u << ev_type_index(t);
    }
    lower_uuid(q.values[F_POOL], f.pool_id);
    lower_uuid(q.values[F_HOST], f.host_id);
    /* What the caller may read (a platform admin: every event, the platform's own too),
     * or the one project it asked for (one it may read). */
    char only[40];
    f.projects = api_scope_read(r);
    if (q.values[F_PROJECT] != NULL) {
        char id[37];
        if (api_filter_project(r, q.values[F_PROJECT], id) != 0)
            return MHD_YES;
        snprintf(only, sizeof only, "{%s}", id);
        f.projects = only;
    }

    struct MHD_Response *resp;
    struct ev_sub *sub = NULL;
    if (strcmp(r->method, "HEAD") == 0) {
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        struct ev_cred cred = {r->principal.exp, r->principal.iat, "", ""};
        snprintf(cred.jti, sizeof cred.jti, "%s", r->principal.jti);
        snprintf(cred.sub, sizeof cred.sub, "%s", r->principal.sub);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        sub = ev_sub_open(&f, after, ci != NULL ? (int)ci->connect_fd : -1, r->request_id, &cred,
                          &stream_ops, r->conn);
        if (sub == NULL)
            return api_reply_problem(r, API_ERR_DATABASE_UNAVAILABLE, NULL,
                                     "the event stream is not available right now; retry "
                                     "shortly");
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, sub,
                                                 stream_free);
        if (resp == NULL) {
            ev_sub_close(sub);
            ev_sub_unref(sub);
            return MHD_NO;
        }
        ev_sub_hold(sub); /* the response's, dropped by stream_free; the request's: stream_done */
        r->stream = sub;
        r->stream_done = stream_done;
    }
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return api_queue(r, MHD_HTTP_OK, resp);
}
