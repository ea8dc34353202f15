/* gpu_models.h — the GPU model catalog. */
#ifndef GPUFLEET_DB_GPU_MODELS_H
#define GPUFLEET_DB_GPU_MODELS_H

#include <jansson.h>

#include "db/db.h"

extern const struct db_stmt db_gpu_model_stmts[];
extern const size_t db_gpu_model_nstmts;

struct db_gpu_model_filter {
    const char *vendor;    /* exact, or NULL */
    const char *source;    /* catalog | custom, or NULL */
    const char *after_key; /* keyset position, or NULL */
    long limit;
};

/* A page of GpuModel documents ordered by key (keys are model keys). */
enum db_status db_gpu_model_list(struct db_conn *c, const struct db_gpu_model_filter *f,
                                 struct db_page *page);
/* *doc receives the GpuModel document (caller frees) on DB_ONE_RESULT. */
enum db_status db_gpu_model_get(struct db_conn *c, const char *key, char **doc);
/* Inserts a validated GpuModelCreate body as a custom model; *out receives the stored row.
 * A duplicate key or nvidia_smi_name gives DB_HARD_ERROR with a unique violation. */
enum db_status db_gpu_model_insert(struct db_conn *c, const json_t *body, char **doc);

/* The columns sizing needs, for every model ordered by key: rows of (key, display_name,
 * memory_gib float8, nvidia_smi_memory_total_mib or 0, supported_formats as {a,b}).
 * Caller PQclear()s *res. */
enum db_status db_gpu_model_catalog(struct db_conn *c, PGresult **res);

#endif
