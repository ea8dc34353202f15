/* catalog.h — an in-process snapshot of the GPU catalog for sizing. It is reloaded when
 * older than CATALOG_TTL_US, and at once after this process adds a model; another
 * replica's addition shows up within the TTL. */
#ifndef GPUFLEET_CATALOG_H
#define GPUFLEET_CATALOG_H

#include <stddef.h>

#include "db/db.h"
#include "planner/sizing.h"

#define CATALOG_TTL_US (5 * 1000000LL)

struct api_catalog {
    int refs; /* guarded by the cache lock */
    size_t n;
    struct plan_gpu *gpus; /* strings point into the snapshot's own storage */
    char **strings;
    int64_t loaded_us;
};

/* Returns a referenced snapshot (release it with api_catalog_release), loading it with
 * c when needed. NULL with *status set when the load failed. */
struct api_catalog *api_catalog_get(struct db_conn *c, enum db_status *status);
void api_catalog_release(struct api_catalog *cat);
/* Marks the snapshot stale (after a model was added). */
void api_catalog_invalidate(void);
/* Drops the cache's reference at shutdown. */
void api_catalog_shutdown(void);

#endif
