/* catalog.c — see catalog.h. */
#include "service/catalog.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
    cat->gpus = read.gpus; /* steals the block (models, owners and their strings) */
    cat->owners = read.owners;
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

/* Whether project_id is one of the ids of the uuid[] literal scope ("{a,b}"). */
static int in_scope(const char *scope, const char *project_id)
{
    size_t n = strlen(project_id);
    const char *p = scope;
    while (*p == '{' || *p == ',') {
        p++;
        if (strncmp(p, project_id, n) == 0 && (p[n] == ',' || p[n] == '}'))
            return 1;
        p += strcspn(p, ",}");
    }
    return 0;
}

size_t svc_catalog_usable(const struct svc_catalog *cat, const char *scope, struct gpu_model *out)
{
    size_t k = 0;
    for (size_t i = 0; i < cat->n; i++) {
        const struct db_gpu_owner *o = &cat->owners[i];
        if (scope == NULL || o->shared || (o->project_id && in_scope(scope, o->project_id)))
            out[k++] = cat->gpus[i];
    }
    return k;
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
