/* catalog.c — see catalog.h. */
#include "service/catalog.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/util.h"
#include "db/gpu_models.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct svc_catalog *current;
static int stale;

static void destroy(struct svc_catalog *cat)
{
    free(cat->gpus);
    free(cat);
}

static struct svc_catalog *load(struct db_conn *c, enum db_status *status)
{
    struct db_gpu_catalog read = {0};
    struct svc_catalog *cat = calloc(1, sizeof *cat);
    if (cat == NULL) {
        *status = DB_HARD_ERROR;
        return NULL;
    }
    *status = db_gpu_model_catalog(c, &read);
    if (*status < 0) {
        free(cat);
        return NULL;
    }
    cat->n = read.n;
    cat->gpus = read.gpus; /* steals the block (models and their strings) */
    cat->loaded_us = util_mono_us();
    return cat;
}

struct svc_catalog *svc_catalog_get(struct db_conn *c, enum db_status *status)
{
    pthread_mutex_lock(&mu);
    if (current == NULL || stale || util_mono_us() - current->loaded_us > CATALOG_TTL_US) {
        struct svc_catalog *fresh = load(c, status);
        if (fresh == NULL) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        if (current != NULL && --current->refs == 0)
            destroy(current);
        current = fresh;
        current->refs = 1; /* the cache's own reference */
        stale = 0;
    }
    current->refs++;
    struct svc_catalog *cat = current;
    pthread_mutex_unlock(&mu);
    *status = DB_MANY_RESULTS;
    return cat;
}

void svc_catalog_release(struct svc_catalog *cat)
{
    if (cat == NULL)
        return;
    pthread_mutex_lock(&mu);
    if (--cat->refs == 0)
        destroy(cat);
    pthread_mutex_unlock(&mu);
}

void svc_catalog_invalidate(void)
{
    pthread_mutex_lock(&mu);
    stale = 1;
    pthread_mutex_unlock(&mu);
}

void svc_catalog_shutdown(void)
{
    pthread_mutex_lock(&mu);
    if (current != NULL && --current->refs == 0)
        destroy(current);
    current = NULL;
    pthread_mutex_unlock(&mu);
}
