/* recommend_loads.c — see recommend_loads.h. */
#include "planner/recommend_loads.h"

#include <stdio.h>

#include "planner/costs.h"
#include "planner/recommend.h"

double plan_rec_load_seconds(const struct plan_rec_load *l)
{
    return l->work.half[0].phase_s[PLAN_PHASE_LOAD] + l->work.half[1].phase_s[PLAN_PHASE_LOAD];
}

static json_t *opt_cents(int has, double v)
{
    return has ? json_real(plan_round_cents(v)) : json_null();
}

static int one(const struct plan_rec_load *l, json_t *items)
{
    if (!plan_bn_repeated_loads(&l->work))
        return 0;
    double bytes = l->work.load_bytes, load_s = plan_rec_load_seconds(l);
    int has_move = l->egress_per_gb > 0;
    double move = bytes / PLAN_BYTES_PER_GB * l->egress_per_gb;
    int has_phase = l->has_host_cost && l->host_phase_s > 0 && l->host_busy_s > 0;
    double covered = has_phase ? l->host_phase_busy_s / l->host_busy_s : 0;
    covered = covered > 1 ? 1 : covered;
    double phase = has_phase ? l->host_cost * load_s / l->host_phase_s * covered : 0;
    double cost =
        (has_move ? plan_round_cents(move) : 0) + (has_phase ? plan_round_cents(phase) : 0);
    char reason[400], money[120] = "";
    if (has_move || has_phase)
        snprintf(money, sizeof money, ", costing $%.2f", cost);
    snprintf(reason, sizeof reason,
             "host loads its artifacts again and again instead of from a cache: load time in "
             "%ld buckets with %.4g GB moved in them (%.4g GB per bucket)%s; mount them from "
             "an intentional cache on the host's local disk",
             l->work.load_buckets, bytes / PLAN_BYTES_PER_GB,
             bytes / PLAN_BYTES_PER_GB / (double)l->work.load_buckets, money);
    json_t *ev = json_pack(
        "{s:I,s:f,s:f,s:f,s:o,s:o,s:o,s:o}", "load_buckets", (json_int_t)l->work.load_buckets,
        "bytes_moved", bytes, "bytes_per_bucket", bytes / (double)l->work.load_buckets,
        "load_seconds", load_s, "egress_price_per_gb",
        has_move ? json_real(l->egress_per_gb) : json_null(), "data_movement_cost",
        opt_cents(has_move, move), "load_phase_cost", opt_cents(has_phase, phase), "cost",
        has_move || has_phase ? json_real(plan_round_cents(cost)) : json_null());
    if (ev == NULL)
        return -1;
    char id[37];
    const char *hosts[1] = {l->host_id};
    plan_rec_id("investigate", "repeated_loads", hosts, 1, l->pool_id, l->brief_id, id);
    json_t *rec =
        json_pack("{s:s,s:s,s:s,s:{s:[s],s:s,s:o},s:s,s:o,s:f}", "id", id, "action", "investigate",
                  "rule", "repeated_loads", "target", "host_ids", l->host_id, "pool_id", l->pool_id,
                  "brief_id", l->brief_id ? json_string(l->brief_id) : json_null(), "reason",
                  reason, "evidence", ev, "estimated_savings_per_hour", 0.0);
    if (rec == NULL)
        return -1;
    return json_array_append_new(items, rec);
}

int plan_rec_loads(const struct plan_rec_load *loads, size_t n, json_t *items)
{
    for (size_t i = 0; i < n; i++)
        if (one(&loads[i], items) != 0)
            return -1;
    return 0;
}
