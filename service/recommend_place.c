/* recommend_place.c — see recommend_place.h. */
#include "service/recommend_place.h"

#include <string.h>

#include "common/util.h"
#include "service/placement.h"

static int brief_ran(const struct db_rec_input *in, const char *id)
{
    for (size_t i = 0; i < in->nusage; i++) {
        const char *b = in->usage[i].row.brief_id;
        if (b != NULL && strcmp(b, id) == 0)
            return 1;
    }
    return 0;
}

enum db_status svc_rec_place_read(struct db_conn *c, int64_t at_us, const struct db_rec_input *in,
                                  json_t *out)
{
    char from[40], to[40];
    util_rfc3339(at_us - (int64_t)(SVC_PLACE_DEFAULT_WINDOW_S * 1e6), from, sizeof from);
    util_rfc3339(at_us, to, sizeof to);
    for (size_t j = 0; j < in->nbriefs; j++) {
        const struct db_rec_brief *b = &in->briefs[j];
        if (!brief_ran(in, b->id))
            continue;
        json_t *brief = json_loads(b->spec, 0, NULL);
        if (brief == NULL)
            continue;
        json_object_set_new(brief, "id", json_string(b->id));
        json_object_set_new(brief, "project", json_pack("{s:s}", "id", b->project_id));
        enum db_status s;
        json_t *doc = svc_placement(c, brief, from, to, &s);
        json_decref(brief);
        if (doc == NULL)
            return s < 0 ? s : DB_HARD_ERROR;
        json_t *rec = json_object_get(doc, "recommendation");
        if (json_is_object(rec)) {
            json_object_del(rec, "project"); /* add_projects sets it with the name */
            json_array_append(out, rec);
        }
        json_decref(doc);
    }
    return DB_ONE_RESULT;
}
