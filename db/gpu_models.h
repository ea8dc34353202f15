/* gpu_models.h — the GPU model catalog. */
#ifndef GPUFLEET_DB_GPU_MODELS_H
#define GPUFLEET_DB_GPU_MODELS_H

#include <jansson.h>

#include "common/gpu.h"
#include "db/db.h"

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

/* The catalog as sizing reads it: every model ordered by key. gpus is one allocation
 * that also holds the strings (key, display_name); free it with db_gpu_catalog_free (or
 * free(gpus)). smi_memory_mib is 0 when unknown; formats has bit (1 << precision) for
 * each supported precision of gpu_precision_names. */
struct db_gpu_catalog {
    size_t n;
    struct gpu_model *gpus;
};
/* Fills *out (overwritten: start empty); on failure it is left empty. */
enum db_status db_gpu_model_catalog(struct db_conn *c, struct db_gpu_catalog *out);
void db_gpu_catalog_free(struct db_gpu_catalog *cat);

#endif
