/* catalog.h — an in-process snapshot of the GPU catalog for sizing. It is reloaded when
 * older than CATALOG_TTL_US, and at once after this process adds a model; another
 * replica's addition shows up within the TTL. */
#ifndef GPUFLEET_CATALOG_H
#define GPUFLEET_CATALOG_H

#include <stddef.h>

#include "common/gpu.h"
#include "db/db.h"
#include "db/gpu_models.h"

#define CATALOG_TTL_US (5 * 1000000LL)

struct svc_catalog {
    int refs; /* guarded by the cache lock */
    size_t n;
    struct gpu_model *gpus;            /* one block with its strings (db_gpu_model_catalog) */
    const struct db_gpu_owner *owners; /* owners[i]: gpus[i]'s project and shared flag */
    int64_t loaded_us;
};

/* Returns a referenced snapshot (release it with svc_catalog_release), loading it with
 * c when needed. NULL with *status set when the load failed. */
struct svc_catalog *svc_catalog_get(struct db_conn *c, enum db_status *status);
void svc_catalog_release(struct svc_catalog *cat);
/* The models of cat that the projects of scope may use, in key order, into out (room for
 * cat->n): the shared ones and those of a project in scope (a uuid[] literal "{a,b}"; NULL:
 * every model). Returns how many. The strings borrow from cat. */
size_t svc_catalog_usable(const struct svc_catalog *cat, const char *scope, struct gpu_model *out);
/* Marks the snapshot stale (after a model was added or its sharing changed). */
void svc_catalog_invalidate(void);
/* Drops the cache's reference at shutdown. */
void svc_catalog_shutdown(void);

#endif
