/* sizing.c — sizing estimates. The arithmetic is planner/sizing.c; this file reads the
 * options, the brief and the catalog snapshot, and renders the answer. The models sized
 * are those the brief's project may use (the shared ones and its own); for an unsaved
 * brief, those of the project the body names, else those the caller may see. */
#include "api/sizing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/briefs.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "db/briefs.h"
#include "planner/brief.h"
#include "planner/sizing.h"
#include "service/catalog.h"

static int number_in(const char *v, double lo, double hi)
{
    char *e;
    double d = strtod(v, &e);
    return e != v && *e == '\0' && d >= lo && d <= hi;
}
static int valid_pct(const char *v)
{
    return number_in(v, 0, 90);
}
static int valid_factor(const char *v)
{
    return number_in(v, 1, 4);
}
static int valid_fixed(const char *v)
{
    return number_in(v, 0, 64);
}

static const struct list_filter sizing_params[] = {
    {"reserve_pct", valid_pct, "a number from 0 to 90"},
    {"overhead_factor", valid_factor, "a number from 1 to 4"},
    {"overhead_fixed_gib", valid_fixed, "a number from 0 to 64"},
};

/* Parses the sizing options from the query. Returns 0, or -1 after replying. */
static int sizing_options(struct api_req *r, struct plan_options *o)
{
    struct list_query q;
    if (api_list_parse(r, NULL, sizing_params, 3, &q) != 0)
        return -1;
    plan_default_options(o);
    if (q.values[0])
        o->reserve_pct = strtod(q.values[0], NULL);
    if (q.values[1])
        o->overhead_factor = strtod(q.values[1], NULL);
    if (q.values[2])
        o->overhead_fixed_gib = strtod(q.values[2], NULL);
    api_list_query_free(&q);
    return 0;
}

static enum db_status catalog_fn(struct db_conn *c, void *arg)
{
    struct svc_catalog **cat = arg;
    enum db_status s;
    *cat = svc_catalog_get(c, &s);
    return s;
}

/* The catalog snapshot (release it), or NULL after replying 503/500. */
static struct svc_catalog *catalog(struct api_req *r)
{
    struct svc_catalog *cat = NULL;
    enum db_status s = db_run(catalog_fn, &cat);
    if (cat == NULL)
        api_reply_db(r, s < 0 ? s : DB_HARD_ERROR);
    return cat;
}

static enum db_status fetch_brief(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    return db_brief_get(c, id, scope, 0, doc);
}

/* Sizes a checked brief against the models of cat that scope may use (svc_catalog_usable)
 * and replies. */
static enum MHD_Result answer(struct api_req *r, const json_t *brief, const struct svc_catalog *cat,
                              const char *scope, const struct plan_options *o, const char *brief_id,
                              long revision)
{
    struct plan_brief b;
    struct plan_sizing s;
    struct gpu_model *gpus = malloc((cat->n ? cat->n : 1) * sizeof *gpus);
    if (gpus == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
    size_t n = svc_catalog_usable(cat, scope, gpus);
    plan_brief_to_sizing(brief, &b);
    plan_size(&b, o, &s);
    char *text = plan_sizing_render(&b, o, &s, gpus, n, brief_id, revision);
    free(gpus);
    return api_reply_text(r, MHD_HTTP_OK, text, NULL);
}

enum MHD_Result api_sizing(struct api_req *r)
{
    struct plan_options o;
    char project_id[37], one[40];
    const char *scope = NULL;
    if (sizing_options(r, &o) != 0)
        return MHD_YES;
    if (json_object_get(r->json, "project") != NULL) { /* the models of the project named */
        if (api_create_project(r, API_READ_ROLES, project_id, NULL) != 0)
            return MHD_YES;
        snprintf(one, sizeof one, "{%s}", project_id);
        scope = one;
    } else {
        scope = api_scope_read(r);
    }
    if (api_brief_check(r, r->json) != 0)
        return MHD_YES;
    struct svc_catalog *cat = catalog(r);
    if (cat == NULL)
        return MHD_YES;
    enum MHD_Result ret = answer(r, r->json, cat, scope, &o, NULL, 0);
    svc_catalog_release(cat);
    return ret;
}

enum MHD_Result api_briefs_sizing(struct api_req *r)
{
    struct plan_options o;
    const char *id = api_path_id(r, "brief");
    if (id == NULL || sizing_options(r, &o) != 0)
        return MHD_YES;
    char *doc = api_fetch_document_in(r, id, "brief", fetch_brief);
    if (doc == NULL)
        return MHD_YES;
    json_t *brief = json_loads(doc, 0, NULL);
    free(doc);
    const char *project_id =
        json_string_value(json_object_get(json_object_get(brief, "project"), "id"));
    struct svc_catalog *cat = brief && project_id ? catalog(r) : NULL;
    enum MHD_Result ret = MHD_YES;
    char scope[40];
    snprintf(scope, sizeof scope, "{%s}", project_id ? project_id : "");
    if (brief == NULL || project_id == NULL)
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    else if (cat != NULL) /* the stored brief: its id and revision come from the database */
        ret = answer(r, brief, cat, scope, &o, json_string_value(json_object_get(brief, "id")),
                     (long)json_integer_value(json_object_get(brief, "revision")));
    json_decref(brief);
    svc_catalog_release(cat);
    return ret;
}
