/* rollout_cost.c — see rollout_cost.h. The cost report's own inputs (db_cost_read) and
 * arithmetic (planner/costs.h), grouped by pool. */
#include "service/rollout_cost.h"

#include <stdlib.h>
#include <string.h>

#include "db/costs.h"
#include "db/rollouts_read.h"
#include "planner/costs.h"

/* One side of the cost view: the pool's cost per completed unit over [from, to), as the
 * cost report prices it. Without work reports (or an empty window: in NULL) the figures
 * are null. NULL when out of memory. */
static json_t *cost_side(const struct db_cost_input *in, const char *pool_id, const char *from,
                         const char *to)
{
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    const struct plan_cost_group *g = NULL;
    if (in != NULL && plan_costs_group(in->hosts, in->nhosts, in->rows, in->nrows, PLAN_BY_POOL,
                                       &groups, &ng) != 0)
        return NULL;
    for (size_t i = 0; i < ng && g == NULL; i++)
        if (groups[i].id != NULL && strcmp(groups[i].id, pool_id) == 0)
            g = &groups[i];
    struct plan_cost pc;
    int unit = -1;
    if (g != NULL) {
        plan_cost_finish(&g->acc, &pc);
        unit = plan_cost_main_unit(&pc);
    }
    json_t *side;
    if (unit < 0 || pc.no_usage_data)
        side = json_pack("{s:s,s:s,s:n,s:n,s:n,s:n,s:s}", "from", from, "to", to, "unit", "units",
                         "cost", "cost_per_unit", "currency", "USD");
    else
        side = json_pack(
            "{s:s,s:s,s:s,s:I,s:f,s:o,s:s}", "from", from, "to", to, "unit", usage_unit_names[unit],
            "units", (json_int_t)pc.completed[unit], "cost", pc.total, "cost_per_unit",
            pc.has_cost_per_unit[unit] ? json_real(pc.cost_per_unit[unit]) : json_null(),
            "currency", "USD");
    free(groups);
    return side;
}

/* Reads and prices one window; an empty window reads nothing. */
static enum db_status cost_window(struct db_conn *c, const char *pool_id, const char *from,
                                  const char *to, json_t **side)
{
    struct db_cost_input in = {0};
    enum db_status s = DB_NO_RESULTS;
    if (strcmp(from, to) < 0) { /* same fixed-width UTC format: text order is time order */
        s = db_cost_read(c, from, to, NULL, &in);
        if (s < 0)
            return s;
    }
    *side = cost_side(s < 0 || strcmp(from, to) >= 0 ? NULL : &in, pool_id, from, to);
    db_cost_input_free(&in);
    return *side != NULL ? DB_ONE_RESULT : DB_HARD_ERROR;
}

enum db_status svc_rollout_cost(struct db_conn *c, const char *id, json_t **cost)
{
    struct db_rollout_window w;
    *cost = NULL;
    enum db_status s = db_rollout_window(c, id, &w);
    if (s != DB_ONE_RESULT)
        return s;
    json_t *before = NULL, *after = NULL;
    s = cost_window(c, w.pool_id, w.before_from, w.start, &before);
    if (s >= 0)
        s = cost_window(c, w.pool_id, w.after_from, w.now, &after);
    if (s < 0) {
        json_decref(before);
        json_decref(after);
        return s;
    }
    *cost = json_pack("{s:o,s:o}", "before", before, "after", after);
    return *cost != NULL ? DB_ONE_RESULT : DB_HARD_ERROR;
}
