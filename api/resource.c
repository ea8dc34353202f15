/* resource.c — see resource.h. */
#include "api/resource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/host_command.h"
#include "api/list.h"
#include "api/scope.h"
#include "common/log.h"
#include "common/util.h"
#include "service/audit.h"

const char *api_path_id(struct api_req *r, const char *what)
{
    const char *id = api_param(r, 0);
    if (!api_valid_uuid(id)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", what);
        return NULL;
    }
    return id;
}

int api_seal_new(struct api_req *r, const char *what, const char *secret, const unsigned char *pt,
                 size_t ptlen, struct api_sealed *out, enum MHD_Result *ret)
{
    const struct crypt_key *mk = crypt_master();
    memset(out, 0, sizeof *out);
    if (mk == NULL) {
        log_msg(LOG_ERROR, "%s: no master key loaded", what);
        *ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "the server has no master key");
        return -1;
    }
    util_uuid4(out->id);
    out->kid = mk->kid;
    if (crypt_seal(mk, pt, ptlen, (const unsigned char *)out->id, strlen(out->id), out->nonce,
                   &out->ct, &out->ctlen) != 0) {
        log_msg(LOG_ERROR, "%s: encryption failed", what);
        *ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "%s could not be sealed", secret);
        return -1;
    }
    return 0;
}

struct delete_arg {
    struct api_req *r;
    const char *id;
    const struct api_delete_def *d;
    int in_use;
};

static enum db_status delete_fn(struct db_conn *c, void *arg)
{
    struct delete_arg *a = arg;
    enum db_status s = a->d->del(c, a->id);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        a->in_use = 1;
    if (s <= 0)
        return s;
    return api_audit(c, a->r, a->d->action, a->d->what, a->id, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result api_delete_resource(struct api_req *r, const char *id,
                                    const struct api_delete_def *d)
{
    struct delete_arg a = {r, id, d, 0};
    enum db_status s = db_run_tx(delete_fn, &a);
    if (a.in_use)
        return api_reply_problem(r, d->in_use, NULL, "%s", d->in_use_detail);
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", d->what);
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

struct delete_in_arg {
    struct api_req *r;
    const char *id, *scope;
    const struct api_delete_in_def *d;
    int in_use;
};

static enum db_status delete_in_fn(struct db_conn *c, void *arg)
{
    struct delete_in_arg *a = arg;
    char project_id[37];
    enum db_status s = a->d->del_in(c, a->id, a->scope, project_id);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        a->in_use = 1;
    if (s <= 0)
        return s;
    struct actor who;
    api_actor(a->r, &who);
    return svc_audit_row(c, &who, a->d->action, a->d->what, a->id, MHD_HTTP_NO_CONTENT, NULL,
                         project_id, NULL, NULL);
}

enum MHD_Result api_delete_resource_in(struct api_req *r, const char *id,
                                       const struct api_delete_in_def *d)
{
    struct delete_in_arg a = {r, id, api_scope_route(r), d, 0};
    enum db_status s = db_run_tx(delete_in_fn, &a);
    if (a.in_use)
        return api_reply_problem(r, d->in_use, NULL, "%s", d->in_use_detail);
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_scope_refuse(r, d->what, id, d->what);
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

struct get_arg {
    const char *id;
    api_doc_fetch fetch;
    api_doc_fetch_in fetch_in;
    const char *scope;
    char *doc;
};

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct get_arg *a = arg;
    return a->fetch_in ? a->fetch_in(c, a->id, a->scope, &a->doc) : a->fetch(c, a->id, &a->doc);
}

static char *fetch_doc(struct api_req *r, struct get_arg *a, const char *what);

char *api_fetch_document(struct api_req *r, const char *id, const char *what, api_doc_fetch fetch)
{
    struct get_arg a = {id, fetch, NULL, NULL, NULL};
    return fetch_doc(r, &a, what);
}

char *api_fetch_document_in(struct api_req *r, const char *id, const char *what,
                            api_doc_fetch_in fetch)
{
    struct get_arg a = {id, NULL, fetch, api_scope_read(r), NULL};
    return fetch_doc(r, &a, what);
}

enum MHD_Result api_get_document_in(struct api_req *r, const char *id, const char *what,
                                    api_doc_fetch_in fetch)
{
    char *doc = api_fetch_document_in(r, id, what, fetch);
    return doc ? api_reply_text(r, MHD_HTTP_OK, doc, NULL) : MHD_YES;
}

static char *fetch_doc(struct api_req *r, struct get_arg *arg, const char *what)
{
    struct get_arg a = *arg;
    enum db_status s = db_run(get_fn, &a);
    if (s < 0) {
        free(a.doc); /* a fetch may fill it before a later statement fails */
        api_reply_db(r, s);
        return NULL;
    }
    if (a.doc == NULL)
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no %s has this id", what);
    return a.doc;
}

enum MHD_Result api_get_document(struct api_req *r, const char *id, const char *what,
                                 api_doc_fetch fetch)
{
    char *doc = api_fetch_document(r, id, what, fetch);
    return doc ? api_reply_text(r, MHD_HTTP_OK, doc, NULL) : MHD_YES;
}

struct doc_tx {
    db_tx_fn fn;
    void *arg;
    char **doc;
};

static enum db_status doc_tx_fn(struct db_conn *c, void *arg)
{
    struct doc_tx *t = arg;
    free(*t->doc); /* a retried transaction starts over */
    *t->doc = NULL;
    return t->fn(c, t->arg);
}

enum db_status api_run_tx_doc(db_tx_fn fn, void *arg, char **doc)
{
    struct doc_tx t = {fn, arg, doc};
    enum db_status s = db_run_tx(doc_tx_fn, &t);
    if (s < 0) {
        free(*doc); /* rendered, then rolled back: never sent */
        *doc = NULL;
    }
    return s;
}

const struct api_violation *api_violation_of(struct db_conn *c, enum db_status s,
                                             const struct api_violation *unique,
                                             const struct api_violation *fk)
{
    if (s != DB_HARD_ERROR)
        return NULL;
    if (unique != NULL && db_conn_unique_violation(c))
        return unique;
    if (fk != NULL && db_conn_fk_violation(c))
        return fk;
    return NULL;
}

enum MHD_Result api_reply_write_error(struct api_req *r, const struct api_violation *v,
                                      enum db_status s)
{
    if (v != NULL)
        return api_reply_problem(r, v->code, v->field, "%s", v->detail);
    return api_reply_db(r, s);
}

/* ---- documents: create, replace with If-Match ---- */

struct document_arg {
    struct api_req *r;
    const struct api_document_def *d;
    const char *id;    /* replace */
    const char *scope; /* replace: api_scope_route */
    json_t *spec;
    char *doc;
    char new_id[37];     /* create */
    char project_id[37]; /* create: the project; replace: the one the body named, or "" */
    const struct api_violation *violation;
    int precondition_failed, absent, moved;
    enum plan_cmd_refusal limited; /* replace: refused by the project's limits */
    struct svc_host_limit limit;
};

/* The audit event of a document write: action "<what>.<verb>". */
static enum db_status audit_document(struct db_conn *c, const struct document_arg *a,
                                     const char *verb, const char *id, unsigned status)
{
    char action[64];
    snprintf(action, sizeof action, "%s.%s", a->d->what, verb);
    return api_audit(c, a->r, action, a->d->what, id, status);
}

/* The audit row of a replace: the members that changed, before and after (a pool's
 * stop_command, a brief's budget, …); bookkeeping members left out. */
static enum db_status audit_update(struct db_conn *c, const struct document_arg *a,
                                   const char *before_doc)
{
    static const char *const ignore[] = {"revision", "gate_version", "updated_at", "etag", NULL};
    char *before = NULL, *after = NULL;
    if (svc_audit_diff(before_doc, a->doc, ignore, NULL, &before, &after) != 0)
        return DB_HARD_ERROR; /* fail closed: a change is never recorded without its diff */
    char action[64];
    snprintf(action, sizeof action, "%s.update", a->d->what);
    struct actor who;
    api_actor(a->r, &who);
    enum db_status s =
        svc_audit_change(c, &who, action, a->d->what, a->id, NULL, MHD_HTTP_OK, before, after);
    free(before);
    free(after);
    return s;
}

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct document_arg *a = arg;
    enum db_status s =
        a->d->insert(c, a->spec, a->project_id, a->r->principal.sub, &a->doc, a->new_id);
    a->violation =
        s == DB_NO_RESULTS ? a->d->refused : api_violation_of(c, s, a->d->unique, a->d->fk);
    if (s <= 0)
        return s;
    return audit_document(c, a, "create", a->new_id, MHD_HTTP_CREATED);
}

/* Prepares the document, then runs fn in a transaction. Returns 1 when it committed (the
 * caller answers), 0 after replying (400, or the write's failure). */
static int write_document(struct document_arg *a, db_tx_fn fn)
{
    a->spec = a->d->prepare(a->r);
    if (a->spec == NULL)
        return 0;
    enum db_status s = api_run_tx_doc(fn, a, &a->doc);
    json_decref(a->spec);
    if (s < 0) {
        api_reply_write_error(a->r, a->violation, s);
        return 0;
    }
    return 1;
}

/* A document read with GET carries "project": {"id": …, "name": …}; a body that sends it
 * back names the project by that id (a string is a name or an id already). */
static void project_member_as_ref(struct api_req *r)
{
    json_t *p = json_object_get(r->json, "project");
    const char *id = json_string_value(json_object_get(p, "id"));
    if (json_is_object(p) && id != NULL)
        json_object_set_new(r->json, "project", json_string(id));
}

enum MHD_Result api_create_document(struct api_req *r, const struct api_document_def *d)
{
    struct document_arg a = {.r = r, .d = d};
    project_member_as_ref(r);
    if (api_create_project(r, api_route_roles(r), a.project_id, NULL) != 0 ||
        !write_document(&a, create_fn))
        return MHD_YES;
    if (a.doc == NULL) /* refused: nothing written */
        return api_reply_write_error(r, a.violation, DB_HARD_ERROR);
    char location[160];
    snprintf(location, sizeof location, "%s/%s", d->collection, a.new_id);
    return api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
}

/* Whether the document's "project" is project_id. */
static int document_in(const char *doc, const char *project_id)
{
    json_t *j = json_loads(doc, 0, NULL);
    const char *id = json_string_value(json_object_get(json_object_get(j, "project"), "id"));
    int same = id != NULL && !strcmp(id, project_id);
    json_decref(j);
    return same;
}

static enum db_status replace_fn(struct db_conn *c, void *arg)
{
    struct document_arg *a = arg;
    a->violation = NULL;
    a->precondition_failed = a->absent = a->moved = 0;
    a->limited = PLAN_CMD_OK;
    char *cur = NULL;
    enum db_status s = a->d->get(c, a->id, a->scope, 1, &cur);
    a->absent = s == DB_NO_RESULTS;
    if (s <= 0) {
        free(cur);
        return s;
    }
    /* The ETag a GET of this resource returns: the hash of the same document text. */
    char etag[API_ETAG_LEN];
    api_etag_of(cur, strlen(cur), etag);
    a->moved = a->project_id[0] != '\0' && !document_in(cur, a->project_id);
    if (a->moved || !api_etag_matches(api_header(a->r, MHD_HTTP_HEADER_IF_MATCH), etag, 0)) {
        a->precondition_failed = !a->moved;
        free(cur);
        return DB_NO_RESULTS; /* nothing written */
    }
    if (a->d->limit != NULL && ((s = a->d->limit(c, a->id, a->spec, &a->limited, &a->limit)) < 0 ||
                                a->limited != PLAN_CMD_OK)) {
        free(cur);
        return s < 0 ? s : DB_NO_RESULTS; /* nothing written */
    }
    s = a->d->update(c, a->id, a->spec, &a->doc);
    a->violation =
        s == DB_NO_RESULTS ? a->d->refused : api_violation_of(c, s, a->d->unique, a->d->fk);
    if (s > 0)
        s = audit_update(c, a, cur);
    free(cur);
    return s;
}

enum MHD_Result api_replace_document(struct api_req *r, const struct api_document_def *d)
{
    struct document_arg a = {.r = r, .d = d, .id = api_path_id(r, d->what)};
    if (a.id == NULL)
        return MHD_YES;
    if (api_header(r, MHD_HTTP_HEADER_IF_MATCH) == NULL)
        return api_reply_problem(r, API_ERR_PRECONDITION_REQUIRED, NULL,
                                 "send If-Match with the ETag of the %s you read, so that "
                                 "concurrent edits are not lost",
                                 d->what);
    project_member_as_ref(r);
    if (json_object_get(r->json, "project") != NULL &&
        api_create_project(r, api_route_roles(r), a.project_id, NULL) != 0)
        return MHD_YES;
    a.scope = api_scope_route(r);
    if (!write_document(&a, replace_fn))
        return MHD_YES;
    if (a.absent)
        return api_scope_refuse(r, d->what, a.id, d->what);
    if (a.moved)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "project",
                                 "a %s stays in its project: project must name the one it "
                                 "belongs to (or be left out)",
                                 d->what);
    if (a.precondition_failed)
        return api_reply_problem(r, API_ERR_PRECONDITION_FAILED, NULL,
                                 "the %s changed since you read it; GET it again and retry",
                                 d->what);
    if (a.limited != PLAN_CMD_OK)
        return api_reply_host_limit(r, a.limited, &a.limit, NULL, NULL);
    if (a.doc == NULL) /* refused: nothing written */
        return api_reply_write_error(r, a.violation, DB_HARD_ERROR);
    r->etag_on_write = 1;
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
