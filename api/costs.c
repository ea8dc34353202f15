/* costs.c — GET /v1/costs?from=&to=&group_by=. Reads held time and summed reports
 * (db/costs.c), groups and prices them (planner/costs.c), and writes the document. */
#include "api/costs.h"

#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "common/util.h"
#include "db/costs.h"
#include "planner/costs.h"

static int valid_group_by(const char *v)
{
    for (int i = 0; plan_group_by_names[i]; i++)
        if (strcmp(plan_group_by_names[i], v) == 0)
            return 1;
    return 0;
}

static const struct list_filter cost_filters[] = {
    {"from", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"to", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"group_by", valid_group_by, "one of host, pool, brief"},
};

struct cost_arg {
    const char *from, *to;
    PGresult *hosts, *reports;
};

static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct cost_arg *a = arg;
    if (a->hosts)
        PQclear(a->hosts);
    if (a->reports)
        PQclear(a->reports);
    a->hosts = a->reports = NULL;
    enum db_status s = db_cost_hosts(c, a->from, a->to, &a->hosts);
    if (s < 0)
        return s;
    return db_cost_reports(c, a->from, a->to, &a->reports);
}

static double num(const PGresult *r, int row, int col) { return atof(PQgetvalue(r, row, col)); }
static const char *str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static json_t *opt_real(int has, double v) { return has ? json_real(v) : json_null(); }

static json_t *group_json(const struct plan_cost_group *g, const struct plan_cost *c)
{
    json_t *units = json_object(), *per = json_object();
    for (int k = 0; k < PLAN_UNIT_COUNT; k++) {
        if (!c->has_unit[k])
            continue;
        json_object_set_new(units, plan_unit_names[k], json_integer((json_int_t)c->completed[k]));
        json_object_set_new(per, plan_unit_names[k],
                            c->has_cost_per_unit[k]
                                ? json_pack("{s:f,s:f}", "per_unit", c->cost_per_unit[k],
                                            "per_1000", c->cost_per_unit[k] * 1000)
                                : json_null());
    }
    return json_pack(
        "{s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:{s:f,s:o},s:o,s:o,s:f,s:f,s:o,s:o,s:b}", "id",
        g->id ? json_string(g->id) : json_null(), "name",
        g->name ? json_string(g->name) : json_null(), "compute", c->compute, "storage",
        c->storage, "data_movement", c->data_movement, "overhead", c->overhead, "total",
        c->total, "failed_retried", "amount", c->failed_retried_amount, "share",
        opt_real(c->has_share, c->failed_retried_share), "completed_units", units,
        "cost_per_completed_unit", per, "held_hours", c->held_hours, "busy_hours",
        c->busy_hours, "utilization", opt_real(c->has_utilization, c->utilization),
        "idle_hours", opt_real(c->has_idle_hours, c->idle_hours), "no_usage_data",
        c->no_usage_data);
}

static int by_id(const void *a, const void *b)
{
    const struct plan_cost_group *x = a, *y = b;
    if (x->id == NULL || y->id == NULL)
        return (x->id == NULL) - (y->id == NULL); /* the group without a brief last */
    return strcmp(x->id, y->id);
}

enum MHD_Result api_costs(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, NULL, cost_filters, 3, &q) != 0)
        return MHD_YES;
    int64_t from_us, to_us = util_now_us();
    if (q.values[1] != NULL)
        util_parse_rfc3339(q.values[1], &to_us);
    from_us = to_us - (int64_t)COSTS_DEFAULT_WINDOW_S * 1000000;
    if (q.values[0] != NULL)
        util_parse_rfc3339(q.values[0], &from_us);
    if (to_us <= from_us)
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "to", "to must be after from");
    if (to_us - from_us > COSTS_MAX_WINDOW_S * 1000000)
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, "to",
                                 "the window from..to must be at most 366 days");
    enum plan_group_by by = PLAN_BY_HOST;
    for (int i = 0; q.values[2] && plan_group_by_names[i]; i++)
        if (strcmp(plan_group_by_names[i], q.values[2]) == 0)
            by = (enum plan_group_by)i;

    char from[40], to[40];
    util_rfc3339(from_us, from, sizeof from);
    util_rfc3339(to_us, to, sizeof to);
    struct cost_arg a = {from, to, NULL, NULL};
    enum db_status s = db_run_tx(read_fn, &a);
    if (s < 0) {
        if (a.hosts)
            PQclear(a.hosts);
        if (a.reports)
            PQclear(a.reports);
        return api_reply_db(r, s);
    }

    int nh = PQntuples(a.hosts), nr = PQntuples(a.reports);
    struct plan_cost_host *hosts = calloc((size_t)nh + 1, sizeof *hosts);
    struct plan_cost_row *rows = calloc((size_t)nr + 1, sizeof *rows);
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    enum MHD_Result ret;
    if (hosts == NULL || rows == NULL) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    for (int i = 0; i < nh; i++) {
        struct plan_cost_host *h = &hosts[i];
        h->id = str(a.hosts, i, 0);
        h->name = str(a.hosts, i, 1);
        h->pool_id = str(a.hosts, i, 2);
        h->pool_name = str(a.hosts, i, 3);
        h->prices = (struct plan_prices){num(a.hosts, i, 4), num(a.hosts, i, 5),
                                         num(a.hosts, i, 6), num(a.hosts, i, 7)};
        h->held_seconds = num(a.hosts, i, 8);
    }
    /* Both results are ordered by host id: merge. */
    int h = 0, n = 0;
    for (int i = 0; i < nr; i++) {
        const char *host_id = PQgetvalue(a.reports, i, 0);
        while (h < nh && strcmp(hosts[h].id, host_id) < 0)
            h++;
        if (h == nh || strcmp(hosts[h].id, host_id) != 0)
            continue; /* not in the hosts result (deleted meanwhile) */
        struct plan_cost_row *w = &rows[n++];
        w->host = (size_t)h;
        w->brief_id = str(a.reports, i, 1);
        w->brief_name = str(a.reports, i, 2);
        w->unit = plan_unit_lookup(PQgetvalue(a.reports, i, 3));
        w->reports = atol(PQgetvalue(a.reports, i, 4));
        w->completed = num(a.reports, i, 5);
        w->failed = num(a.reports, i, 6);
        w->retried = num(a.reports, i, 7);
        w->busy_seconds = num(a.reports, i, 8);
        w->covered_seconds = num(a.reports, i, 9);
        w->storage_gb_seconds = num(a.reports, i, 10);
        w->storage_seconds = num(a.reports, i, 11);
        w->bytes_moved = num(a.reports, i, 12);
    }
    if (plan_costs_group(hosts, (size_t)nh, rows, (size_t)n, by, &groups, &ng) != 0) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    if (ng > 1)
        qsort(groups, ng, sizeof *groups, by_id);
    json_t *items = json_array();
    for (size_t i = 0; i < ng; i++) {
        struct plan_cost c;
        plan_cost_finish(&groups[i].acc, &c);
        json_array_append_new(items, group_json(&groups[i], &c));
    }
    json_t *body = json_pack("{s:s,s:s,s:s,s:o}", "from", from, "to", to, "group_by",
                             plan_group_by_names[by], "items", items);
    ret = api_reply_json(r, MHD_HTTP_OK, body, NULL);
out:
    free(groups);
    free(hosts);
    free(rows);
    PQclear(a.hosts);
    PQclear(a.reports);
    return ret;
}
