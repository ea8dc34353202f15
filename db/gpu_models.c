/* gpu_models.c — gpu_models access. */
#include "db/gpu_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_COLS                                                                            \
    "key, vendor, display_name, memory_gib::text AS memory_gib, memory_type,"               \
    " memory_bandwidth_gbps::text AS memory_bandwidth_gbps, form_factor,"                   \
    " interconnect_bandwidth_gbps::text AS interconnect_bandwidth_gbps,"                    \
    " array_to_json(supported_formats)::text AS supported_formats,"                         \
    " tflops_fp8::text AS fp8, tflops_bf16::text AS bf16, tflops_fp16::text AS fp16,"       \
    " tops_int8::text AS int8, tflops_tf32::text AS tf32, compute_capability,"              \
    " max_power_w::text AS max_power_w, nvidia_smi_name, nvidia_smi_memory_total_mib,"      \
    " source, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')" \
    " AS created_at"

const struct db_stmt db_gpu_model_stmts[] = {
    {"gpu_model_list",
     "SELECT " GPU_COLS " FROM gpu_models"
     " WHERE ($1::text IS NULL OR vendor = $1) AND ($2::text IS NULL OR source = $2)"
     "   AND ($3::text IS NULL OR key > $3)"
     " ORDER BY key LIMIT $4::int"},
    {"gpu_model_get", "SELECT " GPU_COLS " FROM gpu_models WHERE key = $1"},
    {"gpu_model_catalog",
     "SELECT key, display_name, memory_gib::float8, coalesce(nvidia_smi_memory_total_mib, 0),"
     " supported_formats::text FROM gpu_models ORDER BY key"},
    {"gpu_model_insert",
     "INSERT INTO gpu_models (key, vendor, display_name, memory_gib, memory_type,"
     " memory_bandwidth_gbps, form_factor, interconnect_bandwidth_gbps, supported_formats,"
     " tflops_fp8, tflops_bf16, tflops_fp16, tops_int8, tflops_tf32, compute_capability,"
     " max_power_w, nvidia_smi_name, nvidia_smi_memory_total_mib, source)"
     " VALUES ($1, $2, $3, $4::numeric, $5, $6::numeric, $7, $8::numeric,"
     "  ARRAY(SELECT json_array_elements_text($9::json)), $10::numeric, $11::numeric,"
     "  $12::numeric, $13::numeric, $14::numeric, $15, $16::numeric, $17, $18::int, 'custom')"
     " RETURNING " GPU_COLS},
};
const size_t db_gpu_model_nstmts = sizeof db_gpu_model_stmts / sizeof db_gpu_model_stmts[0];

/* numeric text → JSON number (integer when it has no fraction), NULL → null. */
static json_t *num(const char *s)
{
    if (s == NULL)
        return json_null();
    if (strchr(s, '.') == NULL && strchr(s, 'e') == NULL)
        return json_integer(strtoll(s, NULL, 10));
    return json_real(strtod(s, NULL));
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *row_json(const PGresult *r, int i)
{
    json_t *formats = json_loads(db_str(r, i, "supported_formats"), 0, NULL);
    json_t *tflops = json_pack("{s:o, s:o, s:o, s:o, s:o}", "fp8", num(db_str(r, i, "fp8")),
                               "bf16", num(db_str(r, i, "bf16")), "fp16",
                               num(db_str(r, i, "fp16")), "int8", num(db_str(r, i, "int8")),
                               "tf32", num(db_str(r, i, "tf32")));
    return json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s}", "key",
        db_str(r, i, "key"), "vendor", db_str(r, i, "vendor"), "display_name",
        db_str(r, i, "display_name"), "memory_gib", num(db_str(r, i, "memory_gib")),
        "memory_type", str_or_null(db_str(r, i, "memory_type")), "memory_bandwidth_gbps",
        num(db_str(r, i, "memory_bandwidth_gbps")), "form_factor",
        str_or_null(db_str(r, i, "form_factor")), "interconnect_bandwidth_gbps",
        num(db_str(r, i, "interconnect_bandwidth_gbps")), "supported_formats",
        formats ? formats : json_array(), "dense_tflops", tflops, "compute_capability",
        str_or_null(db_str(r, i, "compute_capability")), "max_power_w",
        num(db_str(r, i, "max_power_w")), "nvidia_smi_name",
        str_or_null(db_str(r, i, "nvidia_smi_name")), "nvidia_smi_memory_total_mib",
        num(db_str(r, i, "nvidia_smi_memory_total_mib")), "source", db_str(r, i, "source"),
        "created_at", db_str(r, i, "created_at"));
}

enum db_status db_gpu_model_list(struct db_conn *c, const struct db_gpu_model_filter *f,
                                 json_t *items)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[4] = {f->vendor, f->source, f->after_key, limit};
    PGresult *r;
    enum db_status s = db_exec(c, "gpu_model_list", 4, p, &r);
    if (s < 0)
        return s;
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row_json(r, i));
    PQclear(r);
    return s;
}

enum db_status db_gpu_model_get(struct db_conn *c, const char *key, json_t **out)
{
    const char *p[1] = {key};
    PGresult *r;
    *out = NULL;
    enum db_status s = db_exec(c, "gpu_model_get", 1, p, &r);
    if (s == DB_ONE_RESULT)
        *out = row_json(r, 0);
    PQclear(r);
    return s;
}

/* JSON number/string field → text parameter (NULL when absent or null). Caller frees. */
static char *param(const json_t *obj, const char *name)
{
    const json_t *v = json_object_get(obj, name);
    if (v == NULL || json_is_null(v))
        return NULL;
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return strdup(buf);
    }
    if (json_is_real(v)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        return strdup(buf);
    }
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

enum db_status db_gpu_model_insert(struct db_conn *c, const json_t *body, json_t **out)
{
    static const char *const names[] = {
        "key",        "vendor",     "display_name",       "memory_gib",
        "memory_type", "memory_bandwidth_gbps", "form_factor", "interconnect_bandwidth_gbps",
        "supported_formats"};
    static const char *const tflops[] = {"fp8", "bf16", "fp16", "int8", "tf32"};
    char *p[18] = {0};
    for (int i = 0; i < 9; i++)
        p[i] = param(body, names[i]);
    if (p[1] == NULL)
        p[1] = strdup("NVIDIA");
    const json_t *dense = json_object_get(body, "dense_tflops");
    for (int i = 0; i < 5; i++)
        p[9 + i] = dense ? param(dense, tflops[i]) : NULL;
    p[14] = param(body, "compute_capability");
    p[15] = param(body, "max_power_w");
    p[16] = param(body, "nvidia_smi_name");
    p[17] = param(body, "nvidia_smi_memory_total_mib");
    PGresult *r;
    *out = NULL;
    enum db_status s = db_exec(c, "gpu_model_insert", 18, (const char *const *)p, &r);
    if (s == DB_ONE_RESULT)
        *out = row_json(r, 0);
    PQclear(r);
    for (int i = 0; i < 18; i++)
        free(p[i]);
    return s;
}

enum db_status db_gpu_model_catalog(struct db_conn *c, PGresult **res)
{
    return db_exec(c, "gpu_model_catalog", 0, NULL, res);
}
