/* briefs.c — workload briefs and their sizing estimates. Field rules are declared in
 * brief_spec; cross-field rules and the arithmetic live in planner/. */
#include "api/briefs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "db/briefs.h"
#include "db/gpu_models.h"
#include "planner/brief.h"
#include "planner/sizing.h"

/* ---- validation ---- */

static int charset(const char *s, const char *extra, int first_alnum)
{
    if (first_alnum && !isalnum((unsigned char)s[0]))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
            return 0;
    return 1;
}
static int valid_model_name(const char *s) { return charset(s, "._/:@+-", 1); }
static int valid_revision(const char *s) { return charset(s, "._/-", 1); }
static int valid_quantization(const char *s) { return charset(s, "._-", 0); }
static int valid_location(const char *s) { return charset(s, "._/:@+=%-", 0); }

static const char *const kinds[] = {"inference_interactive", "inference_batch", "training",
                                    "fine_tuning", "embeddings", "distributed_serving", NULL};
static const char *const precisions[] = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", NULL};
static const char *const kv_precisions[] = {"fp32", "bf16", "fp16", "fp8", "int8", NULL};
static const char *const optimizers[] = {"adamw", "adamw_8bit", "sgd_momentum", NULL};
static const char *const percentiles[] = {"p50", "p90", "p95", "p99", NULL};

#define END {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL}
#define INT(name, flags, lo, hi) {name, SPEC_INTEGER, flags, lo, hi, NULL, NULL, NULL, NULL}

static const struct spec_field arch_spec[] = {
    INT("layers", 0, 1, 1000),
    INT("kv_heads", 0, 1, 1024),
    INT("head_dim", 0, 1, 16384),
    INT("hidden_size", 0, 1, 1048576),
    END,
};
static const struct spec_field model_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 200, valid_model_name,
     "letters, digits and ._/:@+- (e.g. meta-llama/Llama-3.1-8B-Instruct)", NULL, NULL},
    {"revision", SPEC_STRING, 0, 1, 128, valid_revision, "letters, digits and ._/-", NULL, NULL},
    {"parameter_count", SPEC_NUMBER, SPEC_REQUIRED, 1e6, 1e13, NULL, NULL, NULL, NULL},
    {"architecture", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, arch_spec},
    {"precision", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, precisions, NULL},
    {"kv_cache_precision", SPEC_ENUM, 0, 0, 0, NULL, NULL, kv_precisions, NULL},
    {"quantization", SPEC_STRING, SPEC_NULLABLE, 1, 64, valid_quantization,
     "letters, digits and ._-", NULL, NULL},
    END,
};
static const struct spec_field load_spec[] = {
    INT("concurrency", SPEC_REQUIRED, 1, 1000000),
    INT("peak_concurrency", 0, 1, 1000000),
    INT("max_input_tokens", 0, 0, 10000000),
    INT("expected_output_tokens", 0, 0, 10000000),
    INT("item_size_bytes", 0, 1, 1e12),
    {"peak_requests_per_minute", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 1e9, NULL, NULL, NULL, NULL},
    END,
};
static const struct spec_field target_fields[] = {
    {"metric", SPEC_STRING, SPEC_REQUIRED, 1, 64, NULL, NULL, NULL, NULL},
    {"value", SPEC_NUMBER, SPEC_REQUIRED | SPEC_EXCLUSIVE_MIN, 0, 1e12, NULL, NULL, NULL, NULL},
    {"percentile", SPEC_ENUM, 0, 0, 0, NULL, NULL, percentiles, NULL},
    END,
};
static const struct spec_field target_item[] = {
    {"", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, target_fields},
};
static const struct spec_field location_spec[] = {
    {"location", SPEC_STRING, SPEC_REQUIRED, 1, 512, valid_location,
     "a path or URI without spaces or quotes", NULL, NULL},
    END,
};
static const struct spec_field data_spec[] = {
    {"ephemeral", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec},
    {"durable", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec},
    {"secrets", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec},
    END,
};
static const struct spec_field availability_spec[] = {
    {"target_pct", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 100, NULL, NULL, NULL, NULL},
    INT("recovery_time_objective_s", 0, 0, 31536000),
    END,
};
static const struct spec_field training_spec[] = {
    {"optimizer", SPEC_ENUM, 0, 0, 0, NULL, NULL, optimizers, NULL},
    {"activation_bytes", SPEC_NUMBER, 0, 0, 1e15, NULL, NULL, NULL, NULL},
    END,
};
static const struct spec_field brief_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL},
    {"kind", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, kinds, NULL},
    {"description", SPEC_STRING, 0, 0, 2000, NULL, NULL, NULL, NULL},
    {"model", SPEC_OBJECT, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, model_spec},
    {"load", SPEC_OBJECT, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, load_spec},
    {"targets", SPEC_ARRAY, SPEC_REQUIRED, 1, 8, NULL, NULL, NULL, target_item},
    {"data", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, data_spec},
    {"availability", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, availability_spec},
    {"training", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, training_spec},
    END,
};

/* Field spec, then the planner's cross-field rules. Returns 0, or -1 after replying. */
static int check_brief(struct api_req *r, const json_t *body)
{
    if (api_spec_check(r, body, brief_spec) != 0)
        return -1;
    struct plan_error err;
    if (plan_brief_check(body, &err) != 0) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, err.field, "%s", err.detail);
        return -1;
    }
    return 0;
}

/* The resource id from the path, or a 404 when it is not a UUID. */
static const char *brief_id(struct api_req *r)
{
    const char *id = api_param(r, 0);
    if (!api_valid_uuid(id)) {
        api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
        return NULL;
    }
    return id;
}

/* ---- create / read / list ---- */

struct brief_arg {
    struct api_req *r;
    const char *id;
    json_t *out;
    int precondition; /* 0 ok, 1 missing If-Match, 2 mismatch */
    int in_use;
};

static enum db_status create_fn(struct db_conn *c, void *arg)
{
    struct brief_arg *a = arg;
    json_decref(a->out);
    enum db_status s = db_brief_insert(c, a->r->json, a->r->principal.sub, &a->out);
    if (s < 0)
        return s;
    return api_audit(c, a->r, "brief.create", "brief",
                     json_string_value(json_object_get(a->out, "id")), MHD_HTTP_CREATED);
}

enum MHD_Result api_briefs_create(struct api_req *r)
{
    if (check_brief(r, r->json) != 0)
        return MHD_YES;
    struct brief_arg a = {r, NULL, NULL, 0, 0};
    enum db_status s = db_run_tx(create_fn, &a);
    if (s < 0) {
        json_decref(a.out);
        return api_reply_db(r, s);
    }
    char location[96];
    snprintf(location, sizeof location, "/v1/briefs/%s",
             json_string_value(json_object_get(a.out, "id")));
    return api_reply_json(r, MHD_HTTP_CREATED, a.out, location);
}

static enum db_status get_fn(struct db_conn *c, void *arg)
{
    struct brief_arg *a = arg;
    return db_brief_get(c, a->id, 0, &a->out);
}

enum MHD_Result api_briefs_get(struct api_req *r)
{
    struct brief_arg a = {r, brief_id(r), NULL, 0, 0};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run(get_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.out == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    return api_reply_json(r, MHD_HTTP_OK, a.out, NULL);
}

static int valid_kind(const char *v) { return plan_lookup(kinds, v) >= 0; }
static int valid_prefix(const char *v) { return strlen(v) <= 128; }

static const struct list_filter brief_filters[] = {
    {"kind", valid_kind,
     "one of inference_interactive, inference_batch, training, fine_tuning, embeddings, "
     "distributed_serving"},
    {"name_prefix", valid_prefix, "1-128 characters"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, json_t *items)
{
    struct db_brief_filter f = {q->values[0], q->values[1], q->after, q->limit + 1};
    return db_brief_list(c, &f, items);
}

static const struct list_def brief_list = {"brief", brief_filters, 2, api_valid_seq, "_key",
                                           list_page};

enum MHD_Result api_briefs_list(struct api_req *r) { return api_list_serve(r, &brief_list); }

/* ---- replace (If-Match) / delete ---- */

static enum db_status replace_fn(struct db_conn *c, void *arg)
{
    struct brief_arg *a = arg;
    json_t *cur = NULL;
    json_decref(a->out);
    a->out = NULL;
    enum db_status s = db_brief_get(c, a->id, 1, &cur);
    if (s <= 0)
        return s;
    char *text = api_json_text(cur);
    json_decref(cur);
    if (text == NULL)
        return DB_HARD_ERROR;
    char etag[API_ETAG_LEN];
    api_etag_of(text, strlen(text), etag);
    free(text);
    if (!api_etag_matches(api_header(a->r, MHD_HTTP_HEADER_IF_MATCH), etag, 0)) {
        a->precondition = 2;
        return DB_NO_RESULTS; /* commits nothing: no write happened */
    }
    s = db_brief_update(c, a->id, a->r->json, &a->out);
    if (s <= 0)
        return s;
    return api_audit(c, a->r, "brief.update", "brief", a->id, MHD_HTTP_OK);
}

enum MHD_Result api_briefs_replace(struct api_req *r)
{
    struct brief_arg a = {r, brief_id(r), NULL, 0, 0};
    if (a.id == NULL)
        return MHD_YES;
    if (api_header(r, MHD_HTTP_HEADER_IF_MATCH) == NULL)
        return api_reply_problem(r, API_ERR_PRECONDITION_REQUIRED, NULL,
                                 "send If-Match with the ETag of the brief you read, so that "
                                 "concurrent edits are not lost");
    if (check_brief(r, r->json) != 0)
        return MHD_YES;
    enum db_status s = db_run_tx(replace_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    if (a.precondition)
        return api_reply_problem(r, API_ERR_PRECONDITION_FAILED, NULL,
                                 "the brief changed since you read it; GET it again and retry");
    if (a.out == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    r->etag_on_write = 1;
    return api_reply_json(r, MHD_HTTP_OK, a.out, NULL);
}

static enum db_status delete_fn(struct db_conn *c, void *arg)
{
    struct brief_arg *a = arg;
    enum db_status s = db_brief_delete(c, a->id);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        a->in_use = 1;
    if (s <= 0)
        return s;
    return api_audit(c, a->r, "brief.delete", "brief", a->id, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result api_briefs_delete(struct api_req *r)
{
    struct brief_arg a = {r, brief_id(r), NULL, 0, 0};
    if (a.id == NULL)
        return MHD_YES;
    enum db_status s = db_run_tx(delete_fn, &a);
    if (a.in_use)
        return api_reply_problem(r, API_ERR_BRIEF_IN_USE, NULL,
                                 "the brief is referenced and cannot be deleted");
    if (s < 0)
        return api_reply_db(r, s);
    if (s == DB_NO_RESULTS)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
}

/* ---- sizing ---- */

static int valid_pct(const char *v) { char *e; double d = strtod(v, &e); return *e == '\0' && d >= 0 && d <= 90; }
static int valid_factor(const char *v) { char *e; double d = strtod(v, &e); return *e == '\0' && d >= 1 && d <= 4; }
static int valid_fixed(const char *v) { char *e; double d = strtod(v, &e); return *e == '\0' && d >= 0 && d <= 64; }

static const struct list_filter sizing_params[] = {
    {"reserve_pct", valid_pct, "a number from 0 to 90"},
    {"overhead_factor", valid_factor, "a number from 1 to 4"},
    {"overhead_fixed_gib", valid_fixed, "a number from 0 to 64"},
};

/* Parses the sizing options from the query. Returns 0, or -1 after replying. */
static int sizing_options(struct api_req *r, struct plan_options *o)
{
    struct list_query q;
    if (api_list_parse(r, NULL, sizing_params, 3, &q) != 0)
        return -1;
    plan_default_options(o);
    if (q.values[0])
        o->reserve_pct = strtod(q.values[0], NULL);
    if (q.values[1])
        o->overhead_factor = strtod(q.values[1], NULL);
    if (q.values[2])
        o->overhead_fixed_gib = strtod(q.values[2], NULL);
    api_list_query_free(&q);
    return 0;
}

struct sizing_arg {
    const char *id;
    json_t *brief;  /* stored brief, when id is set */
    json_t *models; /* catalog */
};

static enum db_status sizing_fn(struct db_conn *c, void *arg)
{
    struct sizing_arg *a = arg;
    if (a->id != NULL) {
        enum db_status s = db_brief_get(c, a->id, 0, &a->brief);
        if (s <= 0)
            return s;
    }
    struct db_gpu_model_filter f = {NULL, NULL, NULL, 10000};
    return db_gpu_model_list(c, &f, a->models);
}

/* Builds the sizing answer for a checked brief body. Returns a new reference. */
static json_t *sizing_answer(const json_t *brief, const json_t *models,
                             const struct plan_options *o)
{
    struct plan_brief b;
    struct plan_sizing s;
    plan_brief_to_sizing(brief, &b);
    plan_size(&b, o, &s);
    size_t n = json_array_size(models);
    struct plan_gpu *gpus = calloc(n ? n : 1, sizeof *gpus);
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m)
    {
        gpus[i].key = json_string_value(json_object_get(m, "key"));
        gpus[i].display_name = json_string_value(json_object_get(m, "display_name"));
        gpus[i].memory_gib = json_number_value(json_object_get(m, "memory_gib"));
        gpus[i].smi_memory_mib = (long)json_integer_value(json_object_get(m, "nvidia_smi_memory_total_mib"));
        size_t k;
        json_t *fmt;
        json_array_foreach(json_object_get(m, "supported_formats"), k, fmt)
        {
            int p = plan_lookup(plan_precision_names, json_string_value(fmt));
            if (p >= 0)
                gpus[i].formats |= 1u << p;
        }
    }
    json_t *out = plan_sizing_json(&b, o, &s, gpus, n);
    free(gpus);
    return out;
}

enum MHD_Result api_sizing(struct api_req *r)
{
    struct plan_options o;
    if (sizing_options(r, &o) != 0 || check_brief(r, r->json) != 0)
        return MHD_YES;
    struct sizing_arg a = {NULL, NULL, json_array()};
    enum db_status s = db_run(sizing_fn, &a);
    if (s < 0) {
        json_decref(a.models);
        return api_reply_db(r, s);
    }
    json_t *out = sizing_answer(r->json, a.models, &o);
    json_decref(a.models);
    json_object_set_new(out, "brief_id", json_null());
    json_object_set_new(out, "brief_revision", json_null());
    return api_reply_json(r, MHD_HTTP_OK, out, NULL);
}

enum MHD_Result api_briefs_sizing(struct api_req *r)
{
    struct plan_options o;
    const char *id = brief_id(r);
    if (id == NULL || sizing_options(r, &o) != 0)
        return MHD_YES;
    struct sizing_arg a = {id, NULL, json_array()};
    enum db_status s = db_run(sizing_fn, &a);
    if (s < 0 || a.brief == NULL) {
        json_decref(a.models);
        json_decref(a.brief);
        return s < 0 ? api_reply_db(r, s)
                     : api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    }
    json_t *out = sizing_answer(a.brief, a.models, &o);
    json_object_set(out, "brief_id", json_object_get(a.brief, "id"));
    json_object_set(out, "brief_revision", json_object_get(a.brief, "revision"));
    json_decref(a.models);
    json_decref(a.brief);
    return api_reply_json(r, MHD_HTTP_OK, out, NULL);
}
