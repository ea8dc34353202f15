/* recommend_bn.c — see recommend_bn.h. */
#include "planner/recommend_bn.h"

#include <stdio.h>
#include <string.h>

#include "planner/bottleneck_json.h"
#include "planner/costs.h"
#include "planner/recommend.h"

/* Appends one recommendation with one target host (or none); takes evidence. */
static int add1(json_t *items, const char *action, const char *rule, const char *host,
                const char *pool_id, const char *brief_id, const char *reason, json_t *evidence,
                double savings)
{
    char id[37];
    const char *hosts[1] = {host};
    size_t n = host ? 1 : 0;
    plan_rec_id(action, rule, hosts, n, pool_id, brief_id, id);
    json_t *rec = json_pack("{s:s,s:s,s:s,s:{s:[],s:o,s:o},s:s,s:o,s:f}", "id", id, "action",
                            action, "rule", rule, "target", "host_ids", "pool_id",
                            pool_id ? json_string(pool_id) : json_null(), "brief_id",
                            brief_id ? json_string(brief_id) : json_null(), "reason", reason,
                            "evidence", evidence, "estimated_savings_per_hour", savings);
    if (rec == NULL)
        return -1;
    if (host)
        json_array_append_new(json_object_get(json_object_get(rec, "target"), "host_ids"),
                              json_string(host));
    return json_array_append_new(items, rec);
}

static int actionable(enum plan_bn_verdict v)
{
    return v == PLAN_BN_STORAGE || v == PLAN_BN_WRITE || v == PLAN_BN_BANDWIDTH ||
           v == PLAN_BN_INPUT_PIPELINE || v == PLAN_BN_COMPUTE_UNDERUTILIZED;
}

double plan_rec_tput_per_gpu(const struct plan_rec_tput *t)
{
    if (t->gpu_count < 1 || !(t->busy_s > 0))
        return 0;
    return t->completed / (t->busy_s * (double)t->gpu_count);
}

/* Whether communication is t's largest phase with over 40% of its phase time; *share. */
static int comm_dominates(const struct plan_rec_tput *t, double *share)
{
    double sum = 0, top = 0;
    int best = -1;
    for (int k = 0; k < PLAN_PHASE_COUNT; k++) {
        sum += t->phase_s[k];
        if (t->phase_s[k] > top) {
            top = t->phase_s[k];
            best = k;
        }
    }
    *share = sum > 0 ? t->phase_s[PLAN_PHASE_COMMUNICATION] / sum : 0;
    return best == PLAN_PHASE_COMMUNICATION && *share > PLAN_BN_DOMINANT;
}

static int no_speedup(const struct plan_rec_tput *t, size_t nt, size_t i, json_t *items)
{
    const struct plan_rec_tput *m = &t[i];
    double share, mine = plan_rec_tput_per_gpu(m);
    if (m->gpu_count <= 1 || m->least_host_id == NULL || !comm_dominates(m, &share) || mine <= 0)
        return 0;
    const struct plan_rec_tput *best = NULL;
    for (size_t j = 0; j < nt; j++) {
        const struct plan_rec_tput *s = &t[j];
        if (s->gpu_count != 1 || strcmp(s->brief_id, m->brief_id) != 0 ||
            strcmp(s->unit, m->unit) != 0)
            continue;
        if (best == NULL || plan_rec_tput_per_gpu(s) > plan_rec_tput_per_gpu(best))
            best = s;
    }
    double theirs = best ? plan_rec_tput_per_gpu(best) : 0;
    if (best == NULL || !(theirs > mine))
        return 0;
    char reason[400];
    snprintf(reason, sizeof reason,
             "communication is %.0f%% of the phase time on this %ld-GPU pool and it completes "
             "%.4g %s per GPU-second against %.4g on a single-GPU pool for the same brief: the "
             "multi-GPU topology does not speed this work up; serve it from single-GPU hosts",
             share * 100, m->gpu_count, plan_round_to(mine, 4), m->unit, plan_round_to(theirs, 4));
    json_t *ev =
        json_pack("{s:s,s:I,s:f,s:f,s:f,s:s,s:f,s:f}", "unit", m->unit, "gpu_count",
                  (json_int_t)m->gpu_count, "per_gpu_throughput", plan_round_to(mine, 6),
                  "communication_share", plan_round_to(share, 4), "completed", m->completed,
                  "single_gpu_pool_id", best->pool_id, "single_gpu_per_gpu_throughput",
                  plan_round_to(theirs, 6), "price_per_hour", m->price_per_hour);
    if (ev == NULL)
        return -1;
    return add1(items, "scale_down", "multi_gpu_no_speedup", m->least_host_id, m->pool_id,
                m->brief_id, reason, ev, m->price_per_hour);
}

int plan_rec_bottlenecks(const struct plan_rec_bn_pool *pools, size_t np,
                         const struct plan_rec_tput *t, size_t nt, json_t *items)
{
    for (size_t i = 0; i < np; i++) {
        const struct plan_bn_finding *f = pools[i].f;
        if (!actionable(f->verdict))
            continue;
        json_t *ev = plan_bn_finding_json(f);
        if (ev == NULL)
            return -1;
        if (add1(items, "investigate", "bottleneck", f->test_host_id, pools[i].pool_id, NULL,
                 f->why, ev, 0) != 0)
            return -1;
    }
    for (size_t i = 0; i < nt; i++)
        if (no_speedup(t, nt, i, items) != 0)
            return -1;
    return 0;
}
