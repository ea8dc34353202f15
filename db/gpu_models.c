/* gpu_models.c — gpu_models access. */
#include "db/gpu_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db_pg.h"
#include "db/decode.h"
#include "db/scope_sql.h"

/* The GpuModel document, rendered by PostgreSQL. */
#define GPU_DOC                                                                            \
    "json_build_object('key', key, 'vendor', vendor, 'display_name', display_name,"        \
    " 'memory_gib', memory_gib, 'memory_type', memory_type,"                               \
    " 'memory_bandwidth_gbps', memory_bandwidth_gbps, 'form_factor', form_factor,"         \
    " 'interconnect_bandwidth_gbps', interconnect_bandwidth_gbps,"                         \
    " 'supported_formats', supported_formats, 'dense_tflops', json_build_object('fp8',"    \
    " tflops_fp8, 'bf16', tflops_bf16, 'fp16', tflops_fp16, 'int8', tops_int8, 'tf32',"    \
    " tflops_tf32), 'compute_capability', compute_capability, 'max_power_w', max_power_w," \
    " 'nvidia_smi_name', nvidia_smi_name, 'nvidia_smi_memory_total_mib',"                  \
    " nvidia_smi_memory_total_mib, 'source', source,"                                      \
    " 'project', " DB_PROJECT_JSON("project_id") ", 'shared', shared,"                     \
                                                 " 'created_at', " DB_TS("created_at") ")::text"

const struct db_stmt db_gpu_model_stmts[] = {
    {"gpu_model_list",
     "SELECT " GPU_DOC " AS doc, key FROM gpu_models m"
     " WHERE ($1::text IS NULL OR vendor = $1) AND ($2::text IS NULL OR source = $2)"
     "   AND " DB_IN_SCOPE_SHARED("m", "$5") " AND " DB_OF_PROJECT(
         "m.project_id", "$6") "   AND ($7::bool IS NULL OR m.shared = $7::bool)"
                               "   AND ($3::text IS NULL OR key > $3)"
                               " ORDER BY key LIMIT $4::int"},
    {"gpu_model_get", "SELECT " GPU_DOC " AS doc FROM gpu_models m WHERE key = $1"
                      " AND " DB_IN_SCOPE_SHARED("m", "$2")},
    {"gpu_model_catalog",
     "SELECT key, display_name, memory_gib::float8,"
     " coalesce(nvidia_smi_memory_total_mib, 0) AS smi_memory_mib, supported_formats::text,"
     " project_id::text AS project_id, shared"
     " FROM gpu_models ORDER BY key"},
    /* the catalog's own models stay shared: no row is changed then (doc NULL) */
    {"gpu_model_share",
     "WITH old AS (SELECT key, shared, source, project_id FROM gpu_models WHERE key = $1"
     "   FOR UPDATE),"
     " upd AS (UPDATE gpu_models m SET shared = $2::bool FROM old"
     "   WHERE m.key = old.key AND (old.source <> 'catalog' OR $2::bool) RETURNING m.*)"
     " SELECT old.shared::text AS before, old.source, old.project_id::text AS project_id,"
     "   (SELECT " GPU_DOC " FROM upd) AS doc FROM old"},
    {"gpu_model_insert",
     "INSERT INTO gpu_models (key, vendor, display_name, memory_gib, memory_type,"
     " memory_bandwidth_gbps, form_factor, interconnect_bandwidth_gbps, supported_formats,"
     " tflops_fp8, tflops_bf16, tflops_fp16, tops_int8, tflops_tf32, compute_capability,"
     " max_power_w, nvidia_smi_name, nvidia_smi_memory_total_mib, source, project_id, shared)"
     " VALUES ($1, $2, $3, $4::numeric, $5, $6::numeric, $7, $8::numeric,"
     "  ARRAY(SELECT json_array_elements_text($9::json)), $10::numeric, $11::numeric,"
     "  $12::numeric, $13::numeric, $14::numeric, $15, $16::numeric, $17, $18::int, 'custom',"
     "  $19::uuid, false)"
     " RETURNING " GPU_DOC " AS doc, key"},
};
const size_t db_gpu_model_nstmts = sizeof db_gpu_model_stmts / sizeof db_gpu_model_stmts[0];

enum db_status db_gpu_model_list(struct db_conn *c, const struct db_gpu_model_filter *f,
                                 struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[7] = {f->vendor, f->source,     f->after_key, limit,
                        f->scope,  f->project_id, f->shared};
    return db_exec_page(c, "gpu_model_list", 7, p, page);
}

enum db_status db_gpu_model_get(struct db_conn *c, const char *key, const char *scope, char **doc)
{
    const char *p[2] = {key, scope};
    return db_exec_doc(c, "gpu_model_get", 2, p, doc);
}

enum db_status db_gpu_model_share(struct db_conn *c, const char *key, int shared,
                                  struct db_gpu_model_change *out)
{
    const char *p[2] = {key, shared ? "true" : "false"};
    PGresult *r;
    memset(out, 0, sizeof *out);
    enum db_status s = db_exec(c, "gpu_model_share", 2, p, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        out->before = db_bool(r, 0, "before");
        out->catalog = !strcmp(db_str(r, 0, "source"), "catalog");
        db_copy(r, 0, "project_id", out->project_id, sizeof out->project_id);
        out->doc = db_dup(r, 0, "doc", &oom);
        if (oom)
            s = DB_HARD_ERROR;
    }
    PQclear(r);
    return s;
}

/* JSON number/string field → text parameter (NULL when absent or null). Caller frees.
 * A copy that fails sets *oom (never a NULL that would read as SQL NULL). */
static char *param(const json_t *obj, const char *name, int *oom)
{
    const json_t *v = json_object_get(obj, name);
    char buf[64], *out;
    if (v == NULL || json_is_null(v))
        return NULL;
    if (json_is_string(v)) {
        out = strdup(json_string_value(v));
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        out = strdup(buf);
    } else if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        out = strdup(buf);
    } else {
        out = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    }
    if (out == NULL)
        *oom = 1;
    return out;
}

enum db_status db_gpu_model_insert(struct db_conn *c, const json_t *body, const char *project_id,
                                   char **doc)
{
    static const char *const names[] = {"key",
                                        "vendor",
                                        "display_name",
                                        "memory_gib",
                                        "memory_type",
                                        "memory_bandwidth_gbps",
                                        "form_factor",
                                        "interconnect_bandwidth_gbps",
                                        "supported_formats"};
    static const char *const tflops[] = {"fp8", "bf16", "fp16", "int8", "tf32"};
    char *p[19] = {0};
    int oom = 0;
    *doc = NULL;
    for (int i = 0; i < 9; i++)
        p[i] = param(body, names[i], &oom);
    if (p[1] == NULL && (p[1] = strdup("NVIDIA")) == NULL)
        oom = 1;
    const json_t *dense = json_object_get(body, "dense_tflops");
    for (int i = 0; i < 5; i++)
        p[9 + i] = dense ? param(dense, tflops[i], &oom) : NULL;
    p[14] = param(body, "compute_capability", &oom);
    p[15] = param(body, "max_power_w", &oom);
    p[16] = param(body, "nvidia_smi_name", &oom);
    p[17] = param(body, "nvidia_smi_memory_total_mib", &oom);
    if ((p[18] = strdup(project_id)) == NULL)
        oom = 1;
    enum db_status s =
        oom ? DB_HARD_ERROR : db_exec_doc(c, "gpu_model_insert", 19, (const char *const *)p, doc);
    for (int i = 0; i < 19; i++)
        free(p[i]);
    return s;
}

/* "{fp32,bf16}" → bit mask over gpu_precision_names (unknown names are left out). */
static unsigned parse_formats(const char *s)
{
    unsigned mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, "{},", &save); t; t = strtok_r(NULL, "{},", &save)) {
        int p = util_lookup(gpu_precision_names, t);
        if (p >= 0)
            mask |= 1u << p;
    }
    return mask;
}

enum db_status db_gpu_catalog_decode(const PGresult *r, struct db_gpu_catalog *out)
{
    enum { C_KEY, C_NAME, C_MEM, C_SMI, C_FORMATS, C_PROJECT, C_SHARED, C_N };
    static const char *const names[C_N] = {
        "key",        "display_name", "memory_gib", "smi_memory_mib", "supported_formats",
        "project_id", "shared"};
    int col[C_N];
    size_t n = (size_t)PQntuples(r), bytes = 0;
    memset(out, 0, sizeof *out);
    db_cols(r, names, C_N, col);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(PQgetvalue(r, (int)i, col[C_KEY])) +
                 strlen(PQgetvalue(r, (int)i, col[C_NAME])) +
                 strlen(PQgetvalue(r, (int)i, col[C_PROJECT])) + 3;
    /* One block: the models, their owners, then their strings. */
    struct gpu_model *gpus = malloc(n * (sizeof *gpus + sizeof *out->owners) + bytes + 1);
    if (gpus == NULL)
        return DB_HARD_ERROR;
    struct db_gpu_owner *owners = (struct db_gpu_owner *)(gpus + n);
    char *str = (char *)(owners + n);
    for (size_t i = 0; i < n; i++) {
        int row = (int)i;
        struct gpu_model *g = &gpus[i];
        const char *key = PQgetvalue(r, row, col[C_KEY]);
        const char *display = PQgetvalue(r, row, col[C_NAME]);
        g->key = memcpy(str, key, strlen(key) + 1);
        str += strlen(key) + 1;
        g->display_name = memcpy(str, display, strlen(display) + 1);
        str += strlen(display) + 1;
        g->memory_gib = strtod(PQgetvalue(r, row, col[C_MEM]), NULL);
        g->smi_memory_mib = strtol(PQgetvalue(r, row, col[C_SMI]), NULL, 10);
        g->formats = parse_formats(PQgetvalue(r, row, col[C_FORMATS]));
        owners[i].project_id = NULL;
        if (!db_val_isnull(r, row, col[C_PROJECT])) {
            const char *project = PQgetvalue(r, row, col[C_PROJECT]);
            owners[i].project_id = memcpy(str, project, strlen(project) + 1);
            str += strlen(project) + 1;
        }
        owners[i].shared = db_val_bool(r, row, col[C_SHARED]);
    }
    out->gpus = gpus;
    out->owners = owners;
    out->n = n;
    return n == 0 ? DB_NO_RESULTS : n == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

enum db_status db_gpu_model_catalog(struct db_conn *c, struct db_gpu_catalog *out)
{
    PGresult *r;
    memset(out, 0, sizeof *out);
    enum db_status s = db_exec(c, "gpu_model_catalog", 0, NULL, &r);
    if (s >= 0)
        s = db_gpu_catalog_decode(r, out);
    PQclear(r);
    return s;
}

void db_gpu_catalog_free(struct db_gpu_catalog *cat)
{
    free(cat->gpus);
    cat->gpus = NULL;
    cat->owners = NULL;
    cat->n = 0;
}
