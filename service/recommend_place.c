/* recommend_place.c — see recommend_place.h. */
#include "service/recommend_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/costs.h"
#include "db/recommend.h"
#include "service/placement.h"

enum db_status svc_rec_place_read(struct db_conn *c, int64_t at_us, json_t *out)
{
    char from[40], to[40];
    struct db_rec_briefs ran = {0, NULL, NULL};
    enum db_status s = db_rec_briefs_ran(c, at_us, &ran);
    util_rfc3339(at_us - (int64_t)(SVC_PLACE_DEFAULT_WINDOW_S * 1e6), from, sizeof from);
    util_rfc3339(at_us, to, sizeof to);
    for (size_t j = 0; j < ran.n && s >= 0; j++) {
        const struct db_rec_brief *b = &ran.briefs[j];
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
    db_rec_briefs_free(&ran);
    return s < 0 ? s : DB_ONE_RESULT;
}
