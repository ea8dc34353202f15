/* test_placement.c — placement arithmetic and the rightsize rule (planner/placement.h,
 * planner/recommend_place.h), worked cases checked to the cent (docs/placement.md). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "planner/costs.h"
#include "planner/placement.h"
#include "planner/recommend_place.h"
#include "tests/unit/unit.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)
#define CENTS(x)   plan_round_cents((x)*1e6) /* per 1M units, to the cent */
#define BRIEF_ID   "00000000-0000-4000-8000-0000000000b1"

/* A pool where the brief ran: one host held `held_h` hours, reporting `completed` tokens
 * and `busy_h` busy hours over `days` days. */
static void measured(struct plan_place_pool *p, const char *name, const char *gpu, double price,
                     double held_h, double completed, double busy_h, long days)
{
    memset(p, 0, sizeof *p);
    p->id = name;
    p->name = name;
    p->gpu_model = gpu;
    p->gpu_count = 1;
    p->prices.per_hour = price;
    p->fits = 1;
    p->gpus_needed = 1;
    p->days = days;
    struct usage_host h = {"h", "h", name, name, "pr", "pr", p->prices, held_h * 3600};
    struct usage_row r;
    memset(&r, 0, sizeof r);
    r.brief_id = BRIEF_ID;
    r.unit = USAGE_UNIT_TOKENS;
    r.reports = (long)held_h;
    r.completed = completed;
    r.busy_seconds = busy_h * 3600;
    r.covered_seconds = held_h * 3600;
    plan_place_add_host(&p->acc, &h, &r, 0, 1, BRIEF_ID);
}

static void brief(struct plan_place_brief *b, double completed, double span_h)
{
    memset(b, 0, sizeof *b);
    b->unit = USAGE_UNIT_TOKENS;
    b->completed = completed;
    b->span_hours = span_h;
    b->margin_pct = PLAN_PLACE_DEFAULT_MARGIN;
    b->min_days = PLAN_PLACE_DEFAULT_MIN_DAYS;
    b->concurrency = 1;
    b->has_latency = 1;
    b->latency_ms = 500;
}

static const struct plan_place_row *find(const struct plan_place_row *rows, size_t n,
                                         const char *option)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].option, option) == 0)
            return &rows[i];
    return NULL;
}

/* The worked case of docs/placement.md and tests/api/placement.test.js. */
static void worked_case(void)
{
    struct plan_place_pool pools[3];
    struct plan_place_brief b;
    measured(&pools[0], "h100", "h100_sxm", 4, 192, 192e6, 96, 8); /* $768 */
    measured(&pools[1], "l4", "l4", 1, 192, 96e6, 192, 8);         /* $192 */
    memset(&pools[2], 0, sizeof pools[2]);
    pools[2] = (struct plan_place_pool){.id = "l40s",
                                        .name = "l40s",
                                        .gpu_model = "l40s",
                                        .gpu_count = 1,
                                        .fits = 1,
                                        .gpus_needed = 1};
    pools[2].prices.per_hour = 2;
    struct plan_place_baseline bl[] = {{"l40s", NULL, 1, 1, 500}};
    brief(&b, 288e6, 192);
    json_t *alts = json_loads(
        "[{\"name\":\"managed-api\",\"kind\":\"api\",\"price_per_unit\":0.6,\"per_units\":1000000,"
        "\"unit\":\"tokens\",\"latency_ms_p95\":400},"
        "{\"name\":\"on-demand-h100\",\"kind\":\"on_demand\",\"price_per_gpu_hour\":2.9,\"gpus\":1,"
        "\"cold_start_seconds\":240},"
        "{\"name\":\"reserved-l4\",\"kind\":\"reserved\",\"price_per_gpu_hour\":0.7,\"gpus\":1,"
        "\"commitment_months\":12,\"gpu_model\":\"l4\"}]",
        0, NULL);
    struct plan_place_row *rows = NULL;
    size_t n = 0;
    CHECK(plan_place_rows(&b, pools, 3, bl, 1, alts, &rows, &n) == 0);
    CHECK(n == 6);
    const char *order[] = {"managed-api", "l40s", "reserved-l4", "on-demand-h100", "l4", "h100"};
    const double cents[] = {0.60, 1.33, 1.40, 1.46, 2.00, 4.00};
    for (size_t i = 0; i < 6 && i < n; i++) {
        CHECK_STR(rows[i].option, order[i]);
        CHECK(NEAR(CENTS(rows[i].cost_per_unit), cents[i]));
    }
    const struct plan_place_row *h = find(rows, n, "h100"), *e = find(rows, n, "l40s");
    CHECK(h && h->current && h->basis == PLACE_MEASURED && NEAR(h->cost_per_unit, 4e-6));
    CHECK(e && e->basis == PLACE_ESTIMATED && e->meets == -1);
    CHECK(find(rows, n, "managed-api")->meets == 1);
    CHECK(find(rows, n, "reserved-l4")->meets == 0);
    /* on-demand: 2.9 × 1.5M ÷ 2M + 240/3600 × 2.9 ÷ 24 = 2.1830556 $/h */
    CHECK(NEAR(plan_round_to(find(rows, n, "on-demand-h100")->per_hour, 7), 2.1830556));

    int oom = 0;
    json_t *rec = plan_rec_rightsize(&b, rows, n, BRIEF_ID, "chat", &oom);
    CHECK(rec != NULL && !oom);
    CHECK_STR(json_string_value(json_object_get(rec, "action")), "rightsize");
    json_t *ev = json_object_get(rec, "evidence");
    CHECK_STR(json_string_value(json_object_get(json_object_get(ev, "proposed"), "option")),
              "managed-api");
    CHECK(NEAR(json_real_value(json_object_get(rec, "estimated_savings_per_hour")), 5.1));
    json_decref(rec);

    /* Without the api: the measured l4 pool (50% cheaper) is proposed, never l40s (an
     * estimate), reserved or on-demand. */
    plan_place_rows_free(rows, n);
    CHECK(plan_place_rows(&b, pools, 3, bl, 1, NULL, &rows, &n) == 0);
    rec = plan_rec_rightsize(&b, rows, n, BRIEF_ID, "chat", &oom);
    CHECK(rec != NULL);
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_object_get(rec, "evidence"), "proposed"), "option")),
              "l4");
    json_decref(rec);
    /* A 60% margin: 50% cheaper is not enough. */
    b.margin_pct = 60;
    CHECK(plan_rec_rightsize(&b, rows, n, BRIEF_ID, "chat", &oom) == NULL && !oom);
    b.margin_pct = 20;
    plan_place_rows_free(rows, n);
    json_decref(alts);
}

/* Six days on the current pool are not enough; nor six on the cheaper measured pool. */
static void evidence_days(void)
{
    struct plan_place_pool pools[2];
    struct plan_place_brief b;
    struct plan_place_row *rows = NULL;
    size_t n = 0;
    int oom = 0;
    brief(&b, 288e6, 192);
    for (int k = 0; k < 3; k++) {
        long dh = k == 0 ? 6 : 8, dl = k == 1 ? 6 : 8;
        measured(&pools[0], "h100", "h100_sxm", 4, 192, 192e6, 96, dh);
        measured(&pools[1], "l4", "l4", 1, 192, 96e6, 192, dl);
        CHECK(plan_place_rows(&b, pools, 2, NULL, 0, NULL, &rows, &n) == 0);
        json_t *rec = plan_rec_rightsize(&b, rows, n, BRIEF_ID, "chat", &oom);
        CHECK(k == 2 ? rec != NULL : rec == NULL);
        json_decref(rec);
        plan_place_rows_free(rows, n);
    }
}

/* Idle hours are paid: the same work on a host held twice as long costs twice as much;
 * a host's held time is split among the briefs its reports name by covered seconds. */
static void idle_and_attribution(void)
{
    struct plan_cost_acc acc;
    struct plan_cost c;
    memset(&acc, 0, sizeof acc);
    struct usage_host h = {"h", "h", "p", "p", "pr", "pr", {2, 0, 0, 0}, 10 * 3600};
    struct usage_row rows[2];
    memset(rows, 0, sizeof rows);
    rows[0] = (struct usage_row){.brief_id = BRIEF_ID,
                                 .unit = 0,
                                 .reports = 3,
                                 .completed = 300,
                                 .busy_seconds = 3600,
                                 .covered_seconds = 3 * 3600};
    rows[1] = (struct usage_row){.brief_id = "other",
                                 .unit = 0,
                                 .reports = 1,
                                 .completed = 100,
                                 .busy_seconds = 3600,
                                 .covered_seconds = 3600};
    plan_place_add_host(&acc, &h, rows, 0, 2, BRIEF_ID);
    plan_cost_finish(&acc, &c);
    /* 10 h held × 3/4 of the covered time = 7.5 h × $2 = $15 over 300 units */
    CHECK(NEAR(c.total, 15));
    CHECK(NEAR(c.cost_per_unit[0], 0.05));
    memset(&acc, 0, sizeof acc);
    plan_place_add_host(&acc, &h, rows, 1, 2, BRIEF_ID); /* no report of the brief */
    CHECK(acc.reports == 0 && acc.held_seconds == 0);
}

static void check_alternatives(void)
{
    struct plan_error err;
    json_t *ok = json_loads("{\"alternatives\":[{\"name\":\"a\",\"kind\":\"api\","
                            "\"price_per_unit\":1,\"per_units\":1,\"unit\":\"tokens\"}]}",
                            0, NULL);
    CHECK(plan_place_check(ok, &err) == 0);
    json_decref(ok);
    json_t *dup = json_loads("{\"alternatives\":[{\"name\":\"a\",\"kind\":\"reserved\","
                             "\"price_per_gpu_hour\":1,\"gpus\":1,\"commitment_months\":1},"
                             "{\"name\":\"a\",\"kind\":\"reserved\",\"price_per_gpu_hour\":1,"
                             "\"gpus\":1,\"commitment_months\":1}]}",
                             0, NULL);
    CHECK(plan_place_check(dup, &err) != 0);
    CHECK_STR(err.field, "alternatives[1].name");
    json_decref(dup);
    json_t *miss = json_loads("{\"alternatives\":[{\"name\":\"o\",\"kind\":\"on_demand\","
                              "\"price_per_gpu_hour\":1,\"gpus\":1}]}",
                              0, NULL);
    CHECK(plan_place_check(miss, &err) != 0);
    CHECK_STR(err.field, "alternatives[0].cold_start_seconds");
    json_decref(miss);
}

UNIT_SUITE(placement_tests) = {
    {"placement: worked case ranked to the cent, rightsize to the api, then to l4", worked_case},
    {"placement: rightsize needs min_days on both measured sides", evidence_days},
    {"placement: idle hours paid, held time attributed by covered seconds", idle_and_attribution},
    {"placement: alternatives' cross-field checks", check_alternatives},
    UNIT_END};
