/* sizing.c — sizing estimates. The arithmetic is planner/sizing.c; this file reads the
 * options, the brief and the catalog snapshot, and renders the answer. */
#include "api/sizing.h"

#include <stdlib.h>
#include <string.h>

#include "api/briefs.h"
#include "api/catalog.h"
#include "api/list.h"
#include "db/briefs.h"
#include "planner/brief.h"
#include "planner/sizing.h"

static int number_in(const char *v, double lo, double hi)
{
    char *e;
    double d = strtod(v, &e);
    return e != v && *e == '\0' && d >= lo && d <= hi;
}
static int valid_pct(const char *v) { return number_in(v, 0, 90); }
static int valid_factor(const char *v) { return number_in(v, 1, 4); }
static int valid_fixed(const char *v) { return number_in(v, 0, 64); }

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

struct sizing_arg {
    const char *id;            /* stored brief to size, or NULL */
    char *brief;               /* its document */
    struct api_catalog *cat;   /* referenced snapshot */
};

static enum db_status sizing_fn(struct db_conn *c, void *arg)
{
    struct sizing_arg *a = arg;
    enum db_status s;
    if (a->id != NULL) {
        s = db_brief_get(c, a->id, 0, &a->brief);
        if (s <= 0)
            return s;
    }
    a->cat = api_catalog_get(c, &s);
    return s;
}

/* Sizes a checked brief against the catalog and replies. */
static enum MHD_Result answer(struct api_req *r, const json_t *brief,
                              const struct api_catalog *cat, const struct plan_options *o,
                              const char *brief_id, long revision)
{
    struct plan_brief b;
    struct plan_sizing s;
    plan_brief_to_sizing(brief, &b);
    plan_size(&b, o, &s);
    return api_reply_text(r, MHD_HTTP_OK,
                          plan_sizing_render(&b, o, &s, cat->gpus, cat->n, brief_id, revision),
                          NULL);
}

enum MHD_Result api_sizing(struct api_req *r)
{
    struct plan_options o;
    if (sizing_options(r, &o) != 0 || api_brief_check(r, r->json) != 0)
        return MHD_YES;
    struct sizing_arg a = {NULL, NULL, NULL};
    enum db_status s = db_run(sizing_fn, &a);
    if (s < 0)
        return api_reply_db(r, s);
    enum MHD_Result ret = answer(r, r->json, a.cat, &o, NULL, 0);
    api_catalog_release(a.cat);
    return ret;
}

enum MHD_Result api_briefs_sizing(struct api_req *r)
{
    struct plan_options o;
    const char *id = api_brief_id(r);
    if (id == NULL || sizing_options(r, &o) != 0)
        return MHD_YES;
    struct sizing_arg a = {id, NULL, NULL};
    enum db_status s = db_run(sizing_fn, &a);
    json_t *brief = a.brief ? json_loads(a.brief, 0, NULL) : NULL;
    free(a.brief);
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (brief == NULL || a.cat == NULL)
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no brief has this id");
    else
        ret = answer(r, brief, a.cat, &o, json_string_value(json_object_get(brief, "id")),
                     (long)json_integer_value(json_object_get(brief, "revision")));
    json_decref(brief);
    api_catalog_release(a.cat);
    return ret;
}
