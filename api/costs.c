/* costs.c — GET /v1/costs?from=&to=&group_by=. Reads held time and summed reports
 * (db/costs.c, as the planner's inputs), groups and prices them (planner/costs.c), and
 * writes the document. */
#include "api/costs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/list.h"
#include "api/scope.h"
#include "common/util.h"
#include "db/costs.h"
#include "planner/costs.h"
#include "service/rollups.h"

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
    {"group_by", valid_group_by, "one of host, pool, brief, project"},
    {"project", NULL, "a project name or id"},
};

struct cost_arg {
    const char *from, *to, *projects;
    struct db_cost_input in;
};

static enum db_status read_fn(struct db_conn *c, void *arg)
{
    struct cost_arg *a = arg;
    return db_cost_read(c, a->from, a->to, a->projects, &a->in);
}

static json_t *opt_real(int has, double v)
{
    return has ? json_real(v) : json_null();
}

/* {phase: v[p], …}, with "not_broken_down" when rest is not NULL. */
static json_t *phase_map(const double *v, const double *rest)
{
    json_t *o = json_object();
    for (int p = 0; p < USAGE_PHASE_COUNT; p++)
        json_object_set_new(o, usage_phase_names[p], json_real(v[p]));
    if (rest != NULL)
        json_object_set_new(o, "not_broken_down", json_real(*rest));
    return o;
}

/* What the coverage note says (e.g. "phases given for 40% of busy time (12 of 30
 * reports); the rest is not broken down"). */
static json_t *phase_note(const struct plan_cost_phases *ph)
{
    if (!ph->has_seconds)
        return json_string("no report gave phases: the breakdown is unknown");
    if (!ph->has_coverage)
        return json_sprintf("phases given by %ld of %ld reports, which report no busy time: "
                            "the cost is not split",
                            ph->reports, ph->of_reports);
    if (!ph->has_share)
        return json_sprintf("phases given by %ld of %ld reports, all 0 s: the cost is not split",
                            ph->reports, ph->of_reports);
    return json_sprintf("phases given for %.4g%% of busy time (%ld of %ld reports)%s",
                        ph->covered_busy_share * 100, ph->reports, ph->of_reports,
                        ph->covered_busy_share < 1 ? "; the rest of the cost is not broken down"
                                                   : "");
}

/* The cost split by phase (planner/costs.h plan_cost_phases). */
static json_t *phases_json(const struct plan_cost_acc *acc, const struct plan_cost *c)
{
    struct plan_cost_phases ph;
    plan_cost_phases(acc, c, &ph);
    json_t *per = json_null();
    if (ph.has_split) {
        per = json_object();
        for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
            if (!c->has_unit[k])
                continue;
            if (!c->has_cost_per_unit[k]) {
                json_object_set_new(per, usage_unit_names[k], json_null());
                continue;
            }
            double k1000[USAGE_PHASE_COUNT];
            for (int p = 0; p < USAGE_PHASE_COUNT; p++)
                k1000[p] = ph.cost_per_unit[k][p] * 1000;
            double rest1000 = ph.per_unit_not_broken_down[k] * 1000;
            json_object_set_new(
                per, usage_unit_names[k],
                json_pack("{s:o,s:o}", "per_unit",
                          phase_map(ph.cost_per_unit[k], &ph.per_unit_not_broken_down[k]),
                          "per_1000", phase_map(k1000, &rest1000)));
        }
    }
    return json_pack("{s:I,s:I,s:f,s:o,s:o,s:o,s:o,s:o,s:o}", "reports", (json_int_t)ph.reports,
                     "of_reports", (json_int_t)ph.of_reports, "busy_hours",
                     ph.busy_seconds / 3600.0, "covered_busy_share",
                     opt_real(ph.has_coverage, ph.covered_busy_share), "seconds",
                     ph.has_seconds ? phase_map(ph.seconds, NULL) : json_null(), "share",
                     ph.has_share ? phase_map(ph.share, NULL) : json_null(), "cost",
                     ph.has_split ? phase_map(ph.cost, &ph.not_broken_down) : json_null(),
                     "cost_per_completed_unit", per, "note", phase_note(&ph));
}

/* {class: v[k], …}, with "not_broken_down" when rest is not NULL. */
static json_t *class_map(const double *v, const double *rest)
{
    json_t *o = json_object();
    for (int k = 0; k < USAGE_FAIL_COUNT; k++)
        json_object_set_new(o, usage_failure_names[k], json_real(v[k]));
    if (rest != NULL)
        json_object_set_new(o, "not_broken_down", json_real(*rest));
    return o;
}

/* What the failure coverage note says. */
static json_t *failure_note(const struct plan_cost_failures *f)
{
    if (!f->has_split)
        return json_string("no failed or retried work: nothing to split");
    if (f->reports == 0)
        return json_string("no report classified its failures: the split by class is unknown");
    return json_sprintf("failures classified for %.4g%% of the failed and retried units (%ld of "
                        "%ld reports)%s",
                        f->covered_share * 100, f->reports, f->of_reports,
                        f->covered_share < 1 ? "; the rest of their cost is not broken down" : "");
}

/* The cost of failed and retried work by class (planner/costs.h plan_cost_failures). */
static json_t *failures_json(const struct plan_cost_acc *acc, const struct plan_cost *c)
{
    struct plan_cost_failures f;
    plan_cost_failures(acc, c, &f);
    int split = f.has_split && f.reports > 0;
    return json_pack("{s:I,s:I,s:f,s:f,s:o,s:o,s:o,s:o,s:o,s:o}", "reports", (json_int_t)f.reports,
                     "of_reports", (json_int_t)f.of_reports, "units", f.units, "of_units",
                     f.of_units, "covered_share", opt_real(f.has_split, f.covered_share), "counts",
                     f.reports > 0 ? class_map(f.counts, NULL) : json_null(), "share",
                     f.has_share ? class_map(f.share, NULL) : json_null(), "cost",
                     split ? class_map(f.cost, &f.not_broken_down) : json_null(), "dominant",
                     f.dominant >= 0 ? json_string(usage_failure_names[f.dominant]) : json_null(),
                     "note", failure_note(&f));
}

static json_t *group_json(const struct plan_cost_group *g, const struct plan_cost *c)
{
    json_t *units = json_object(), *per = json_object();
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        if (!c->has_unit[k])
            continue;
        json_object_set_new(units, usage_unit_names[k], json_integer((json_int_t)c->completed[k]));
        json_object_set_new(per, usage_unit_names[k],
                            c->has_cost_per_unit[k]
                                ? json_pack("{s:f,s:f}", "per_unit", c->cost_per_unit[k],
                                            "per_1000", c->cost_per_unit[k] * 1000)
                                : json_null());
    }
    json_t *doc = json_pack(
        "{s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:{s:f,s:o},s:o,s:o,s:f,s:f,s:o,s:o,s:b}", "id",
        g->id ? json_string(g->id) : json_null(), "name",
        g->name ? json_string(g->name) : json_null(), "compute", c->compute, "storage", c->storage,
        "data_movement", c->data_movement, "overhead", c->overhead, "total", c->total,
        "failed_retried", "amount", c->failed_retried_amount, "share",
        opt_real(c->has_share, c->failed_retried_share), "completed_units", units,
        "cost_per_completed_unit", per, "held_hours", c->held_hours, "busy_hours", c->busy_hours,
        "utilization", opt_real(c->has_utilization, c->utilization), "idle_hours",
        opt_real(c->has_idle_hours, c->idle_hours), "no_usage_data", c->no_usage_data);
    if (doc != NULL) {
        json_object_set_new(doc, "phases", phases_json(&g->acc, c));
        json_object_set_new(doc, "failures", failures_json(&g->acc, c));
    }
    return doc;
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
    if (api_list_parse(r, NULL, cost_filters, 4, &q) != 0)
        return MHD_YES;
    /* The hosts of the projects the caller may read (a platform admin: every host), or of
     * the one it asked for. */
    const char *projects = api_scope_read(r);
    char only[40];
    if (q.values[3] != NULL) {
        char id[37];
        if (api_filter_project(r, q.values[3], id) != 0)
            return MHD_YES;
        snprintf(only, sizeof only, "{%s}", id);
        projects = only;
    }
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
    struct cost_arg a = {from, to, projects, {0}};
    enum db_status s = svc_rollups_run_tx(read_fn, &a);
    if (s < 0) {
        db_cost_input_free(&a.in);
        return api_reply_db(r, s);
    }
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    enum MHD_Result ret;
    if (plan_costs_group(a.in.hosts, a.in.nhosts, a.in.rows, a.in.nrows, by, &groups, &ng) != 0) {
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
    db_cost_input_free(&a.in);
    return ret;
}
