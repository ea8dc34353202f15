/* test_recommend_idle.c — the idle rule's two signals (issue 13, item 5: idle needs
 * positive evidence) and the investigate recommendation of a host isolated by the health
 * monitor (planner/recommend.h), plus the decoding of their inputs (db/recommend.h) from
 * results built in memory. Every figure is computed by hand in the comments. */
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/recommend.h"
#include "planner/recommend.h"
#include "tests/unit/unit.h"

#define HA "00000000-0000-4000-8000-00000000000a"
#define P1 "00000000-0000-4000-8000-0000000000p1"
#define B1 "00000000-0000-4000-8000-0000000000b1"

static const struct gpu_model H100 = {"h100_sxm", "H100", 80, 81559, 0x3f};

/* Idle by both signals over the default window W = 1800 s: no useful report for 3600 s,
 * the latest report 60 s old; 30 samples 60 s apart (coverage 30 × 60 ÷ 1800 = 100%),
 * at most 2% utilization, mean 0.5%. */
static struct plan_rec_host idle_host(void)
{
    struct plan_rec_host h;
    memset(&h, 0, sizeof h);
    h.id = HA;
    h.pool_id = P1;
    h.state = "ready";
    h.price_per_hour = 4;
    plan_rec_default_thresholds(&h.th);
    h.has_usage = 1;
    h.idle_s = 3600;
    h.reports = 12;
    h.report_age_s = 60;
    h.last_report_end = 1741607940; /* 2025-03-10T11:59:00Z */
    h.gpu_util.samples = 30;
    h.gpu_util.has_util = 1;
    h.gpu_util.max_pct = 2;
    h.gpu_util.mean_pct = 0.5;
    h.gpu_util.interval_s = 60;
    h.gpu = &H100;
    h.gpu_count = 1;
    return h;
}

static json_t *items, *nousage;
static int run(const struct plan_rec_host *h, size_t nh, const struct plan_rec_brief *b, size_t nb)
{
    json_decref(items);
    json_decref(nousage);
    items = json_array();
    nousage = json_array();
    struct plan_options o;
    plan_default_options(&o);
    return plan_recommend(h, nh, b, nb, &o, items, nousage);
}
static size_t count(const char *action)
{
    size_t n = 0, i;
    json_t *it;
    json_array_foreach(items, i, it) if (strcmp(json_string_value(json_object_get(it, "action")),
                                                action) == 0) n++;
    return n;
}
static json_t *first(const char *action)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) if (strcmp(json_string_value(json_object_get(it, "action")),
                                                action) == 0) return it;
    return NULL;
}
static json_t *path(json_t *it, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(it, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return v;
}
static double num(json_t *it, const char *a, const char *b, const char *c)
{
    return json_number_value(path(it, a, b, c));
}
/* The reason of the only no_usage entry, or NULL when there is not exactly one. */
static const char *unknown_reason(void)
{
    if (json_array_size(nousage) != 1)
        return NULL;
    return json_string_value(json_object_get(json_array_get(nousage, 0), "reason"));
}

static void stop_with_both_signals(void)
{
    struct plan_rec_host h = idle_host();
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 && json_array_size(nousage) == 0);
    json_t *s = first("stop");
    CHECK(num(s, "evidence", "idle_seconds", NULL) == 3600);
    CHECK(num(s, "evidence", "idle_stop_after_seconds", NULL) == 1800);
    CHECK(num(s, "evidence", "work_reports", "reports") == 12);
    CHECK_STR(json_string_value(path(s, "evidence", "work_reports", "last_report_end")),
              "2025-03-10T11:59:00.000000Z");
    CHECK(num(s, "evidence", "work_reports", "last_report_age_seconds") == 60);
    CHECK(json_is_null(path(s, "evidence", "work_reports", "last_useful_end")));
    CHECK(num(s, "evidence", "gpu_utilization", "samples") == 30);
    CHECK(num(s, "evidence", "gpu_utilization", "unread_samples") == 0);
    CHECK(num(s, "evidence", "gpu_utilization", "interval_seconds") == 60);
    CHECK(num(s, "evidence", "gpu_utilization", "window_seconds") == 1800);
    CHECK(num(s, "evidence", "gpu_utilization", "coverage_pct") == 100);
    CHECK(num(s, "evidence", "gpu_utilization", "required_coverage_pct") == 90);
    CHECK(num(s, "evidence", "gpu_utilization", "max_pct") == 2);
    CHECK(num(s, "evidence", "gpu_utilization", "mean_pct") == 0.5);
    CHECK(num(s, "evidence", "gpu_utilization", "threshold_pct") == 5);
    CHECK_STR(json_string_value(json_object_get(s, "reason")),
              "no useful work for 3600 s, more than the pool's idle window of 1800 s; GPU "
              "utilization at most 2% (under 5%) over 100% of the window; no running job");
    /* A useful report, an hour ago: its end is shown. */
    h.has_useful = 1;
    h.last_useful_end = 1741604400; /* 2025-03-10T11:00:00Z */
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    CHECK_STR(json_string_value(path(first("stop"), "evidence", "work_reports", "last_useful_end")),
              "2025-03-10T11:00:00.000000Z");
}

static void utilization_threshold(void)
{
    struct plan_rec_host h = idle_host();
    /* Under 5% strictly: 4.9 stops, 5 is work (busy: not listed as unknown either). */
    h.gpu_util.max_pct = 4.9;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    h.gpu_util.max_pct = 5;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
    /* The pool's own threshold: 10% lets 5% through, and is shown. */
    h.th.idle_gpu_util_pct = 10;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 &&
          num(first("stop"), "evidence", "gpu_utilization", "threshold_pct") == 10);
    /* 0%: nothing is under it; no GPU is ever idle. */
    h.th.idle_gpu_util_pct = 0;
    h.gpu_util.max_pct = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
    /* Work on the GPUs wins over thin coverage: 3 samples, one at 80%, is busy. */
    h = idle_host();
    h.gpu_util.samples = 3;
    h.gpu_util.max_pct = 80;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
}

static void coverage_rule(void)
{
    struct plan_rec_host h = idle_host();
    /* 27 × 60 ÷ 1800 = 90%: enough. 26: 86.67%, unknown. */
    h.gpu_util.samples = 27;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 &&
          num(first("stop"), "evidence", "gpu_utilization", "coverage_pct") == 90);
    h.gpu_util.samples = 26;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "low_sample_coverage");
    json_t *n = json_array_get(nousage, 0);
    CHECK_STR(json_string_value(json_object_get(n, "host_id")), HA);
    CHECK_STR(json_string_value(json_object_get(n, "state")), "ready");
    CHECK(num(n, "evidence", "gpu_utilization", "coverage_pct") == 86.67);
    CHECK(num(n, "evidence", "idle_stop_after_seconds", NULL) == 1800);
    CHECK(num(n, "evidence", "work_reports", "idle_seconds") == 3600);
    /* Samples with a GPU whose utilization was not read do not count: 20 read and 10
     * unread are 20 × 60 ÷ 1800 = 66.67%. */
    h.gpu_util.samples = 20;
    h.gpu_util.unread = 10;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "low_sample_coverage");
    CHECK(num(json_array_get(nousage, 0), "evidence", "gpu_utilization", "unread_samples") == 10);
    /* The pool's interval: 10 s samples, 162 of them over 1800 s = 90%. */
    h = idle_host();
    h.gpu_util.interval_s = 10;
    h.gpu_util.samples = 162;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    h.gpu_util.samples = 161;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 0);
    CHECK_STR(unknown_reason(), "low_sample_coverage");
    /* No interval given (0): the monitor's default 60 s. */
    h.gpu_util.interval_s = 0;
    h.gpu_util.samples = 27;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 &&
          num(first("stop"), "evidence", "gpu_utilization", "interval_seconds") == 60);
    /* A longer window needs more samples: 7200 s at 60 s wants 108. */
    h.th.idle_stop_after_s = 7200;
    h.idle_s = 7201;
    h.gpu_util.samples = 107;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 0);
    h.gpu_util.samples = 108;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    /* The sample in flight (issue 25): six intervals of 10 s, five samples stored and the
     * sixth due (the newest is 10..20 s old) cover the window; the same five with the
     * newest 3 s old (nothing in flight: one was missed) or 25 s old (the one due was
     * missed) do not (83.33%). */
    h = idle_host();
    h.th.idle_stop_after_s = 60;
    h.idle_s = 61;
    h.gpu_util.interval_s = 10;
    h.gpu_util.samples = 5;
    h.gpu_util.has_last = 1;
    h.gpu_util.last_age_s = 14.5;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1 &&
          num(first("stop"), "evidence", "gpu_utilization", "coverage_pct") == 100);
    h.gpu_util.last_age_s = 3;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 0);
    CHECK_STR(unknown_reason(), "low_sample_coverage");
    CHECK(num(json_array_get(nousage, 0), "evidence", "gpu_utilization", "coverage_pct") == 83.33);
    h.gpu_util.last_age_s = 25;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 0);
    h.gpu_util.samples = 6; /* all six stored */
    h.gpu_util.last_age_s = 3;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
}

static void unknown_never_stops(void)
{
    struct plan_rec_host h = idle_host();
    /* No sample at all (monitor off, never sampled). */
    h.gpu_util.samples = 0;
    h.gpu_util.has_util = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "no_gpu_samples");
    json_t *g = path(json_array_get(nousage, 0), "evidence", "gpu_utilization", NULL);
    CHECK(json_is_null(json_object_get(g, "max_pct")) &&
          json_is_null(json_object_get(g, "mean_pct")));
    CHECK(json_number_value(json_object_get(g, "coverage_pct")) == 0);
    /* Reports that stopped arriving: the latest ended more than W ago. Exactly W is
     * still fresh. */
    h = idle_host();
    h.report_age_s = 1800;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("stop") == 1);
    h.report_age_s = 1800.5;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "reports_stale");
    /* Both unknown: the reports are named first. */
    h.gpu_util.samples = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "reports_stale");
    /* Work reported within the window: busy, whatever the GPUs say. */
    h = idle_host();
    h.idle_s = 1800;
    h.gpu_util.samples = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
    /* Not judged: a running job, stopping, unreachable (never idle, never listed). */
    h = idle_host();
    h.gpu_util.samples = 0;
    h.active_job = 1;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
    h.active_job = 0;
    h.state = "unreachable";
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0 && json_array_size(nousage) == 0);
    h.gpu_util.samples = 30; /* even with old samples */
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    h.state = "stopping";
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    /* No report in the lookback: no_usage_data, as before, whatever the GPUs say. */
    h = idle_host();
    h.has_usage = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 && json_array_size(items) == 0);
    CHECK_STR(unknown_reason(), "no_usage_data");
}

static void reuse_needs_both_signals(void)
{
    struct plan_options o;
    plan_default_options(&o);
    struct plan_rec_brief b;
    memset(&b, 0, sizeof b);
    b.id = B1;
    struct plan_brief small = {.kind = PLAN_INFERENCE_INTERACTIVE,
                               .parameter_count = 7e9,
                               .precision = GPU_BF16,
                               .concurrency = 1};
    plan_size(&small, &o, &b.sizing);
    b.sized = 1;
    b.precision = GPU_BF16;
    struct plan_rec_host h = idle_host();
    h.accepted = 1;
    CHECK(run(&h, 1, &b, 1) == 0 && count("reuse") == 1 && count("stop") == 1);
    h.gpu_util.samples = 10; /* 33%: unknown, neither stopped nor reused */
    CHECK(run(&h, 1, &b, 1) == 0 && count("reuse") == 0 && count("stop") == 0);
    h.gpu_util.samples = 30;
    h.gpu_util.max_pct = 50; /* working */
    CHECK(run(&h, 1, &b, 1) == 0 && count("reuse") == 0 && count("stop") == 0);
}

/* An event of the isolated host (strings borrowed). */
static struct gpu_event event(long code, const char *raw)
{
    struct gpu_event e;
    memset(&e, 0, sizeof e);
    e.kind = "xid";
    e.has_code = 1;
    e.code = code;
    e.category = "hardware";
    e.gpu_uuid = "GPU-8d2e1b7a-0c2f-4d0e-9a41-1c6f3f0e2a11";
    e.pci_bus_id = "00000000:18:00.0";
    e.first_seen = "2025-03-10T11:00:00.000000Z";
    e.last_seen = "2025-03-10T11:05:00.000000Z";
    e.count = 3;
    e.raw = raw;
    e.message = "GPU has fallen off the bus";
    return e;
}

static void isolation_investigate(void)
{
    struct gpu_event evs[20];
    evs[0] = event(79, "NVRM: Xid (PCI:0000:18:00): 79, pid=1910, name=python3, GPU has "
                       "fallen off the bus.\xff\xfe");
    struct gpu_isolation iso = {"Xid 79 on GPU 0 (00000000:18:00.0): GPU has fallen off the bus",
                                "2025-03-10T11:00:01.000000Z", 1, evs, 1};
    struct plan_rec_host h = idle_host();
    h.state = "quarantined";
    h.has_usage = 0; /* no reports: still investigated */
    h.isolation = &iso;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1 && count("stop") == 0);
    json_t *r = first("investigate");
    CHECK_STR(json_string_value(json_object_get(r, "rule")), "monitor_isolated");
    char id[37];
    const char *ids[] = {HA};
    plan_rec_id("investigate", "monitor_isolated", ids, 1, P1, NULL, id);
    CHECK_STR(json_string_value(json_object_get(r, "id")), id);
    CHECK(json_is_null(path(r, "target", "brief_id", NULL)));
    CHECK_STR(json_string_value(path(r, "target", "pool_id", NULL)), P1);
    CHECK(json_number_value(json_object_get(r, "estimated_savings_per_hour")) == 0);
    CHECK_STR(json_string_value(path(r, "evidence", "quarantine_reason", NULL)), iso.reason);
    CHECK_STR(json_string_value(path(r, "evidence", "quarantined_at", NULL)),
              "2025-03-10T11:00:01.000000Z");
    CHECK(num(r, "evidence", "open_isolating_events", NULL) == 1);
    json_t *e = json_array_get(path(r, "evidence", "events", NULL), 0);
    CHECK_STR(json_string_value(json_object_get(e, "kind")), "xid");
    CHECK(json_integer_value(json_object_get(e, "code")) == 79);
    CHECK_STR(json_string_value(json_object_get(e, "category")), "hardware");
    CHECK_STR(json_string_value(json_object_get(e, "gpu_uuid")), evs[0].gpu_uuid);
    CHECK_STR(json_string_value(json_object_get(e, "pci_bus_id")), "00000000:18:00.0");
    CHECK_STR(json_string_value(json_object_get(e, "first_seen")), evs[0].first_seen);
    CHECK_STR(json_string_value(json_object_get(e, "last_seen")), evs[0].last_seen);
    CHECK(json_integer_value(json_object_get(e, "count")) == 3);
    /* Host bytes that are not UTF-8 are replaced, never dropped or passed on. */
    const char *raw = json_string_value(json_object_get(e, "raw"));
    CHECK(raw != NULL && strstr(raw, "fallen off the bus.\xef\xbf\xbd\xef\xbf\xbd") != NULL);
    CHECK(strstr(json_string_value(json_object_get(r, "reason")), "Xid 79 on GPU 0") != NULL);

    /* Long raw text is cut (512 bytes); at most 16 events are listed, the total shown;
     * an event without a code has code null. */
    static char longraw[3000];
    memset(longraw, 'x', sizeof longraw - 1);
    for (int i = 0; i < 20; i++)
        evs[i] = event(79 + i, longraw);
    evs[19].has_code = 0;
    evs[19].kind = "gpu_missing";
    iso.events = evs;
    iso.nevents = 20;
    iso.open_events = 25;
    iso.reason = NULL;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 1);
    r = first("investigate");
    CHECK(json_array_size(path(r, "evidence", "events", NULL)) == PLAN_REC_EVENTS_MAX);
    CHECK(num(r, "evidence", "open_isolating_events", NULL) == 25);
    CHECK(strlen(json_string_value(json_object_get(
              json_array_get(path(r, "evidence", "events", NULL), 0), "raw"))) == 512);
    CHECK(json_is_null(path(r, "evidence", "quarantine_reason", NULL)));
    iso.nevents = 1;
    evs[0].has_code = 0;
    CHECK(run(&h, 1, NULL, 0) == 0 &&
          json_is_null(json_object_get(
              json_array_get(path(first("investigate"), "evidence", "events", NULL), 0), "code")));
    /* Released (no longer quarantined), or no isolation known: none. */
    h.state = "provisioned";
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    h.state = "quarantined";
    h.isolation = NULL;
    CHECK(run(&h, 1, NULL, 0) == 0 && count("investigate") == 0);
    json_decref(items);
    json_decref(nousage);
    items = nousage = NULL;
}

/* ---- db_rec_decode_health: by column name, from results built in memory ---- */

static PGresult *fake(int ncols, const char *const *names, int nrows, const char *const *vals)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc att[16];
    if (r == NULL || ncols > 16)
        abort();
    memset(att, 0, sizeof att);
    for (int i = 0; i < ncols; i++) {
        att[i].name = (char *)names[i];
        att[i].typid = 25;
        att[i].typlen = -1;
        att[i].atttypmod = -1;
    }
    if (!PQsetResultAttrs(r, ncols, att))
        abort();
    for (int row = 0; row < nrows; row++)
        for (int c = 0; c < ncols; c++) {
            const char *v = vals[row * ncols + c];
            if (!PQsetvalue(r, row, c, (char *)v, v ? (int)strlen(v) : -1))
                abort();
        }
    return r;
}
#define FAKE(names, vals)                              \
    fake((int)(sizeof names / sizeof names[0]), names, \
         (int)(sizeof vals / sizeof vals[0] / (sizeof names / sizeof names[0])), vals)

static void decode_health(void)
{
    static const char *const gn[] = {"last_age", "util_mean",    "util_max",   "unread",
                                     "samples",  "idle_gpu_pct", "interval_s", "host_id"};
    static const char *const gv[] = {"12.5", "0.5", "2",  "3", "27", "7.5", "10", "a",
                                     NULL,   NULL,  NULL, "0", "0",  NULL,  NULL, "b"};
    static const char *const in_[] = {
        "message",  "raw",  "last_seen", "first_seen",  "count",          "pci_bus_id", "gpu_uuid",
        "category", "code", "kind",      "open_events", "quarantined_at", "reason",     "host_id"};
    /* clang-format off */
    static const char *const iv[] = {
        "m1", "r1", "L1", "F1", "2", "00000000:18:00.0", "GPU-1", "hardware", "79", "xid", "2", "Q", "why", "a",
        NULL, "r2", "L2", "F2", "1", NULL, NULL, NULL, NULL, "fabric", "2", "Q", "why", "a",
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0", "Q2", NULL, "c",
    };
    /* clang-format on */
    struct db_rec_input in;
    memset(&in, 0, sizeof in);
    CHECK(db_rec_decode_health(FAKE(gn, gv), FAKE(in_, iv), &in) == DB_ONE_RESULT);
    CHECK(in.ngpu == 2 && in.nisolated == 2 && in.nevents == 2);
    const struct db_rec_gpu *g = &in.gpu[0];
    CHECK_STR(g->host_id, "a");
    CHECK(g->util.samples == 27 && g->util.unread == 3 && g->util.has_util);
    CHECK(g->util.max_pct == 2 && g->util.mean_pct == 0.5 && g->util.interval_s == 10);
    CHECK(g->util.has_last && g->util.last_age_s == 12.5);
    CHECK(g->idle_gpu_pct.set && g->idle_gpu_pct.value == 7.5);
    g = &in.gpu[1];
    CHECK_STR(g->host_id, "b");
    CHECK(g->util.samples == 0 && !g->util.has_util && g->util.interval_s == 0);
    CHECK(!g->util.has_last);
    CHECK(!g->idle_gpu_pct.set);
    const struct db_rec_isolated *h = &in.isolated[0];
    CHECK_STR(h->host_id, "a");
    CHECK_STR(h->iso.reason, "why");
    CHECK_STR(h->iso.quarantined_at, "Q");
    CHECK(h->iso.open_events == 2 && h->iso.nevents == 2);
    CHECK_STR(h->iso.events[0].kind, "xid");
    CHECK(h->iso.events[0].has_code && h->iso.events[0].code == 79 && h->iso.events[0].count == 2);
    CHECK_STR(h->iso.events[0].pci_bus_id, "00000000:18:00.0");
    CHECK_STR(h->iso.events[0].first_seen, "F1");
    CHECK_STR(h->iso.events[0].message, "m1");
    CHECK_STR(h->iso.events[1].kind, "fabric");
    CHECK(!h->iso.events[1].has_code && h->iso.events[1].gpu_uuid == NULL);
    h = &in.isolated[1];
    CHECK_STR(h->host_id, "c");
    CHECK(h->iso.nevents == 0 && h->iso.open_events == 0 && h->iso.reason == NULL);
    db_rec_input_free(&in);
    CHECK(in.gpu == NULL && in.isolated == NULL && in.res[4] == NULL && in.ngpu == 0);
}

UNIT_SUITE(recommend_idle_tests) = {
    {"recommend idle: stop with both signals, each in the evidence", stop_with_both_signals},
    {"recommend idle: GPU utilization strictly under the pool's threshold", utilization_threshold},
    {"recommend idle: samples must cover 90% of the window", coverage_rule},
    {"recommend idle: an unknown signal never stops a host, and is listed", unknown_never_stops},
    {"recommend idle: reuse needs both signals too", reuse_needs_both_signals},
    {"recommend: investigate a host isolated by the monitor, with its events",
     isolation_investigate},
    {"recommend: GPU utilization and isolation inputs decoded by column name", decode_health},
    UNIT_END,
};
