/* bottleneck_json.c — see bottleneck_json.h. */
#include "planner/bottleneck_json.h"

#include "planner/costs.h"

static json_t *r4(double x)
{
    return json_real(plan_round_to(x, 4));
}

static json_t *opt_r4(int has, double x)
{
    return has ? r4(x) : json_null();
}

static json_t *opt_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *plan_bn_phases_json(const struct plan_bn_sums *s)
{
    json_t *o = json_object();
    for (int k = 0; k < PLAN_PHASE_COUNT; k++)
        json_object_set_new(o, plan_phase_names[k], json_real(plan_round_to(s->phase_s[k], 3)));
    return o;
}

/* One host's signals: null members for what was not measured. */
json_t *plan_bn_signals_json(const struct plan_bn_signals *g)
{
    json_t *gpu = g->has_gpu ? json_pack("{s:I,s:o,s:o,s:o}", "samples", (json_int_t)g->gpu_samples,
                                         "utilization_pct", opt_r4(g->has_util, g->util_pct),
                                         "memory_used_pct", opt_r4(g->has_mem, g->mem_used_pct),
                                         "power_w", opt_r4(g->has_power, g->power_w))
                             : json_null();
    json_t *st = g->has_storage
                     ? json_pack("{s:o,s:o,s:o,s:o}", "gate_run_id", opt_str(g->storage_run_id),
                                 "at", opt_str(g->storage_at), "read_mbps", r4(g->read_mbps),
                                 "min_read_mbps", opt_r4(g->has_min_read, g->min_read_mbps))
                     : json_null();
    json_t *bw =
        g->has_bw ? json_pack("{s:o,s:o,s:o,s:o}", "gate_run_id", opt_str(g->bw_run_id), "at",
                              opt_str(g->bw_at), "allreduce_busbw_gbps", r4(g->busbw_gbps),
                              "min_allreduce_busbw_gbps", opt_r4(g->has_min_bw, g->min_busbw_gbps))
                  : json_null();
    json_t *dg = g->has_diag
                     ? json_pack("{s:o,s:o,s:o,s:o,s:o}", "diagnostics_run_id",
                                 opt_str(g->diag_run_id), "at", opt_str(g->diag_at), "status",
                                 opt_str(g->diag_status), "read_mbps", r4(g->diag_read_mbps),
                                 "min_read_mbps", opt_r4(g->has_diag_min, g->diag_min_read_mbps))
                     : json_null();
    return json_pack("{s:s,s:o,s:o,s:o,s:o}", "host_id", g->host_id ? g->host_id : "", "gpu", gpu,
                     "storage_reference", st, "bandwidth_reference", bw, "storage_test", dg);
}

static json_t *next_test_json(const struct plan_bn_finding *f)
{
    json_t *tests = json_array();
    for (size_t i = 0; i < f->ntests; i++)
        json_array_append_new(tests, json_string(f->tests[i]));
    return json_pack("{s:s,s:o,s:o,s:o,s:s}", "kind", plan_bn_test_kind_names[f->test_kind],
                     "tests", tests, "check", opt_str(f->manual), "host_id",
                     opt_str(f->test_host_id), "why", f->why);
}

json_t *plan_bn_finding_json(const struct plan_bn_finding *f)
{
    const struct plan_bn_sums *t = &f->total;
    json_t *notes = json_array();
    for (size_t i = 0; i < f->nnotes; i++)
        json_array_append_new(notes, json_string(f->notes[i]));
    json_t *trend = json_pack("{s:s,s:o,s:o}", "direction", plan_bn_trend_names[f->trend],
                              "first_half_share", opt_r4(f->trend != 0, f->first_share),
                              "second_half_share", opt_r4(f->trend != 0, f->second_share));
    double units = t->completed + t->failed + t->retried;
    json_t *retries = json_pack("{s:f,s:f,s:f,s:o}", "completed", t->completed, "failed", t->failed,
                                "retried", t->retried, "share", opt_r4(units > 0, f->retry_share));
    json_t *cov =
        json_pack("{s:I,s:I,s:f,s:f,s:o}", "reports", (json_int_t)t->reports, "phase_reports",
                  (json_int_t)t->phase_reports, "busy_seconds", plan_round_to(t->busy_s, 3),
                  "phase_busy_seconds", plan_round_to(t->phase_busy_s, 3), "share",
                  opt_r4(t->reports > 0, f->phase_coverage));
    return json_pack(
        "{s:s,s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o}", "verdict",
        plan_bn_verdict_names[f->verdict], "dominant_phase",
        f->has_dominant ? plan_phase_names[f->dominant] : "unknown", "dominates", f->dominates,
        "share_of_phase_time", opt_r4(f->has_dominant, f->share_of_phase), "share_of_busy_time",
        opt_r4(f->has_share_of_busy, f->share_of_busy), "trend", trend, "phase_seconds",
        plan_bn_phases_json(t), "coverage", cov, "retries", retries, "next_test", next_test_json(f),
        "evidence", f->evidence ? plan_bn_signals_json(f->evidence) : json_null(), "summary",
        f->summary, "notes", notes);
}
