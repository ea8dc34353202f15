/* bottlenecks.c — GET /v1/bottlenecks: the target and window from the query, the analysis
 * (service/bottleneck.c), the finding as a document. The target is read within the
 * caller's projects: another project's pool, brief or host answers 404. */
#include "api/bottlenecks.h"

#include <stdio.h>
#include <string.h>

#include "api/list.h"
#include "api/scope.h"
#include "common/util.h"
#include "planner/costs.h"
#include "service/bottleneck.h"

static const struct list_filter bn_filters[] = {
    {"pool", api_valid_uuid, "a pool id (UUID)"},
    {"brief", api_valid_uuid, "a brief id (UUID)"},
    {"host", api_valid_uuid, "a host id (UUID)"},
    {"from", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"to", api_valid_rfc3339, "an RFC 3339 date-time"},
};
static const char *const kind_names[] = {"pool", "brief", "host"};

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

static json_t *phases_json(const struct plan_bn_sums *s)
{
    json_t *o = json_object();
    for (int k = 0; k < PLAN_PHASE_COUNT; k++)
        json_object_set_new(o, plan_phase_names[k], json_real(plan_round_to(s->phase_s[k], 3)));
    return o;
}

/* One host's signals: null members for what was not measured. */
static json_t *signals_json(const struct plan_bn_signals *g)
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
    json_t *bw = g->has_bw ? json_pack("{s:o,s:o,s:o,s:o}", "gate_run_id", opt_str(g->bw_run_id),
                                       "at", opt_str(g->bw_at), "allreduce_busbw_gbps",
                                       r4(g->busbw_gbps), "min_allreduce_busbw_gbps",
                                       opt_r4(g->has_min_bw, g->min_busbw_gbps))
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

static json_t *finding_json(const struct plan_bn_finding *f)
{
    const struct plan_bn_sums *t = &f->total;
    json_t *notes = json_array();
    for (size_t i = 0; i < f->nnotes; i++)
        json_array_append_new(notes, json_string(f->notes[i]));
    json_t *trend = json_pack("{s:s,s:o,s:o}", "direction", plan_bn_trend_names[f->trend],
                              "first_half_share", opt_r4(f->trend != 0, f->first_share),
                              "second_half_share", opt_r4(f->trend != 0, f->second_share));
    double units = t->completed + t->failed + t->retried;
    json_t *retries = json_pack("{s:f,s:f,s:f,s:o}", "completed", t->completed, "failed",
                                t->failed, "retried", t->retried, "share",
                                opt_r4(units > 0, f->retry_share));
    json_t *cov = json_pack("{s:I,s:I,s:f,s:f,s:o}", "reports", (json_int_t)t->reports,
                            "phase_reports", (json_int_t)t->phase_reports, "busy_seconds",
                            plan_round_to(t->busy_s, 3), "phase_busy_seconds",
                            plan_round_to(t->phase_busy_s, 3), "share",
                            opt_r4(t->reports > 0, f->phase_coverage));
    return json_pack("{s:s,s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o}", "verdict",
                     plan_bn_verdict_names[f->verdict], "dominant_phase",
                     f->has_dominant ? plan_phase_names[f->dominant] : "unknown", "dominates",
                     f->dominates, "share_of_phase_time",
                     opt_r4(f->has_dominant, f->share_of_phase), "share_of_busy_time",
                     opt_r4(f->has_share_of_busy, f->share_of_busy), "trend", trend,
                     "phase_seconds", phases_json(t), "coverage", cov, "retries", retries,
                     "next_test", next_test_json(f), "evidence",
                     f->evidence ? signals_json(f->evidence) : json_null(), "summary",
                     f->summary, "notes", notes);
}

static json_t *hosts_json(const struct svc_bottleneck *b)
{
    json_t *a = json_array();
    for (size_t i = 0; i < b->f.nnamed; i++) {
        const struct plan_bn_host *h = &b->hosts[b->f.named[i]];
        struct plan_bn_sums s = h->half[0];
        s.reports += h->half[1].reports;
        s.phase_reports += h->half[1].phase_reports;
        s.busy_s += h->half[1].busy_s;
        for (int k = 0; k < PLAN_PHASE_COUNT; k++)
            s.phase_s[k] += h->half[1].phase_s[k];
        json_t *sig = NULL;
        for (size_t j = 0; j < b->nsig && sig == NULL; j++)
            if (strcmp(b->sig[j].host_id, h->id) == 0)
                sig = signals_json(&b->sig[j]);
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:I,s:I,s:f,s:o,s:o}", "host_id", h->id, "pool_id", h->pool_id,
                         "reports", (json_int_t)s.reports, "phase_reports",
                         (json_int_t)s.phase_reports, "busy_seconds", plan_round_to(s.busy_s, 3),
                         "phase_seconds", phases_json(&s), "signals", sig ? sig : json_null()));
    }
    return a;
}

static json_t *repeated_json(const struct svc_bottleneck *b, long *count)
{
    json_t *a = json_array();
    *count = 0;
    for (size_t i = 0; i < b->nhosts; i++) {
        const struct plan_bn_host *h = &b->hosts[i];
        if (!plan_bn_repeated_loads(h))
            continue;
        if ((*count)++ >= BN_REPEATED_MAX)
            continue;
        json_array_append_new(
            a, json_pack("{s:s,s:I,s:f,s:f}", "host_id", h->id, "load_buckets",
                         (json_int_t)h->load_buckets, "load_bytes", h->load_bytes, "load_seconds",
                         plan_round_to(h->half[0].phase_s[PLAN_PHASE_LOAD] +
                                           h->half[1].phase_s[PLAN_PHASE_LOAD],
                                       3)));
    }
    return a;
}

/* The target: exactly one of pool, brief, host. -1 after replying. */
static int pick_target(struct api_req *r, const struct list_query *q, struct svc_bottleneck *b)
{
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (q->values[i] != NULL) {
            n++;
            b->kind = (enum db_bn_target)i;
            b->id = q->values[i];
        }
    if (n == 1)
        return 0;
    api_reply_problem(r, API_ERR_INVALID_PARAMETER, n ? "brief" : "pool",
                      n ? "give exactly one of pool, brief and host"
                        : "one of pool, brief and host is required");
    return -1;
}

/* The window from..to. -1 after replying. */
static int pick_window(struct api_req *r, const struct list_query *q, struct svc_bottleneck *b)
{
    b->to_us = util_now_us();
    if (q->values[4] != NULL)
        util_parse_rfc3339(q->values[4], &b->to_us);
    b->from_us = b->to_us - (int64_t)BN_DEFAULT_WINDOW_S * 1000000;
    if (q->values[3] != NULL)
        util_parse_rfc3339(q->values[3], &b->from_us);
    if (b->to_us <= b->from_us) {
        api_reply_problem(r, API_ERR_INVALID_PARAMETER, "to", "to must be after from");
        return -1;
    }
    if (b->to_us - b->from_us > BN_MAX_WINDOW_S * 1000000) {
        api_reply_problem(r, API_ERR_INVALID_PARAMETER, "from",
                          "the window from..to must be at most 366 days");
        return -1;
    }
    return 0;
}

enum MHD_Result api_bottlenecks(struct api_req *r)
{
    struct list_query q;
    if (api_list_parse(r, NULL, bn_filters, 5, &q) != 0)
        return MHD_YES;
    struct svc_bottleneck b;
    memset(&b, 0, sizeof b);
    if (pick_target(r, &q, &b) != 0 || pick_window(r, &q, &b) != 0)
        return MHD_YES;
    b.projects = api_scope_read(r);
    enum db_status s = svc_bottleneck_run(&b);
    enum MHD_Result ret;
    if (s == DB_NO_RESULTS) {
        char msg[64];
        snprintf(msg, sizeof msg, "no such %s", kind_names[b.kind]);
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, kind_names[b.kind], "%s", msg);
    } else if (s < 0) {
        ret = api_reply_db(r, s);
    } else {
        long nrep;
        json_t *rep = repeated_json(&b, &nrep);
        json_t *body = json_pack(
            "{s:{s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:I}", "target", "kind",
            kind_names[b.kind], "id", b.id, "name", b.in.name, "project_id", b.in.project_id,
            "from", b.from, "to", b.to, "middle", b.mid, "grain", db_bn_grain_names[b.grain],
            "finding", finding_json(&b.f), "hosts", hosts_json(&b), "repeated_loads", rep,
            "repeated_loads_hosts", (json_int_t)nrep);
        ret = api_reply_json(r, MHD_HTTP_OK, body, NULL);
    }
    svc_bottleneck_free(&b);
    return ret;
}
