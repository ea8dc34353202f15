/* gpu_models.h — the GPU model catalog. */
#ifndef GPUFLEET_DB_GPU_MODELS_H
#define GPUFLEET_DB_GPU_MODELS_H

#include <jansson.h>

#include "common/gpu.h"
#include "db/db.h"

/* A model belongs to a project (a custom one) or to none (the catalog's); a shared one
 * (every catalog model, and those a platform admin shares) is readable and usable by every
 * project. Reads take a scope (a uuid[] literal of project ids, NULL for every project)
 * and see the shared models besides the scope's own. */
struct db_gpu_model_filter {
    const char *vendor;    /* exact, or NULL */
    const char *source;    /* catalog | custom, or NULL */
    const char *after_key; /* keyset position, or NULL */
    long limit;
    const char *scope, *project_id; /* the caller's read scope; the ?project= filter (or NULL) */
    const char *shared;             /* "true", "false", or NULL for both */
};

/* A page of GpuModel documents ordered by key (keys are model keys). */
enum db_status db_gpu_model_list(struct db_conn *c, const struct db_gpu_model_filter *f,
                                 struct db_page *page);
/* *doc receives the GpuModel document (caller frees) on DB_ONE_RESULT: a shared model, or
 * one of a project in scope. */
enum db_status db_gpu_model_get(struct db_conn *c, const char *key, const char *scope, char **doc);
/* Inserts a validated GpuModelCreate body as a custom model of project_id (not shared);
 * *doc receives the document. Keys are global (a key is a catalog identifier): a duplicate
 * key or nvidia_smi_name, of any project, gives DB_HARD_ERROR with a unique violation. */
enum db_status db_gpu_model_insert(struct db_conn *c, const json_t *body, const char *project_id,
                                   char **doc);

/* What a change of the shared flag did. doc is the new GpuModel document (caller frees),
 * NULL when nothing was written: the catalog's own models stay shared. */
struct db_gpu_model_change {
    int before, catalog;
    char project_id[37]; /* the model's project ("" for the catalog's) */
    char *doc;
};
/* Locks the model and sets its shared flag (a platform admin's act: unscoped).
 * DB_NO_RESULTS: no such model. */
enum db_status db_gpu_model_share(struct db_conn *c, const char *key, int shared,
                                  struct db_gpu_model_change *out);

/* The catalog as sizing reads it: every model ordered by key, of every project (the
 * reader keeps those a project may use: shared, or its own). gpus is one allocation
 * that also holds owners[] and the strings (key, display_name, project_id); free it with
 * db_gpu_catalog_free (or free(gpus)). smi_memory_mib is 0 when unknown; formats has bit
 * (1 << precision) for each supported precision of gpu_precision_names. */
struct db_gpu_owner {
    const char *project_id; /* the project of a custom model; NULL for the catalog's own */
    int shared;             /* every project may use it (the catalog's own always are) */
};
struct db_gpu_catalog {
    size_t n;
    struct gpu_model *gpus;
    struct db_gpu_owner *owners; /* owners[i] is gpus[i]'s (inside the gpus block) */
};
/* Fills *out (overwritten: start empty); on failure it is left empty. */
enum db_status db_gpu_model_catalog(struct db_conn *c, struct db_gpu_catalog *out);
void db_gpu_catalog_free(struct db_gpu_catalog *cat);

#endif
