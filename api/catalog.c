/* catalog.c — see catalog.h. */
#include "api/catalog.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/gpu_models.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct api_catalog *current;
static int stale;

static void destroy(struct api_catalog *cat)
{
    for (size_t i = 0; i < 2 * cat->n; i++)
        free(cat->strings[i]);
    free(cat->strings);
    free(cat->gpus);
    free(cat);
}

/* "{fp32,bf16}" → bit mask over plan_precision_names */
static unsigned parse_formats(const char *s)
{
    unsigned mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, "{},", &save); t; t = strtok_r(NULL, "{},", &save)) {
        int p = plan_lookup(plan_precision_names, t);
        if (p >= 0)
            mask |= 1u << p;
    }
    return mask;
}

static struct api_catalog *load(struct db_conn *c, enum db_status *status)
{
    PGresult *r;
    *status = db_gpu_model_catalog(c, &r);
    if (*status < 0)
        return NULL;
    size_t n = (size_t)PQntuples(r);
    struct api_catalog *cat = calloc(1, sizeof *cat);
    if (cat != NULL) {
        cat->gpus = calloc(n ? n : 1, sizeof *cat->gpus);
        cat->strings = calloc(2 * n + 1, sizeof *cat->strings);
    }
    if (cat == NULL || cat->gpus == NULL || cat->strings == NULL) {
        free(cat ? cat->gpus : NULL);
        free(cat);
        PQclear(r);
        *status = DB_HARD_ERROR;
        return NULL;
    }
    cat->n = n;
    for (size_t i = 0; i < n; i++) {
        cat->strings[2 * i] = strdup(PQgetvalue(r, (int)i, 0));
        cat->strings[2 * i + 1] = strdup(PQgetvalue(r, (int)i, 1));
        cat->gpus[i].key = cat->strings[2 * i];
        cat->gpus[i].display_name = cat->strings[2 * i + 1];
        cat->gpus[i].memory_gib = strtod(PQgetvalue(r, (int)i, 2), NULL);
        cat->gpus[i].smi_memory_mib = strtol(PQgetvalue(r, (int)i, 3), NULL, 10);
        cat->gpus[i].formats = parse_formats(PQgetvalue(r, (int)i, 4));
    }
    PQclear(r);
    cat->loaded_us = util_mono_us();
    return cat;
}

struct api_catalog *api_catalog_get(struct db_conn *c, enum db_status *status)
{
    pthread_mutex_lock(&mu);
    if (current == NULL || stale || util_mono_us() - current->loaded_us > CATALOG_TTL_US) {
        struct api_catalog *fresh = load(c, status);
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
    struct api_catalog *cat = current;
    pthread_mutex_unlock(&mu);
    *status = DB_MANY_RESULTS;
    return cat;
}

void api_catalog_release(struct api_catalog *cat)
{
    if (cat == NULL)
        return;
    pthread_mutex_lock(&mu);
    if (--cat->refs == 0)
        destroy(cat);
    pthread_mutex_unlock(&mu);
}

void api_catalog_invalidate(void)
{
    pthread_mutex_lock(&mu);
    stale = 1;
    pthread_mutex_unlock(&mu);
}

void api_catalog_shutdown(void)
{
    pthread_mutex_lock(&mu);
    if (current != NULL && --current->refs == 0)
        destroy(current);
    current = NULL;
    pthread_mutex_unlock(&mu);
}
