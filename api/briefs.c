/* briefs.c — workload briefs and their sizing estimates. Field rules are declared in
 * brief_spec; cross-field rules and the arithmetic live in planner/. */
#include "api/briefs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "common/util.h"
#include "db/briefs.h"
#include "planner/brief.h"
#include "planner/placement.h"

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
static int valid_model_name(const char *s)
{
    return charset(s, "._/:@+-", 1);
}
static int valid_revision(const char *s)
{
    return charset(s, "._/-", 1);
}
static int valid_quantization(const char *s)
{
    return charset(s, "._-", 0);
}
static int valid_location(const char *s)
{
    return charset(s, "._/:@+=%-", 0);
}

static const char *const kinds[] = {"inference_interactive",
                                    "inference_batch",
                                    "training",
                                    "fine_tuning",
                                    "embeddings",
                                    "distributed_serving",
                                    NULL};
static const char *const precisions[] = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", NULL};
static const char *const kv_precisions[] = {"fp32", "bf16", "fp16", "fp8", "int8", NULL};
static const char *const optimizers[] = {"adamw", "adamw_8bit", "sgd_momentum", NULL};
static const char *const percentiles[] = {"p50", "p90", "p95", "p99", NULL};

/* The brief is stored whole (the planner reads it): its fields are validated only. */
#define INT(name, flags, lo, hi)                                             \
    {                                                                        \
        name, SPEC_INTEGER, flags, lo, hi, NULL, NULL, NULL, NULL, SPEC_NONE \
    }

static const struct spec_field arch_spec[] = {
    INT("layers", 0, 1, 1000),
    INT("kv_heads", 0, 1, 1024),
    INT("head_dim", 0, 1, 16384),
    INT("hidden_size", 0, 1, 1048576),
    SPEC_END,
};
static const struct spec_field model_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 200, valid_model_name,
     "letters, digits and ._/:@+- (e.g. meta-llama/Llama-3.1-8B-Instruct)", NULL, NULL, SPEC_NONE},
    {"revision", SPEC_STRING, 0, 1, 128, valid_revision, "letters, digits and ._/-", NULL, NULL,
     SPEC_NONE},
    {"parameter_count", SPEC_NUMBER, SPEC_REQUIRED, 1e6, 1e13, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"architecture", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, arch_spec, SPEC_NONE},
    {"precision", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, precisions, NULL, SPEC_NONE},
    {"kv_cache_precision", SPEC_ENUM, 0, 0, 0, NULL, NULL, kv_precisions, NULL, SPEC_NONE},
    {"quantization", SPEC_STRING, SPEC_NULLABLE, 1, 64, valid_quantization,
     "letters, digits and ._-", NULL, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field load_spec[] = {
    INT("concurrency", SPEC_REQUIRED, 1, 1000000),
    INT("peak_concurrency", 0, 1, 1000000),
    INT("max_input_tokens", 0, 0, 10000000),
    INT("expected_output_tokens", 0, 0, 10000000),
    INT("item_size_bytes", 0, 1, 1e12),
    {"peak_requests_per_minute", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 1e9, NULL, NULL, NULL, NULL,
     SPEC_NONE},
    SPEC_END,
};
static const struct spec_field target_fields[] = {
    {"metric", SPEC_STRING, SPEC_REQUIRED, 1, 64, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"value", SPEC_NUMBER, SPEC_REQUIRED | SPEC_EXCLUSIVE_MIN, 0, 1e12, NULL, NULL, NULL, NULL,
     SPEC_NONE},
    {"percentile", SPEC_ENUM, 0, 0, 0, NULL, NULL, percentiles, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field target_item[] = {
    {"", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, target_fields, SPEC_NONE},
};
static const struct spec_field location_spec[] = {
    {"location", SPEC_STRING, SPEC_REQUIRED, 1, 512, valid_location,
     "a path or URI without spaces or quotes", NULL, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field data_spec[] = {
    {"ephemeral", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec, SPEC_NONE},
    {"durable", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec, SPEC_NONE},
    {"secrets", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, location_spec, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field availability_spec[] = {
    {"target_pct", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 100, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("recovery_time_objective_s", 0, 0, 31536000),
    SPEC_END,
};
static const struct spec_field training_spec[] = {
    {"optimizer", SPEC_ENUM, 0, 0, 0, NULL, NULL, optimizers, NULL, SPEC_NONE},
    {"activation_bytes", SPEC_NUMBER, 0, 0, 1e15, NULL, NULL, NULL, NULL, SPEC_NONE},
    SPEC_END,
};
/* Alternatives to the project's pools (docs/placement.md): which fields each kind needs,
 * and that names are unique, is plan_place_check's. */
static const char *const alt_kinds[] = {"api", "on_demand", "reserved", NULL};
static int valid_alt_name(const char *s)
{
    return charset(s, "._-", 1);
}
static int valid_gpu_key(const char *s)
{
    return charset(s, "._-", 1);
}
#define NUMX(name, lo, hi)                                                               \
    {                                                                                    \
        name, SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, lo, hi, NULL, NULL, NULL, NULL, SPEC_NONE \
    }
static const struct spec_field alt_fields[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 64, valid_alt_name, "letters, digits and ._-", NULL,
     NULL, SPEC_NONE},
    {"kind", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, alt_kinds, NULL, SPEC_NONE},
    NUMX("price_per_unit", 0, 1e9),
    NUMX("per_units", 0, 1e15),
    {"unit", SPEC_ENUM, 0, 0, 0, NULL, NULL, usage_unit_names, NULL, SPEC_NONE},
    NUMX("latency_ms_p95", 0, 1e9),
    NUMX("availability_pct", 0, 100),
    {"notes", SPEC_STRING, 0, 0, 1000, NULL, NULL, NULL, NULL, SPEC_NONE},
    NUMX("price_per_gpu_hour", 0, 1e6),
    INT("gpus", 0, 1, 100000),
    {"gpu_model", SPEC_STRING, 0, 1, 64, valid_gpu_key, "a GPU model key (letters, digits, ._-)",
     NULL, NULL, SPEC_NONE},
    {"cold_start_seconds", SPEC_NUMBER, 0, 0, 86400, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("commitment_months", 0, 1, 120),
    SPEC_END,
};
static const struct spec_field alt_item[] = {
    {"", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, alt_fields, SPEC_NONE},
};
static const struct spec_field brief_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"kind", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, kinds, NULL, SPEC_NONE},
    {"description", SPEC_STRING, 0, 0, 2000, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"model", SPEC_OBJECT, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, model_spec, SPEC_NONE},
    {"load", SPEC_OBJECT, SPEC_REQUIRED, 0, 0, NULL, NULL, NULL, load_spec, SPEC_NONE},
    {"targets", SPEC_ARRAY, SPEC_REQUIRED, 1, 8, NULL, NULL, NULL, target_item, SPEC_NONE},
    {"data", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, data_spec, SPEC_NONE},
    {"availability", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, availability_spec, SPEC_NONE},
    {"training", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, training_spec, SPEC_NONE},
    /* share of spend failed + retried work may cost (planner/recommend_retry.h) */
    {"retry_budget_pct", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 100, NULL, NULL, NULL, NULL,
     SPEC_NONE},
    {"alternatives", SPEC_ARRAY, 0, 0, PLAN_PLACE_MAX_ALTERNATIVES, NULL, NULL, NULL, alt_item,
     SPEC_NONE},
    {"rightsize_margin_pct", SPEC_NUMBER, 0, 0, 100, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("rightsize_min_days", 0, 1, 366),
    SPEC_END,
};

int api_brief_check(struct api_req *r, const json_t *body)
{
    if (api_spec_parse(r, body, brief_spec, NULL) != 0)
        return -1;
    struct plan_error err;
    if (plan_brief_check(body, &err) != 0 || plan_place_check(body, &err) != 0) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, err.field, "%s", err.detail);
        return -1;
    }
    return 0;
}

/* The resource id from the path, or a 404 when it is not a UUID. */
const char *api_brief_id(struct api_req *r)
{
    return api_path_id(r, "brief");
}

/* ---- create / read / list ---- */

static json_t *brief_prepare(struct api_req *r)
{
    return api_brief_check(r, r->json) == 0 ? json_incref(r->json) : NULL;
}

static const struct api_document_def brief_document = {
    .what = "brief",
    .collection = "/v1/briefs",
    .prepare = brief_prepare,
    .insert = db_brief_insert,
    .get = db_brief_get,
    .update = db_brief_update,
};

enum MHD_Result api_briefs_create(struct api_req *r)
{
    return api_create_document(r, &brief_document);
}

static enum db_status fetch_brief(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    return db_brief_get(c, id, scope, 0, doc);
}

enum MHD_Result api_briefs_get(struct api_req *r)
{
    const char *id = api_brief_id(r);
    return id ? api_get_document_in(r, id, "brief", fetch_brief) : MHD_YES;
}

static int valid_kind(const char *v)
{
    return util_lookup(kinds, v) >= 0;
}
static const struct list_filter brief_filters[] = {
    {"kind", valid_kind,
     "one of inference_interactive, inference_batch, training, fine_tuning, embeddings, "
     "distributed_serving"},
    {"name_prefix", api_valid_name_prefix, "1-128 characters"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_brief_filter f = {q->values[0], q->values[1], q->after,
                                q->limit + 1, q->scope,     q->values[2]};
    return db_brief_list(c, &f, page);
}

static const struct list_def brief_list = {"brief", brief_filters, 3,        api_valid_seq,
                                           NULL,    NULL,          list_page};

enum MHD_Result api_briefs_list(struct api_req *r)
{
    return api_list_serve(r, &brief_list);
}

/* ---- replace (If-Match) / delete ---- */

enum MHD_Result api_briefs_replace(struct api_req *r)
{
    return api_replace_document(r, &brief_document);
}

static const struct api_delete_in_def brief_delete = {
    "brief", "brief.delete", db_brief_delete, API_ERR_BRIEF_IN_USE,
    "the brief is referenced and cannot be deleted"};

enum MHD_Result api_briefs_delete(struct api_req *r)
{
    const char *id = api_brief_id(r);
    return id ? api_delete_resource_in(r, id, &brief_delete) : MHD_YES;
}
