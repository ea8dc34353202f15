/* stacks.c — pinned software stacks. Every string that may later reach a remote command
 * (image, versions, paths, start-up command and environment) is held to a strict pattern
 * here; the provisioner quotes it again when it builds a command. */
#include "api/stacks.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/stacks.h"
#include "planner/stack.h"
#include "service/audit.h"

static int charset(const char *s, const char *extra)
{
    if (!isalnum((unsigned char)s[0]))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
            return 0;
    return 1;
}
static int digits_dots(const char *s, int min_parts, int max_parts, int first_len)
{
    int parts = 0;
    while (*s) {
        size_t n = strspn(s, "0123456789");
        if (n == 0 || n > 3 || (parts == 0 && first_len && (int)n != first_len))
            return 0;
        parts++;
        s += n;
        if (*s == '.')
            s++;
        else if (*s)
            return 0;
        else
            break;
        if (*s == '\0')
            return 0; /* trailing dot */
    }
    return parts >= min_parts && parts <= max_parts;
}
static int valid_os_image(const char *s)
{
    return charset(s, "._:/+-");
}
static int valid_branch(const char *s)
{
    return strlen(s) == 3 && strspn(s, "0123456789") == 3;
}
static int valid_driver(const char *s)
{
    return digits_dots(s, 2, 3, 3);
}
static int valid_cuda(const char *s)
{
    return digits_dots(s, 2, 3, 0) && strspn(s, "0123456789") <= 2;
}
static int valid_fw_name(const char *s)
{
    return charset(s, "._-");
}
static int valid_fw_version(const char *s)
{
    return charset(s, ".+_-");
}
static int valid_revision(const char *s)
{
    return charset(s, "._/-");
}
static int valid_workdir(const char *s)
{
    if (s[0] != '/')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr("._/-", *s) == NULL)
            return 0;
    return 1;
}
static int valid_env_key(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || !(isupper((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (; *s; s++)
        if (!(isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* The stack is stored whole (the planner checks it): its fields are validated only. */
static const struct spec_field framework_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 64, valid_fw_name, "letters, digits and ._-", NULL,
     NULL, SPEC_NONE},
    {"version", SPEC_STRING, SPEC_REQUIRED, 1, 64, valid_fw_version, "letters, digits and .+_-",
     NULL, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field command_item[] = {
    {"", SPEC_STRING, 0, 1, 1024, NULL, NULL, NULL, NULL, SPEC_NONE},
};
static const struct spec_field env_value[] = {
    {"", SPEC_STRING, 0, 0, 4096, NULL, NULL, NULL, NULL, SPEC_NONE},
};
static const struct spec_field startup_spec[] = {
    {"command", SPEC_ARRAY, 0, 1, 64, NULL, NULL, NULL, command_item, SPEC_NONE},
    {"env", SPEC_MAP, 0, 0, 64, valid_env_key, "names like MAX_MODEL_LEN (A-Z, 0-9, _)", NULL,
     env_value, SPEC_NONE},
    {"working_dir", SPEC_STRING, 0, 1, 512, valid_workdir,
     "an absolute path of letters, digits and ._/-", NULL, NULL, SPEC_NONE},
    {"port", SPEC_INTEGER, 0, 1, 65535, NULL, NULL, NULL, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field stack_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"os_image", SPEC_STRING, SPEC_REQUIRED, 1, 128, valid_os_image,
     "letters, digits and ._:/+- (e.g. ubuntu-22.04)", NULL, NULL, SPEC_NONE},
    {"driver_branch", SPEC_STRING, SPEC_REQUIRED, 3, 3, valid_branch, "three digits, e.g. 550",
     NULL, NULL, SPEC_NONE},
    {"driver_version", SPEC_STRING, SPEC_REQUIRED, 5, 11, valid_driver,
     "a driver version like 550.54.15", NULL, NULL, SPEC_NONE},
    {"cuda_version", SPEC_STRING, SPEC_REQUIRED, 3, 8, valid_cuda,
     "a CUDA version like 12.4 or 12.4.1", NULL, NULL, SPEC_NONE},
    {"image", SPEC_STRING, SPEC_REQUIRED, 1, 512, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"framework", SPEC_OBJECT, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, framework_spec, SPEC_NONE},
    {"model_revision", SPEC_STRING, 0, 1, 128, valid_revision, "letters, digits and ._/-", NULL,
     NULL, SPEC_NONE},
    {"startup_config", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, startup_spec, SPEC_NONE},
    {"supersedes", SPEC_STRING, 0, 36, 36, api_valid_uuid, "a stack id (UUID)", NULL, NULL,
     SPEC_NONE},
    SPEC_END,
};

struct create_arg {
    struct api_req *r;
    struct db_stack_new in;
    char *doc;
    char id[37];
    const struct api_violation *violation;
};

/* The same answer for a stack that does not exist and one of another project. */
static const struct api_violation unknown_supersedes = {
    API_ERR_INVALID_FIELD, "supersedes",
    "supersedes must name an existing stack of the project, or a shared one"};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    enum db_status s = db_stack_insert(c, &a->in, &a->doc, a->id);
    a->violation = s == DB_NO_RESULTS ? &unknown_supersedes
                                      : api_violation_of(c, s, NULL, &unknown_supersedes);
    if (s <= 0)
        return s;
    return api_audit(c, a->r, "stack.create", "stack", a->id, MHD_HTTP_CREATED);
}

enum MHD_Result api_stacks_create(struct api_req *r)
{
    char project_id[37];
    if (api_create_project(r, api_route_roles(r), project_id, NULL) != 0 ||
        api_spec_parse(r, r->json, stack_spec, NULL) != 0)
        return MHD_YES;
    struct plan_stack_result res;
    plan_stack_check(r->json, &res);
    static const enum api_error codes[] = {
        [PLAN_STACK_IMAGE_NOT_PINNED] = API_ERR_IMAGE_NOT_PINNED,
        [PLAN_STACK_INVALID_FIELD] = API_ERR_INVALID_FIELD,
        [PLAN_STACK_UNKNOWN_CUDA] = API_ERR_UNKNOWN_CUDA_VERSION,
        [PLAN_STACK_CUDA_INCOMPATIBLE] = API_ERR_CUDA_DRIVER_INCOMPATIBLE,
    };
    if (res.err != PLAN_STACK_OK) {
        json_decref(res.warnings);
        return api_reply_problem(r, codes[res.err], res.field, "%s", res.detail);
    }
    struct create_arg a = {
        r, {r->json, res.warnings, res.image_digest, r->principal.sub, project_id}, NULL, "", NULL};
    enum db_status s = api_run_tx_doc(create_fn, &a, &a.doc);
    json_decref(res.warnings);
    if (s < 0)
        return api_reply_write_error(r, a.violation, s);
    if (a.doc == NULL) /* supersedes names no stack the project may use: nothing written */
        return api_reply_write_error(r, a.violation, DB_HARD_ERROR);
    char location[96];
    snprintf(location, sizeof location, "/v1/stacks/%s", a.id);
    return api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
}

struct read_arg {
    const char *id, *scope;
    struct db_page page; /* lineage */
};

enum MHD_Result api_stacks_get(struct api_req *r)
{
    const char *id = api_path_id(r, "stack");
    return id ? api_get_document_in(r, id, "stack", db_stack_get) : MHD_YES;
}

static enum db_status lineage_fn(struct db_conn *c, void *arg)
{
    struct read_arg *a = arg;
    return db_stack_lineage(c, a->id, a->scope, &a->page);
}

enum MHD_Result api_stacks_lineage(struct api_req *r)
{
    struct read_arg a = {api_path_id(r, "stack"), api_scope_read(r), {NULL}};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(lineage_fn, &a);
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (s == DB_NO_RESULTS)
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no stack has this id");
    else
        ret = api_page_reply(r, &a.page, 10001, NULL);
    db_page_clear(&a.page);
    return ret;
}

static int valid_bool(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "false");
}
static const struct list_filter stack_filters[] = {
    {"name_prefix", api_valid_name_prefix, "1-128 characters"},
    {"framework", valid_fw_name, "a framework name"},
    {"project", NULL, "a project name or id"},
    {"shared", valid_bool, "true or false"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_stack_filter f = {q->values[0], q->values[1], q->after,    q->limit + 1,
                                q->scope,     q->values[2], q->values[3]};
    return db_stack_list(c, &f, page);
}

static const struct list_def stack_list = {"stack", stack_filters, 4,        api_valid_seq,
                                           NULL,    NULL,          list_page};

enum MHD_Result api_stacks_list(struct api_req *r)
{
    return api_list_serve(r, &stack_list);
}

/* ---- sharing (a platform admin's) ---- */

struct share_arg {
    struct api_req *r;
    const char *id;
    int shared;
    char *doc;
};

static enum db_status share_fn(struct db_conn *c, void *arg)
{
    struct share_arg *a = arg;
    int before = 0;
    enum db_status s = db_stack_share(c, a->id, a->shared, &before, &a->doc);
    if (s <= 0)
        return s;
    struct actor who;
    api_actor(a->r, &who);
    return svc_audit_change(c, &who, "stack.share", "stack", a->id, NULL, MHD_HTTP_OK,
                            api_shared_json(before), api_shared_json(a->shared));
}

enum MHD_Result api_stacks_patch(struct api_req *r)
{
    struct share_arg a = {.r = r, .id = api_path_id(r, "stack")};
    if (a.id == NULL || api_parse_shared(r, &a.shared) != 0)
        return MHD_YES;
    if (!r->actor.platform_admin) { /* 404 unless the caller may see it, then 403 */
        char *doc = api_fetch_document_in(r, a.id, "stack", db_stack_get);
        if (doc == NULL)
            return MHD_YES;
        free(doc);
        api_platform_admin_only(r, "stack", a.id, NULL,
                                "only a platform admin may share or unshare a stack");
        return MHD_YES;
    }
    enum db_status s = api_run_tx_doc(share_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no stack has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
