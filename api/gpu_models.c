/* gpu_models.c — GPU model catalog endpoints. The catalog's own models are shared by every
 * project; a project's admin adds custom models to its project (keys stay global: a key is
 * a catalog identifier); a platform admin shares or unshares custom models. */
#include "api/gpu_models.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/gpu_models.h"
#include "service/audit.h"
#include "service/catalog.h"

int api_valid_model_key(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

static int valid_compute_capability(const char *s)
{
    /* 1-2 digits, '.', 1 digit */
    size_t n = strlen(s);
    if (n < 3 || n > 4 || s[n - 2] != '.' || !isdigit((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i + 2 < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int valid_source(const char *s)
{
    return !strcmp(s, "catalog") || !strcmp(s, "custom");
}

static const char *const formats[] = {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", NULL};

static const struct spec_field tflops_spec[] = {
    {"fp8", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e6, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"bf16", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e6, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"fp16", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e6, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"int8", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e6, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"tf32", SPEC_NUMBER, SPEC_NULLABLE, 0, 1e6, NULL, NULL, NULL, NULL, SPEC_NONE},
    SPEC_END,
};

/* The model is stored whole; only its key is read here. */
struct model_in {
    const char *key;
};
static const struct spec_field create_spec[] = {
    {"key", SPEC_STRING, SPEC_REQUIRED, 2, 64, api_valid_model_key,
     "2-64 lowercase letters, digits or _, starting with a letter or digit", NULL, NULL,
     SPEC_TO(struct model_in, key)},
    {"display_name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"memory_gib", SPEC_NUMBER, SPEC_REQUIRED | SPEC_EXCLUSIVE_MIN, 0, 4096, NULL, NULL, NULL, NULL,
     SPEC_NONE},
    {"supported_formats", SPEC_ENUM_ARRAY, SPEC_REQUIRED, 1, 7, NULL, NULL, formats, NULL,
     SPEC_NONE},
    {"vendor", SPEC_STRING, 0, 1, 64, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"memory_type", SPEC_STRING, SPEC_NULLABLE, 1, 32, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"memory_bandwidth_gbps", SPEC_NUMBER, SPEC_NULLABLE | SPEC_EXCLUSIVE_MIN, 0, 100000, NULL,
     NULL, NULL, NULL, SPEC_NONE},
    {"form_factor", SPEC_STRING, SPEC_NULLABLE, 1, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"interconnect_bandwidth_gbps", SPEC_NUMBER, SPEC_NULLABLE, 0, 100000, NULL, NULL, NULL, NULL,
     SPEC_NONE},
    {"dense_tflops", SPEC_OBJECT, SPEC_NULLABLE, 0, 0, NULL, NULL, NULL, tflops_spec, SPEC_NONE},
    {"compute_capability", SPEC_STRING, SPEC_NULLABLE, 3, 4, valid_compute_capability,
     "MAJOR.MINOR, e.g. 9.0", NULL, NULL, SPEC_NONE},
    {"max_power_w", SPEC_NUMBER, SPEC_NULLABLE | SPEC_EXCLUSIVE_MIN, 0, 100000, NULL, NULL, NULL,
     NULL, SPEC_NONE},
    {"nvidia_smi_name", SPEC_STRING, SPEC_NULLABLE, 1, 96, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"nvidia_smi_memory_total_mib", SPEC_INTEGER, SPEC_NULLABLE, 1, 10000000, NULL, NULL, NULL,
     NULL, SPEC_NONE},
    SPEC_END,
};

static int valid_bool(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "false");
}

static const struct list_filter model_filters[] = {
    {"vendor", NULL, NULL},
    {"source", valid_source, "catalog or custom"},
    {"project", NULL, "a project name or id"},
    {"shared", valid_bool, "true or false"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_gpu_model_filter f = {q->values[0], q->values[1], q->after,    q->limit + 1,
                                    q->scope,     q->values[2], q->values[3]};
    return db_gpu_model_list(c, &f, page);
}

static const struct list_def model_list = {"gpu_model", model_filters, 4, api_valid_model_key, NULL,
                                           NULL,        list_page};

enum MHD_Result api_gpu_models_list(struct api_req *r)
{
    return api_list_serve(r, &model_list);
}

/* The {key} parameter, or NULL after replying 404. */
static const char *model_key(struct api_req *r)
{
    const char *key = api_param(r, 0);
    if (!api_valid_model_key(key)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no gpu model has this id");
        return NULL;
    }
    return key;
}

enum MHD_Result api_gpu_models_get(struct api_req *r)
{
    const char *key = model_key(r);
    return key ? api_get_document_in(r, key, "gpu model", db_gpu_model_get) : MHD_YES;
}

struct create_arg {
    struct api_req *r;
    const char *key;
    char project_id[37];
    char *doc;
    const struct api_violation *violation;
};

/* Keys are global (a key is a catalog identifier, as quotas and pools name it): one taken
 * by another project's model answers the same. */
static const struct api_violation duplicate_model = {
    API_ERR_ALREADY_EXISTS, "key",
    "a GPU model with this key or nvidia_smi_name already exists (keys are catalog "
    "identifiers, unique across projects)"};

/* The audit row of a model's act, in the model's project (NULL: the catalog's: audit
 * rows cannot find a model's project from its key), with the values before and after. */
static enum db_status audit_model(struct db_conn *c, struct api_req *r, const char *action,
                                  const char *key, const char *project_id, int status,
                                  const char *before, const char *after)
{
    struct actor who;
    api_actor(r, &who);
    return svc_audit_change(c, &who, action, "gpu_model", key,
                            project_id && project_id[0] ? project_id : NULL, status, before, after);
}

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct create_arg *a = arg;
    enum db_status s = db_gpu_model_insert(c, a->r->json, a->project_id, &a->doc);
    a->violation = api_violation_of(c, s, &duplicate_model, NULL);
    if (s < 0)
        return s;
    return audit_model(c, a->r, "gpu_model.create", a->key, a->project_id, MHD_HTTP_CREATED, NULL,
                       NULL);
}

enum MHD_Result api_gpu_models_create(struct api_req *r)
{
    struct model_in in = {NULL};
    struct create_arg a = {.r = r};
    if (api_create_project(r, api_route_roles(r), a.project_id, NULL) != 0 ||
        api_spec_parse(r, r->json, create_spec, &in) != 0)
        return MHD_YES;
    a.key = in.key;
    enum db_status s = api_run_tx_doc(create_fn, &a, &a.doc);
    if (s < 0)
        return api_reply_write_error(r, a.violation, s);
    svc_catalog_invalidate();
    char location[128];
    snprintf(location, sizeof location, "/v1/gpu-models/%s", in.key);
    return api_reply_text(r, MHD_HTTP_CREATED, a.doc, location);
}

/* ---- sharing (a platform admin's) ---- */

struct share_arg {
    struct api_req *r;
    const char *key;
    int shared;
    struct db_gpu_model_change ch;
};

static enum db_status share_fn(struct db_conn *c, void *arg)
{
    struct share_arg *a = arg;
    free(a->ch.doc);
    enum db_status s = db_gpu_model_share(c, a->key, a->shared, &a->ch);
    if (s <= 0 || a->ch.doc == NULL)
        return s;
    return audit_model(c, a->r, "gpu_model.share", a->key, a->ch.project_id, MHD_HTTP_OK,
                       api_shared_json(a->ch.before), api_shared_json(a->shared));
}

enum MHD_Result api_gpu_models_patch(struct api_req *r)
{
    struct share_arg a = {.r = r, .key = model_key(r)};
    if (a.key == NULL || api_parse_shared(r, &a.shared) != 0)
        return MHD_YES;
    if (!r->actor.platform_admin) { /* 404 unless the caller may see it, then 403 */
        char *doc = api_fetch_document_in(r, a.key, "gpu model", db_gpu_model_get);
        if (doc == NULL)
            return MHD_YES;
        json_t *j = json_loads(doc, 0, NULL);
        const char *pid = json_string_value(json_object_get(json_object_get(j, "project"), "id"));
        api_platform_admin_only(r, "gpu_model", a.key, pid,
                                "only a platform admin may share or unshare a GPU model");
        json_decref(j);
        free(doc);
        return MHD_YES;
    }
    enum db_status s = db_run_tx(share_fn, &a);
    if (s < 0) {
        free(a.ch.doc);
        return api_reply_db(r, s);
    }
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no gpu model has this id");
    if (a.ch.doc == NULL)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "shared",
                                 "the catalog's own models are shared by every project");
    svc_catalog_invalidate();
    return api_reply_text(r, MHD_HTTP_OK, a.ch.doc, NULL);
}
