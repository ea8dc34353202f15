/* events.c — see events.h. */
#include "api/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "api/role.h"
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
    const char *hash, *sub, *role;
    char expires_at[40];
    char got_sub[129], got_role[16];
};

static enum db_status ticket_insert_fn(struct db_conn *c, void *arg)
{
    struct ticket_arg *a = arg;
    return db_event_ticket_insert(c, a->hash, a->sub, a->role, ticket_ttl_s, a->expires_at,
                                  sizeof a->expires_at);
}

static enum db_status ticket_redeem_fn(struct db_conn *c, void *arg)
{
    struct ticket_arg *a = arg;
    return db_event_ticket_redeem(c, a->hash, a->got_sub, sizeof a->got_sub, a->got_role,
                                  sizeof a->got_role);
}

enum MHD_Result api_event_tickets_create(struct api_req *r)
{
    unsigned char raw[TICKET_BYTES];
    if (util_random(raw, sizeof raw) != 0)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "no randomness available");
    char *ticket = util_b64url_encode(raw, sizeof raw);
    memset(raw, 0, sizeof raw);
    if (ticket == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
    char hash[65];
    util_sha256_hex(ticket, strlen(ticket), hash);
    struct ticket_arg a = {hash, r->principal.sub, auth_role_name(r->principal.role), "", "", ""};
    enum db_status s = db_run(ticket_insert_fn, &a);
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
    struct ticket_arg a = {hash, NULL, NULL, "", "", ""};
    enum db_status s = db_run(ticket_redeem_fn, &a);
    if (s < 0) {
        api_reply_db(r, s);
        return -1;
    }
    enum api_role role = s == DB_ONE_RESULT ? auth_role_parse(a.got_role) : ROLE_NONE;
    if (role == ROLE_NONE) {
        api_reply_problem(r, API_ERR_INVALID_TICKET, NULL,
                          "the ticket is unknown, expired or already used; get a new one "
                          "from POST /v1/event-tickets");
        return -1;
    }
    snprintf(r->principal.sub, sizeof r->principal.sub, "%s", a.got_sub);
    r->principal.role = role;
    r->principal.platform_admin = role == ROLE_ADMIN; /* FIXME(projects): the ticket's grants */
    if (role != ROLE_ADMIN) {
        snprintf(r->principal.claims[0].project, sizeof r->principal.claims[0].project, "default");
        r->principal.claims[0].role = role;
        r->principal.nclaims = 1;
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

enum { F_TYPES, F_POOL, F_HOST, F_LAST_EVENT_ID, F_TICKET };
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

    struct MHD_Response *resp;
    struct ev_sub *sub = NULL;
    if (strcmp(r->method, "HEAD") == 0) {
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        sub = ev_sub_open(&f, after, r->request_id, r->principal.sub, &stream_ops, r->conn);
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
