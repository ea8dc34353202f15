/* bottlenecks.c — GET /v1/bottlenecks: the target and window from the query, the analysis
 * (service/bottleneck.c), the finding as a document. The target is read within the
 * caller's projects: another project's pool, brief or host answers 404. */
#include "api/bottlenecks.h"

#include <stdio.h>
#include <string.h>

#include "api/list.h"
#include "api/scope.h"
#include "common/util.h"
#include "planner/bottleneck_json.h"
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
                sig = plan_bn_signals_json(&b->sig[j]);
        json_array_append_new(a, json_pack("{s:s,s:s,s:I,s:I,s:f,s:o,s:o}", "host_id", h->id,
                                           "pool_id", h->pool_id, "reports", (json_int_t)s.reports,
                                           "phase_reports", (json_int_t)s.phase_reports,
                                           "busy_seconds", plan_round_to(s.busy_s, 3),
                                           "phase_seconds", plan_bn_phases_json(&s), "signals",
                                           sig ? sig : json_null()));
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
        json_array_append_new(a, json_pack("{s:s,s:I,s:f,s:f}", "host_id", h->id, "load_buckets",
                                           (json_int_t)h->load_buckets, "load_bytes", h->load_bytes,
                                           "load_seconds",
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
        json_t *body = json_pack("{s:{s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:I}", "target",
                                 "kind", kind_names[b.kind], "id", b.id, "name", b.in.name,
                                 "project_id", b.in.project_id, "from", b.from, "to", b.to,
                                 "middle", b.mid, "grain", db_bn_grain_names[b.grain], "finding",
                                 plan_bn_finding_json(&b.f), "hosts", hosts_json(&b),
                                 "repeated_loads", rep, "repeated_loads_hosts", (json_int_t)nrep);
        ret = api_reply_json(r, MHD_HTTP_OK, body, NULL);
    }
    svc_bottleneck_free(&b);
    return ret;
}
