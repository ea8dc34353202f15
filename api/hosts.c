/* hosts.c — hosts over SSH and their jobs. Registration checks the address policy at the
 * door (the worker checks it again before connecting); provisioning queues a durable job
 * and answers 202 with its location. */
#include "api/hosts.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/host_command.h"
#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "common/netpolicy.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || strchr("._-", s[i])))
            return 0;
    return 1;
}
static int valid_address(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}
int api_valid_login_user(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32 || !(islower((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_' ||
              s[i] == '-'))
            return 0;
    return 1;
}
int api_valid_host_key(const char *s)
{
    if (strncmp(s, "SHA256:", 7) != 0 || strlen(s) != 7 + 43)
        return 0;
    for (const char *p = s + 7; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '+' && *p != '/')
            return 0;
    return 1;
}
static int valid_label_key(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("._-/", s[i])))
            return 0;
    return 1;
}

/* The bodies, as parsed (borrowed from the request). */
struct host_in {
    const char *name, *address, *user, *credential_id, *pool_id, *host_key_sha256;
    int trust_on_first_use;
    json_int_t port;
    const json_t *labels; /* stored whole */
};
struct provision_in {
    const char *stack_id;
};

#define TO(m) SPEC_TO(struct host_in, m)
static const struct spec_field label_value[] = {
    {"", SPEC_STRING, 0, 0, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
};
#define LABELS                                                                                    \
    {                                                                                             \
        "labels", SPEC_MAP, 0, 0, 32, valid_label_key, "label names of letters, digits and ._-/", \
            NULL, label_value, TO(labels)                                                         \
    }
static const struct spec_field host_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 63, valid_name,
     "1-63 lowercase letters, digits and ._- starting with a letter or digit", NULL, NULL,
     TO(name)},
    {"address", SPEC_STRING, SPEC_REQUIRED, 2, 45, valid_address,
     "a literal IPv4 or IPv6 address (no host names)", NULL, NULL, TO(address)},
    {"port", SPEC_INTEGER, 0, 1, 65535, NULL, NULL, NULL, NULL, TO(port)},
    {"user", SPEC_STRING, SPEC_REQUIRED, 1, 32, api_valid_login_user, "a login name like ubuntu",
     NULL, NULL, TO(user)},
    {"credential_id", SPEC_STRING, SPEC_REQUIRED, 36, 36, api_valid_uuid, "a credential id", NULL,
     NULL, TO(credential_id)},
    {"pool_id", SPEC_STRING, SPEC_REQUIRED, 36, 36, api_valid_uuid, "a pool id", NULL, NULL,
     TO(pool_id)},
    {"host_key_sha256", SPEC_STRING, 0, 50, 50, api_valid_host_key,
     "SHA256:<43 base64 characters>, as ssh-keygen -l prints it", NULL, NULL, TO(host_key_sha256)},
    {"trust_on_first_use", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, TO(trust_on_first_use)},
    LABELS,
    SPEC_END,
};
static const struct spec_field patch_spec[] = {
    LABELS,
    {"pool_id", SPEC_STRING, 0, 36, 36, api_valid_uuid, "a pool id", NULL, NULL, TO(pool_id)},
    {"credential_id", SPEC_STRING, 0, 36, 36, api_valid_uuid, "a credential id", NULL, NULL,
     TO(credential_id)},
    SPEC_END,
};
static const struct spec_field provision_spec[] = {
    {"stack_id", SPEC_STRING, SPEC_REQUIRED, 36, 36, api_valid_uuid, "a stack id", NULL, NULL,
     SPEC_TO(struct provision_in, stack_id)},
    SPEC_END,
};

/* Labels as stored: the object's text, or fallback when none were given (caller frees). */
static char *labels_text(const json_t *labels, const char *fallback)
{
    if (labels != NULL)
        return json_dumps(labels, JSON_COMPACT);
    return fallback ? strdup(fallback) : NULL;
}

/* ---- register ---- */

enum MHD_Result api_hosts_create(struct api_req *r)
{
    struct host_in in = {.port = 22};
    if (api_spec_parse(r, r->json, host_spec, &in) != 0)
        return MHD_YES;
    /* The host key is pinned now, or trusted on first use only when asked for in words. */
    if (in.host_key_sha256 == NULL && !in.trust_on_first_use)
        return api_reply_problem(r, API_ERR_MISSING_FIELD, "host_key_sha256",
                                 "give host_key_sha256 (the host's key, as ssh-keygen -l prints "
                                 "it) or \"trust_on_first_use\": true (record the key the host "
                                 "presents on first contact and pin it from then on)");
    if (in.host_key_sha256 != NULL && in.trust_on_first_use)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "trust_on_first_use",
                                 "give host_key_sha256 or \"trust_on_first_use\": true, not both");
    char port[16];
    snprintf(port, sizeof port, "%lld", (long long)in.port);
    char *labels_json = labels_text(in.labels, "{}");
    struct actor who;
    api_actor(r, &who);
    struct svc_host_new h = {.who = &who,
                             .in = {in.name, in.address, port, in.user, in.credential_id,
                                    in.pool_id, in.host_key_sha256, labels_json, r->principal.sub}};
    enum db_status s = labels_json ? svc_host_register(&h) : DB_HARD_ERROR;
    free(labels_json);
    switch (h.refused) {
    case PLAN_CMD_OK: break;
    case PLAN_CMD_ADDRESS_REFUSED:
        return api_reply_problem(r, API_ERR_ADDRESS_NOT_ALLOWED, "address", "%s: %s", in.address,
                                 net_target_why((enum net_target_verdict)h.address));
    case PLAN_CMD_NAME_TAKEN:
        return api_reply_problem(r, API_ERR_ALREADY_EXISTS, "name",
                                 "a host with this name already exists in the pool's project");
    case PLAN_CMD_FORBIDDEN:
        return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "pool_id",
                                 "your role in the pool's project may not register hosts");
    case PLAN_CMD_CREDENTIAL_NOT_ALLOWED:
    case PLAN_CMD_QUOTA_EXCEEDED:
    case PLAN_CMD_BUDGET_EXHAUSTED:
        return api_reply_host_limit(r, h.refused, &h.limit, in.user, in.address);
    default:
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "credential_id",
                                 "credential_id and pool_id must name an existing credential "
                                 "and pool");
    }
    if (s < 0)
        return api_reply_db(r, s);
    char location[96];
    snprintf(location, sizeof location, "/v1/hosts/%s", h.id);
    return api_reply_text(r, MHD_HTTP_CREATED, h.doc, location);
}

/* ---- read ---- */

enum MHD_Result api_hosts_get(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    return id ? api_get_document_in(r, id, "host", db_host_get) : MHD_YES;
}

static int valid_state(const char *v)
{
    return plan_host_state_parse(v) >= 0;
}
static int valid_label_filter(const char *v)
{
    const char *eq = strchr(v, '=');
    if (eq == NULL || eq == v || strlen(eq + 1) > 128)
        return 0;
    char key[64];
    size_t n = (size_t)(eq - v);
    if (n >= sizeof key)
        return 0;
    memcpy(key, v, n);
    key[n] = '\0';
    return valid_label_key(key);
}
static int valid_bool(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "false");
}
static int valid_model_key(const char *v)
{
    size_t n = strlen(v);
    if (n < 2 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)v[i]) || isdigit((unsigned char)v[i]) || v[i] == '_'))
            return 0;
    return 1;
}

static const struct list_filter host_filters[] = {
    {"state", valid_state, "a host state"},
    {"pool_id", api_valid_uuid, "a pool id"},
    {"label", valid_label_filter, "KEY=VALUE"},
    {"gpu_model", valid_model_key, "a GPU model key"},
    {"stale", valid_bool, "true or false (not seen for 10 minutes)"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    char *label_json = NULL;
    if (q->values[2] != NULL) {
        const char *eq = strchr(q->values[2], '=');
        json_t *o = json_object();
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - q->values[2]), q->values[2]);
        json_object_set_new(o, key, json_string(eq + 1));
        label_json = json_dumps(o, JSON_COMPACT);
        json_decref(o);
    }
    struct db_host_filter f = {q->values[0], q->values[1], label_json, q->values[3], q->values[4],
                               q->after,     q->limit + 1, q->scope,   q->values[5]};
    enum db_status s = db_host_list(c, &f, page);
    free(label_json);
    return s;
}

static const struct list_def host_list = {"host", host_filters, 6,        api_valid_seq,
                                          NULL,   NULL,         list_page};

enum MHD_Result api_hosts_list(struct api_req *r)
{
    return api_list_serve(r, &host_list);
}

/* ---- change / delete / provision ---- */

enum MHD_Result api_hosts_patch(struct api_req *r)
{
    struct host_in in = {0};
    const char *id = api_path_id(r, "host");
    if (id == NULL || api_spec_parse(r, r->json, patch_spec, &in) != 0)
        return MHD_YES;
    char *labels_json = labels_text(in.labels, NULL);
    if (in.labels != NULL && labels_json == NULL)
        return api_reply_db(r, DB_HARD_ERROR);
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_MOVE_POOL,
                               .host_id = id,
                               .pool_id = in.pool_id,
                               .credential_id = in.credential_id,
                               .labels_json = labels_json};
    enum MHD_Result ret = api_host_command(r, &cmd);
    free(labels_json);
    return ret;
}

enum MHD_Result api_hosts_delete(struct api_req *r)
{
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_DELETE, .host_id = api_path_id(r, "host")};
    return cmd.host_id ? api_host_command(r, &cmd) : MHD_YES;
}

enum MHD_Result api_hosts_provision(struct api_req *r)
{
    struct provision_in in = {NULL};
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_PROVISION, .host_id = api_path_id(r, "host")};
    if (cmd.host_id == NULL || api_spec_parse(r, r->json, provision_spec, &in) != 0)
        return MHD_YES;
    cmd.stack_id = in.stack_id;
    return api_host_command(r, &cmd);
}

/* ---- jobs ---- */

struct job_arg {
    struct api_req *r;
    const char *id, *scope;
    char *doc;
    int was_final, hidden;
};

enum MHD_Result api_jobs_get(struct api_req *r)
{
    const char *id = api_path_id(r, "job");
    return id ? api_get_document_in(r, id, "job", db_job_get) : MHD_YES;
}

static int valid_job_state(const char *v)
{
    return !strcmp(v, "queued") || !strcmp(v, "running") || !strcmp(v, "succeeded") ||
           !strcmp(v, "failed") || !strcmp(v, "cancelled");
}
static int valid_job_kind(const char *v)
{
    return !strcmp(v, "provision") || !strcmp(v, "gate") || !strcmp(v, "diagnostics") ||
           !strcmp(v, "stop") || !strcmp(v, "drill");
}

static const struct list_filter job_filters[] = {
    {"state", valid_job_state, "queued, running, succeeded, failed or cancelled"},
    {"kind", valid_job_kind, "provision, gate, diagnostics, stop or drill"},
    {"host_id", api_valid_uuid, "a host id"},
    {"project", NULL, "a project name or id"},
};

static enum db_status job_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_job_filter f = {q->values[0], q->values[1], q->values[2], q->after,
                              q->limit + 1, q->scope,     q->values[3]};
    return db_job_list(c, &f, page);
}

static const struct list_def job_list = {"job", job_filters, 4,       api_valid_seq,
                                         NULL,  NULL,        job_page};

enum MHD_Result api_jobs_list(struct api_req *r)
{
    return api_list_serve(r, &job_list);
}

static enum db_status cancel_fn(struct db_conn *c, void *arg)
{
    struct job_arg *a = arg;
    enum db_status s = db_job_cancel(c, a->id, a->scope, &a->doc, &a->was_final, &a->hidden);
    if (s >= 0 && a->hidden) /* another project's job: audited, answered as unknown */
        return api_audit(c, a->r, "job.denied", "job", a->id, MHD_HTTP_NOT_FOUND);
    if (s <= 0 || a->was_final)
        return s;
    return api_audit(c, a->r, "job.cancel", "job", a->id, MHD_HTTP_ACCEPTED);
}

enum MHD_Result api_jobs_cancel(struct api_req *r)
{
    struct job_arg a = {.r = r, .id = api_path_id(r, "job"), .scope = api_scope_route(r)};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = api_run_tx_doc(cancel_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no job has this id");
    if (a.was_final) {
        free(a.doc);
        return api_reply_problem(r, API_ERR_JOB_FINISHED, NULL,
                                 "the job has already finished; nothing to cancel");
    }
    char location[96];
    snprintf(location, sizeof location, "/v1/jobs/%s", a.id);
    return api_reply_text(r, MHD_HTTP_ACCEPTED, a.doc, location);
}
