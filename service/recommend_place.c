/* recommend_place.c — see recommend_place.h. */
#include "service/recommend_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/costs.h"
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
    enum db_status s = DB_ONE_RESULT;
    util_rfc3339(at_us - (int64_t)(SVC_PLACE_DEFAULT_WINDOW_S * 1e6), from, sizeof from);
    util_rfc3339(at_us, to, sizeof to);
    for (size_t j = 0; j < in->nbriefs && s >= 0; j++) {
        const struct db_rec_brief *b = &in->briefs[j];
        if (!brief_ran(in, b->id))
            continue;
        json_t *brief = json_loads(b->spec, 0, NULL);
        if (brief == NULL)
            continue;
        json_object_set_new(brief, "id", json_string(b->id));
        json_object_set_new(brief, "project", json_pack("{s:s}", "id", b->project_id));
        /* Each brief reads the cost input of the hosts that ran it only. */
        struct db_cost_input cost;
        memset(&cost, 0, sizeof cost);
        json_t *doc = svc_placement_with(c, brief, from, to, &cost, &s);
        json_decref(brief);
        if (doc == NULL) {
            s = s < 0 ? s : DB_HARD_ERROR;
            break;
        }
        json_t *rec = json_object_get(doc, "recommendation");
        if (json_is_object(rec)) { /* the brief's project, named from the hosts read */
            const char *name = "";
            for (size_t h = 0; h < cost.nhosts; h++)
                if (cost.hosts[h].project_name != NULL) {
                    name = cost.hosts[h].project_name;
                    break;
                }
            json_object_set_new(rec, "project",
                                json_pack("{s:s,s:s}", "id", b->project_id, "name", name));
            json_array_append(out, rec);
        }
        json_decref(doc);
        db_cost_input_free(&cost);
    }
    return s < 0 ? s : DB_ONE_RESULT;
}
