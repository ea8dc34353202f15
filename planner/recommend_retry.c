/* recommend_retry.c — see recommend_retry.h. */
#include "planner/recommend_retry.h"

#include <stdio.h>
#include <string.h>

#include "common/usage.h"
#include "planner/recommend.h"

int plan_retry_over(const struct plan_retry_group *g, double *spent_pct)
{
    const struct plan_cost *c = &g->cost;
    *spent_pct = c->total > 0 ? c->failed_retried_amount / c->total * 100 : 0;
    if (!(c->total > 0) || !c->has_share || !(g->f.of_units > 0))
        return 0;
    return *spent_pct > g->budget_pct;
}

/* Whether the hardware failures of g sit mostly on one host. */
static int one_host(const struct plan_retry_group *g)
{
    return g->f.dominant == USAGE_FAIL_HARDWARE && g->hw_host_id != NULL && g->hw_units > 0 &&
           g->hw_host_units > g->hw_units * PLAN_RETRY_HOST_MOST;
}

static json_t *evidence(const struct plan_retry_group *g, double spent_pct, double dom_share,
                        int host)
{
    const struct plan_cost_failures *f = &g->f;
    json_t *costs = json_object();
    for (int k = 0; f->reports > 0 && k < USAGE_FAIL_COUNT; k++)
        json_object_set_new(costs, usage_failure_names[k], json_real(f->cost[k]));
    json_object_set_new(costs, "not_broken_down", json_real(f->not_broken_down));
    json_t *ev = json_pack(
        "{s:f,s:f,s:f,s:f,s:o,s:o,s:f,s:f,s:I,s:I,s:o}", "retry_budget_pct", g->budget_pct,
        "spent_pct", plan_round_to(spent_pct, 2), "total", g->cost.total, "failed_retried_cost",
        g->cost.failed_retried_amount, "dominant_class",
        f->dominant >= 0 ? json_string(usage_failure_names[f->dominant]) : json_null(),
        "dominant_share_of_failure_cost", f->dominant >= 0 ? json_real(dom_share) : json_null(),
        "failed_retried_units", f->of_units, "classified_units", f->classified,
        "classified_reports", (json_int_t)f->reports, "reports", (json_int_t)f->of_reports,
        "cost_by_class", costs);
    if (ev != NULL && host) {
        char url[96], rec[96];
        snprintf(url, sizeof url, "/v1/hosts/%s/health", g->hw_host_id);
        snprintf(rec, sizeof rec, "/v1/hosts/%s/recoveries", g->hw_host_id);
        json_object_set_new(ev, "hardware_host",
                            json_pack("{s:s,s:f,s:f,s:f,s:s,s:s}", "host_id", g->hw_host_id,
                                      "hardware_units", g->hw_host_units, "group_hardware_units",
                                      g->hw_units, "share",
                                      plan_round_to(g->hw_host_units / g->hw_units, 4),
                                      "health_history", url, "recoveries", rec));
    }
    return ev;
}

static int one(const struct plan_retry_group *g, json_t *items)
{
    double spent;
    if (!plan_retry_over(g, &spent))
        return 0;
    const struct plan_cost_failures *f = &g->f;
    double dom_share =
        f->dominant >= 0 ? plan_round_to(f->counts[f->dominant] / f->of_units, 4) : 0;
    int host = one_host(g);
    const char *what = g->is_brief ? "brief" : "pool";
    char reason[512], cls[200];
    if (f->dominant >= 0)
        snprintf(cls, sizeof cls, "the dominant failure class is %s, %.4g%% of the failure cost",
                 usage_failure_names[f->dominant], dom_share * 100);
    else
        snprintf(cls, sizeof cls,
                 "no report classified its failures: report failures (oom, timeout, data, "
                 "hardware, preempted, other) to see which class to fix");
    if (host)
        snprintf(reason, sizeof reason,
                 "failed and retried work cost %.4g%% of this %s's spend over the day ($%.2f of "
                 "$%.2f), over its retry budget of %.4g%%; %s, and host %s carries %.0f%% of the "
                 "hardware failures: check its health history",
                 spent, what, g->cost.failed_retried_amount, g->cost.total, g->budget_pct, cls,
                 g->hw_host_id, g->hw_host_units / g->hw_units * 100);
    else
        snprintf(reason, sizeof reason,
                 "failed and retried work cost %.4g%% of this %s's spend over the day ($%.2f of "
                 "$%.2f), over its retry budget of %.4g%%; %s",
                 spent, what, g->cost.failed_retried_amount, g->cost.total, g->budget_pct, cls);
    json_t *ev = evidence(g, spent, dom_share, host);
    if (ev == NULL)
        return -1;
    const char *pool_id = host ? g->hw_host_pool_id : g->is_brief ? g->pool_id : g->id;
    const char *brief_id = g->is_brief ? g->id : NULL;
    const char *hosts[1] = {host ? g->hw_host_id : NULL};
    size_t nh = host ? 1 : 0;
    char id[37];
    plan_rec_id("investigate", "retry_budget", hosts, nh, pool_id, brief_id, id);
    json_t *rec = json_pack("{s:s,s:s,s:s,s:{s:[],s:o,s:o},s:s,s:o,s:f}", "id", id, "action",
                            "investigate", "rule", "retry_budget", "target", "host_ids", "pool_id",
                            pool_id ? json_string(pool_id) : json_null(), "brief_id",
                            brief_id ? json_string(brief_id) : json_null(), "reason", reason,
                            "evidence", ev, "estimated_savings_per_hour", 0.0);
    if (rec == NULL)
        return -1;
    if (host)
        json_array_append_new(json_object_get(json_object_get(rec, "target"), "host_ids"),
                              json_string(g->hw_host_id));
    return json_array_append_new(items, rec);
}

int plan_rec_retry(const struct plan_retry_group *groups, size_t n, json_t *items)
{
    for (size_t i = 0; i < n; i++)
        if (one(&groups[i], items) != 0)
            return -1;
    return 0;
}
