/* recommend_place.c — see recommend_place.h. */
#include "planner/recommend_place.h"

#include <stdio.h>
#include <string.h>

#include "planner/recommend.h"

static json_t *side(const struct plan_place_row *r, int unit)
{
    return plan_place_row_json(r, unit);
}

static int qualifies(const struct plan_place_row *r, long min_days)
{
    if (!r->has_cost || r->current)
        return 0;
    if (r->basis == PLACE_MEASURED)
        return r->days >= min_days;
    return r->basis == PLACE_DECLARED && strcmp(r->kind, "api") == 0;
}

json_t *plan_rec_rightsize(const struct plan_place_brief *b, const struct plan_place_row *rows,
                           size_t n, const char *brief_id, const char *brief_name, int *oom)
{
    const struct plan_place_row *cur = NULL, *best = NULL;
    *oom = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].current)
            cur = &rows[i];
    if (cur == NULL || !cur->has_cost || cur->days < b->min_days || cur->cost_per_unit <= 0)
        return NULL;
    double limit = cur->cost_per_unit * (1 - b->margin_pct / 100);
    for (size_t i = 0; i < n; i++) /* rows are sorted cheapest first */
        if (qualifies(&rows[i], b->min_days) && rows[i].cost_per_unit < limit) {
            best = &rows[i];
            break;
        }
    if (best == NULL)
        return NULL;
    char id[37], reason[512];
    plan_rec_id("rightsize", "rightsize", NULL, 0, cur->pool_id, brief_id, id);
    double saving = 1 - best->cost_per_unit / cur->cost_per_unit;
    snprintf(reason, sizeof reason,
             "brief %s costs %.2f per 1M %s on pool %s (measured over %ld days); %s %s costs "
             "%.2f per 1M (%s), %.0f%% less: more than the brief's margin of %.0f%%",
             brief_name, cur->cost_per_unit * 1e6, usage_unit_names[b->unit], cur->option,
             cur->days, best->kind, best->option, best->cost_per_unit * 1e6,
             best->basis == PLACE_MEASURED ? "measured" : "declared price", saving * 100,
             b->margin_pct);
    double per_hour =
        cur->per_hour > 0 && b->span_hours > 0
            ? b->completed / b->span_hours * (cur->cost_per_unit - best->cost_per_unit)
            : 0;
    json_t *ev = json_object();
    json_t *rec = json_pack("{s:s,s:s,s:s,s:{s:[],s:s,s:s},s:s,s:o,s:f}", "id", id, "action",
                            "rightsize", "rule", "rightsize", "target", "host_ids", "pool_id",
                            cur->pool_id, "brief_id", brief_id, "reason", reason, "evidence", ev,
                            "estimated_savings_per_hour", plan_round_cents(per_hour));
    if (rec == NULL || ev == NULL) {
        json_decref(rec);
        *oom = 1;
        return NULL;
    }
    json_object_set_new(ev, "current", side(cur, b->unit));
    json_object_set_new(ev, "proposed", side(best, b->unit));
    json_object_set_new(ev, "saving_pct", json_real(plan_round_to(saving * 100, 2)));
    json_object_set_new(ev, "margin_pct", json_real(b->margin_pct));
    json_object_set_new(ev, "min_days", json_integer(b->min_days));
    return rec;
}
