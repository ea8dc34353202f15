/* budget.c — see budget.h. */
#include "service/budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "db/budget.h"
#include "db/costs.h"
#include "planner/budget.h"
#include "planner/costs.h"
#include "service/periodic.h"
#include "service/rollups.h"

static struct svc_periodic loop = SVC_PERIODIC_INIT;

/* What one pass read and found. */
struct pass {
    int64_t now_us;
    struct db_budget_projects projects;
    struct db_cost_input month, burn;
    struct plan_cost_group *mg, *bg; /* grouped by project */
    size_t nmg, nbg;
    int emitted;
    json_t *crossed; /* [{project, threshold_pct, spend, budget}] written by this pass */
};

static void pass_clear(struct pass *p)
{
    db_budget_projects_free(&p->projects);
    db_cost_input_free(&p->month);
    db_cost_input_free(&p->burn);
    free(p->mg);
    free(p->bg);
    p->mg = p->bg = NULL;
    p->nmg = p->nbg = 0;
    p->emitted = 0;
    json_array_clear(p->crossed);
}

/* The total of project id's group (0 when its hosts cost nothing in the window). */
static double total_of(const struct plan_cost_group *g, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (g[i].id != NULL && strcmp(g[i].id, id) == 0) {
            struct plan_cost c;
            plan_cost_finish(&g[i].acc, &c);
            return c.total;
        }
    return 0;
}

/* Writes one project's figures and its thresholds crossed. */
static enum db_status project_pass(struct db_conn *c, struct pass *p,
                                   const struct db_budget_project *pr, const char *month,
                                   int64_t end_us, int64_t burn_us)
{
    struct plan_budget_in in = {
        .spend = total_of(p->mg, p->nmg, pr->id),
        .burn_spend = total_of(p->bg, p->nbg, pr->id),
        .burn_hours = (double)(p->now_us - burn_us) / 3.6e9,
        .hours_left = (double)(end_us - p->now_us) / 3.6e9,
        .has_budget = pr->has_budget,
        .budget = pr->budget,
        .nthresholds = pr->nthresholds,
    };
    memcpy(in.thresholds, pr->thresholds, sizeof in.thresholds);
    struct plan_budget_out out;
    plan_budget(&in, &out);
    struct db_budget_spend s = {pr->id,       month,        out.spend, out.burn_per_hour,
                                out.forecast, out.exhausted};
    enum db_status st = db_budget_spend_put(c, &s);
    for (int i = 0; st >= 0 && i < out.ncrossed; i++) {
        int emitted = 0;
        st = db_budget_alert(c, &s, out.crossed[i], pr->budget, &emitted);
        if (st >= 0 && emitted) {
            p->emitted++;
            json_array_append_new(p->crossed, json_pack("{s:s,s:i,s:f,s:f}", "project", pr->name,
                                                        "threshold_pct", out.crossed[i], "spend",
                                                        out.spend, "budget", pr->budget));
        }
    }
    return st;
}

static enum db_status pass_fn(struct db_conn *c, void *arg)
{
    struct pass *p = arg;
    pass_clear(p);
    int64_t start_us, end_us, burn_us = plan_burn_start(p->now_us);
    char month[11], from[40], burn_from[40], to[40];
    plan_budget_month(p->now_us, &start_us, &end_us, month);
    util_rfc3339(start_us, from, sizeof from);
    util_rfc3339(burn_us, burn_from, sizeof burn_from);
    util_rfc3339(p->now_us, to, sizeof to);
    enum db_status s = db_budget_projects(c, &p->projects);
    /* The cost report's reads over every host (an empty window reads nothing). */
    if (s >= 0 && p->now_us > start_us)
        s = db_cost_read(c, from, to, NULL, &p->month);
    if (s >= 0 && p->now_us > burn_us)
        s = db_cost_read(c, burn_from, to, NULL, &p->burn);
    if (s < 0)
        return s;
    if (plan_costs_group(p->month.hosts, p->month.nhosts, p->month.rows, p->month.nrows,
                         PLAN_BY_PROJECT, &p->mg, &p->nmg) != 0 ||
        plan_costs_group(p->burn.hosts, p->burn.nhosts, p->burn.rows, p->burn.nrows,
                         PLAN_BY_PROJECT, &p->bg, &p->nbg) != 0)
        return DB_HARD_ERROR;
    /* In the projects' id order: replicas lock their rows in the same order. */
    for (size_t i = 0; s >= 0 && i < p->projects.n; i++)
        s = project_pass(c, p, &p->projects.p[i], month, end_us, burn_us);
    return s < 0 ? s : DB_ONE_RESULT;
}

int svc_budget_run_once(void)
{
    struct pass p = {.now_us = util_now_us(), .crossed = json_array()};
    if (p.crossed == NULL)
        return -1;
    enum db_status s = svc_rollups_run_tx(pass_fn, &p); /* the cost reads */
    int emitted = p.emitted;
    if (s < 0) {
        log_msg(LOG_WARN, "budget pass: database error %d; retrying next interval", (int)s);
        emitted = -1;
    } else {
        size_t i;
        json_t *it;
        json_array_foreach(p.crossed, i, it)
        {
            json_t *line = json_pack(
                "{s:s,s:s,s:O,s:O,s:O,s:O}", "msg", "a project crossed a budget threshold",
                "principal", BUDGET_PRINCIPAL, "project", json_object_get(it, "project"),
                "threshold_pct", json_object_get(it, "threshold_pct"), "spend",
                json_object_get(it, "spend"), "budget", json_object_get(it, "budget"));
            log_json_steal(LOG_INFO, line);
        }
    }
    pass_clear(&p);
    json_decref(p.crossed);
    return emitted;
}

static void budget_pass(void *arg)
{
    (void)arg;
    svc_budget_run_once();
}

int svc_budget_start(int interval_s)
{
    if (interval_s <= 0 || interval_s > 2000000)
        return -1;
    return svc_periodic_start(&loop, interval_s * 1000, budget_pass, NULL);
}

void svc_budget_stop(void)
{
    svc_periodic_stop(&loop);
}
