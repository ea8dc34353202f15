/* test_costs.c — held time from state histories, and the cost arithmetic, checked
 * against figures computed by hand (docs/product.md §6, issue 6). */
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "planner/costs.h"
#include "tests/unit/unit.h"

#define H               (3600LL * 1000000LL) /* one hour in microseconds */
#define NEAR(a, b, eps) (fabs((a) - (b)) < (eps))

/* Hand-made histories. Times in hours from an origin T0 = 0. */
static void held_time(void)
{
    /* Registered at 0, never stopped: held from 0 until the window end. */
    struct plan_state_change reg[] = {{0, 1}};
    CHECK(plan_held_seconds(reg, 1, 2 * H, 12 * H, 100 * H) == 10 * 3600.0);
    /* A window starting before registration counts from registration only. */
    CHECK(plan_held_seconds(reg, 1, -5 * H, 3 * H, 100 * H) == 3 * 3600.0);
    /* Time after now is not counted: window [2, 12) with now = 7 → 5 h. */
    CHECK(plan_held_seconds(reg, 1, 2 * H, 12 * H, 7 * H) == 5 * 3600.0);
    /* A window wholly in the future → 0. */
    CHECK(plan_held_seconds(reg, 1, 20 * H, 30 * H, 7 * H) == 0);

    /* registered 0, provisioning 1, ready 2, stopped 5, registered (restart) 8, stopped 9.
     * Held: [0,5) and [8,9). Window [3, 10) → 2 h + 1 h = 3 h. */
    struct plan_state_change h[] = {{0, 1},     {1 * H, 1}, {2 * H, 1},
                                    {5 * H, 0}, {8 * H, 1}, {9 * H, 0}};
    CHECK(plan_held_seconds(h, 6, 3 * H, 10 * H, 100 * H) == 3 * 3600.0);
    /* The state at the window start is the last change before it: window [6, 8.5) starts
     * while stopped → only [8, 8.5) = 0.5 h. */
    CHECK(plan_held_seconds(h, 6, 6 * H, 8 * H + H / 2, 100 * H) == 1800.0);
    /* Entirely inside a stopped stretch → 0. */
    CHECK(plan_held_seconds(h, 6, 5 * H, 8 * H, 100 * H) == 0);
    /* Stopped at the end: nothing after 9. Window [9, 20) → 0. */
    CHECK(plan_held_seconds(h, 6, 9 * H, 20 * H, 100 * H) == 0);
    /* Whole history: 5 + 1 = 6 h. */
    CHECK(plan_held_seconds(h, 6, 0, 100 * H, 100 * H) == 6 * 3600.0);
    /* No history at all → 0. */
    CHECK(plan_held_seconds(NULL, 0, 0, 10 * H, 100 * H) == 0);
    /* Sub-second precision is kept. */
    struct plan_state_change us[] = {{1500000, 1}};
    CHECK(plan_held_seconds(us, 1, 0, 4000000, 100 * H) == 2.5);
}

/* The worked example of issue 6, by hand:
 *   compute       = $4/h × 10 h                               = $40.00
 *   storage       = 2,000 GB × $0.08/GB-month × 10 h / 730 h  = $2.19178… → $2.19
 *   data movement = 50 GB × $0.05/GB                          = $2.50
 *   overhead      = 10% × (40 + 2.19178… + 2.50) = $4.469178… → $4.47
 *   total         = 40.00 + 2.19 + 2.50 + 4.47                = $49.16
 *   failed share  = 6e4 / (1.2e6 + 6e4) = 0.047619…           → 4.76%
 *   failed amount = $49.16 × 0.047619…  = $2.34095…           → $2.34
 *   per token     = $49.16 / 1.2e6 = $0.0000409667; per 1,000 → $0.041 (to the mill)
 * Each component is rounded to the cent once; the total is the sum of the rounded
 * components. (Rounding only the total, 49.16096 → 49.16, gives the same figures.) */
static void worked_example(void)
{
    struct usage_prices p = {4, 0.08, 0.05, 10};
    struct plan_usage u = {0};
    u.held_seconds = 10 * 3600.0;
    u.reports = 10; /* ten hourly reports */
    u.busy_seconds = 8 * 3600.0;
    u.storage_gb_seconds = 2000.0 * 10 * 3600; /* 2,000 GB over the 10 reported hours */
    u.storage_seconds = 10 * 3600.0;
    u.bytes_moved = 50e9;
    u.completed[USAGE_UNIT_TOKENS] = 1.2e6;
    u.failed[USAGE_UNIT_TOKENS] = 6e4;
    u.has_unit[USAGE_UNIT_TOKENS] = 1;
    struct plan_cost_acc acc = {0};
    plan_cost_add(&acc, &p, &u);
    struct plan_cost c;
    plan_cost_finish(&acc, &c);
    CHECK(c.compute == 40.00);
    CHECK(c.storage == 2.19);
    CHECK(c.data_movement == 2.50);
    CHECK(c.overhead == 4.47);
    CHECK(c.total == 49.16);
    CHECK(c.has_share && c.failed_retried_amount == 2.34);
    CHECK(c.failed_retried_share == 0.0476);
    CHECK(c.has_cost_per_unit[USAGE_UNIT_TOKENS]);
    CHECK(plan_round_to(c.cost_per_unit[USAGE_UNIT_TOKENS] * 1000, 3) == 0.041);
    CHECK(NEAR(c.cost_per_unit[USAGE_UNIT_TOKENS], 49.16 / 1.2e6, 1e-15));
    CHECK(!c.has_cost_per_unit[USAGE_UNIT_REQUESTS] && !c.has_unit[USAGE_UNIT_REQUESTS]);
    CHECK(c.completed[USAGE_UNIT_TOKENS] == 1.2e6);
    /* utilization 8 h / 10 h; idle 2 h. */
    CHECK(!c.no_usage_data && c.has_utilization && NEAR(c.utilization, 0.8, 1e-12));
    CHECK(c.has_idle_hours && NEAR(c.idle_hours, 2.0, 1e-12));
    CHECK(c.held_hours == 10.0);
}

/* Two hosts in one group, with different pools: components sum before rounding.
 * A: $2.005/h × 1 h = 2.005; B: $1.0025/h × 2 h = 2.005 → compute 4.01 (each alone would
 * round to 2.01, so rounding per host would give 4.02). Overhead: A 0%, B 50% of 2.005 =
 * 1.0025 → 1.00. Total 5.01. */
static void group_sums(void)
{
    struct usage_prices a = {2.005, 0, 0, 0}, b = {1.0025, 0, 0, 50};
    struct plan_usage ua = {0}, ub = {0};
    ua.held_seconds = 3600;
    ub.held_seconds = 7200;
    struct plan_cost_acc acc = {0};
    plan_cost_add(&acc, &a, &ua);
    plan_cost_add(&acc, &b, &ub);
    struct plan_cost c;
    plan_cost_finish(&acc, &c);
    CHECK(c.compute == 4.01);
    CHECK(c.overhead == 1.00);
    CHECK(c.total == 5.01);
    CHECK(c.held_hours == 3.0);
}

static void edge_cases(void)
{
    struct usage_prices p = {3, 0.1, 0.09, 5};
    struct plan_cost_acc acc = {0};
    struct plan_cost c;

    /* No reports: compute still counts (the host is held), but there is no usage data:
     * utilization and idle hours are unknown (null), never 0 % or all idle. */
    struct plan_usage none = {0};
    none.held_seconds = 2 * 3600.0;
    plan_cost_add(&acc, &p, &none);
    plan_cost_finish(&acc, &c);
    CHECK(c.no_usage_data);
    CHECK(!c.has_utilization && !c.has_idle_hours);
    CHECK(c.compute == 6.00 && c.storage == 0 && c.data_movement == 0);
    CHECK(c.overhead == 0.30 && c.total == 6.30);
    CHECK(!c.has_share && c.failed_retried_amount == 0);
    for (int k = 0; k < USAGE_UNIT_COUNT; k++)
        CHECK(!c.has_unit[k] && !c.has_cost_per_unit[k]);

    /* Reports with nothing completed: cost per unit is null (not infinite); the failed
     * share is 100 % of the total. */
    struct plan_usage zero = {0};
    zero.held_seconds = 3600;
    zero.reports = 1;
    zero.busy_seconds = 900;
    zero.failed[USAGE_UNIT_REQUESTS] = 10;
    zero.retried[USAGE_UNIT_REQUESTS] = 5;
    zero.has_unit[USAGE_UNIT_REQUESTS] = 1;
    memset(&acc, 0, sizeof acc);
    plan_cost_add(&acc, &p, &zero);
    plan_cost_finish(&acc, &c);
    CHECK(!c.no_usage_data && c.has_unit[USAGE_UNIT_REQUESTS]);
    CHECK(!c.has_cost_per_unit[USAGE_UNIT_REQUESTS]);
    CHECK(c.total == 3.15 && c.has_share && c.failed_retried_share == 1.0);
    CHECK(c.failed_retried_amount == 3.15);
    CHECK(NEAR(c.utilization, 0.25, 1e-12) && NEAR(c.idle_hours, 0.75, 1e-12));

    /* Reports but no held time (e.g. the host was stopped): utilization unknown, idle 0. */
    struct plan_usage stopped = {0};
    stopped.reports = 1;
    stopped.busy_seconds = 60;
    memset(&acc, 0, sizeof acc);
    plan_cost_add(&acc, &p, &stopped);
    plan_cost_finish(&acc, &c);
    CHECK(!c.has_utilization && c.has_idle_hours && c.idle_hours == 0 && c.total == 0);

    /* Zero counts everywhere: no share. */
    CHECK(!c.has_share);
}

/* Grouping. Host a ($2/h, pool p1) held 10 h reports 6 h for brief x and 2 h for brief y:
 * its held time splits 6:2 → x 7.5 h ($15.00), y 2.5 h ($5.00). Host b ($1/h, pool p1)
 * held 4 h without reports → the group without a brief ($4.00). Host c ($3/h, pool p2)
 * held 1 h reports 1 h for x ($3.00) → x $18.00 over 8.5 h. By pool: p1 $24.00, p2 $3.00.
 * By project (p1's hosts in project A, p2's in B): A $24.00 for 600 tokens and 20 requests
 * ($0.04 a token, $1.20 a request), B $3.00 for 100 tokens ($0.03 a token). */
static void grouping(void)
{
    struct usage_host hosts[] = {
        {"a", "host-a", "p1", "pool-1", "A", "proj-a", {2, 0, 0, 0}, 36000},
        {"b", "host-b", "p1", "pool-1", "A", "proj-a", {1, 0, 0, 0}, 14400},
        {"c", "host-c", "p2", "pool-2", "B", "proj-b", {3, 0, 0, 0}, 3600},
    };
    struct usage_row rows[] = {
        {0,
         "x",
         "brief-x",
         USAGE_UNIT_TOKENS,
         6,
         600,
         0,
         0,
         3600,
         6 * 3600.0,
         0,
         0,
         0,
         {{0}, 0, 0},
         {{0}, 0, 0}},
        {0,
         "y",
         "brief-y",
         USAGE_UNIT_REQUESTS,
         2,
         20,
         0,
         0,
         1800,
         2 * 3600.0,
         0,
         0,
         0,
         {{0}, 0, 0},
         {{0}, 0, 0}},
        {2,
         "x",
         "brief-x",
         USAGE_UNIT_TOKENS,
         1,
         100,
         0,
         0,
         900,
         3600.0,
         0,
         0,
         0,
         {{0}, 0, 0},
         {{0}, 0, 0}},
    };
    struct plan_cost_group *g = NULL;
    size_t n = 0;
    struct plan_cost c;
    CHECK(plan_costs_group(hosts, 3, rows, 3, PLAN_BY_BRIEF, &g, &n) == 0);
    CHECK(n == 3);
    CHECK_STR(g[0].id, "x");
    plan_cost_finish(&g[0].acc, &c);
    CHECK(c.compute == 18.00 && c.held_hours == 8.5 && c.completed[USAGE_UNIT_TOKENS] == 700);
    CHECK_STR(g[1].id, "y");
    plan_cost_finish(&g[1].acc, &c);
    CHECK(c.compute == 5.00 && NEAR(c.utilization, 0.2, 1e-12));
    CHECK(g[2].id == NULL);
    plan_cost_finish(&g[2].acc, &c);
    CHECK(c.compute == 4.00 && c.no_usage_data);
    free(g);

    CHECK(plan_costs_group(hosts, 3, rows, 3, PLAN_BY_POOL, &g, &n) == 0);
    CHECK(n == 2);
    CHECK_STR(g[0].name, "pool-1");
    plan_cost_finish(&g[0].acc, &c);
    CHECK(c.compute == 24.00 && c.held_hours == 14.0 && !c.no_usage_data);
    plan_cost_finish(&g[1].acc, &c);
    CHECK(c.compute == 3.00);
    free(g);

    CHECK(plan_costs_group(hosts, 3, rows, 3, PLAN_BY_PROJECT, &g, &n) == 0);
    CHECK(n == 2);
    CHECK_STR(g[0].id, "A");
    CHECK_STR(g[0].name, "proj-a");
    plan_cost_finish(&g[0].acc, &c);
    CHECK(c.total == 24.00 && c.held_hours == 14.0);
    CHECK(c.completed[USAGE_UNIT_TOKENS] == 600 && c.completed[USAGE_UNIT_REQUESTS] == 20);
    CHECK(c.has_cost_per_unit[USAGE_UNIT_TOKENS] &&
          NEAR(c.cost_per_unit[USAGE_UNIT_TOKENS], 0.04, 1e-12));
    CHECK(NEAR(c.cost_per_unit[USAGE_UNIT_REQUESTS], 1.20, 1e-12));
    CHECK_STR(g[1].id, "B");
    plan_cost_finish(&g[1].acc, &c);
    CHECK(c.total == 3.00 && NEAR(c.cost_per_unit[USAGE_UNIT_TOKENS], 0.03, 1e-12));
    CHECK(!c.has_unit[USAGE_UNIT_REQUESTS]);
    free(g);

    CHECK(plan_costs_group(hosts, 3, rows, 3, PLAN_BY_HOST, &g, &n) == 0);
    CHECK(n == 3);
    plan_cost_finish(&g[0].acc, &c);
    CHECK(c.compute == 20.00 && c.completed[USAGE_UNIT_TOKENS] == 600);
    CHECK(c.completed[USAGE_UNIT_REQUESTS] == 20);
    free(g);
}

static void rounding(void)
{
    CHECK(plan_round_cents(2.675) == 2.68); /* 2.67499999… in binary */
    CHECK(plan_round_cents(1.005) == 1.01);
    CHECK(plan_round_cents(2.19178) == 2.19);
    CHECK(plan_round_cents(-1.005) == -1.01);
    CHECK(plan_round_cents(0) == 0);
    CHECK(plan_round_to(0.047619, 4) == 0.0476);
    CHECK(plan_round_to(0.0409667, 3) == 0.041);
    CHECK(plan_held_share(3600, 1800, 3600) == 1800);
    CHECK(plan_held_share(3600, 0, 0) == 3600);
    CHECK(util_lookup(usage_unit_names, "tokens") == USAGE_UNIT_TOKENS);
    CHECK(util_lookup(usage_unit_names, "vectors") == USAGE_UNIT_VECTORS);
    CHECK(util_lookup(usage_unit_names, "bytes") == -1 &&
          util_lookup(usage_unit_names, NULL) == -1);
}

/* The cost split by phase (issue 26), the API test's worked example by hand: pool $1.96
 * per host-hour; host P 1 h held, 100,000 tokens, busy 3,600 s, phases load 1,304 s,
 * compute 2,000 s, write 296 s. Total $1.96 = 0.0196 per 1,000 tokens. Load share
 * 1304/3600 = 0.362222…: cost 1.96 × 0.362222 = 0.70996 → $0.71; per 1,000 tokens
 * 0.0196 × 0.362222 = 0.0070996 → 0.0071. Compute 1.08889 → $1.09, write 0.16116 → $0.16. */
static struct usage_row phase_row(size_t host, double busy, double load, double compute,
                                  double write, long gave)
{
    struct usage_row r = {.host = host,
                          .unit = USAGE_UNIT_TOKENS,
                          .reports = 1,
                          .completed = 100000,
                          .busy_seconds = busy,
                          .covered_seconds = 3600};
    r.phases.seconds[USAGE_PHASE_LOAD] = load;
    r.phases.seconds[USAGE_PHASE_COMPUTE] = compute;
    r.phases.seconds[USAGE_PHASE_WRITE] = write;
    r.phases.reports = gave;
    r.phases.busy_seconds = gave ? busy : 0;
    return r;
}

static void phases_split(void)
{
    struct usage_host hosts[] = {
        {"p", "host-p", "p1", "pool-1", "A", "proj-a", {1.96, 0, 0, 0}, 3600},
        {"q", "host-q", "p1", "pool-1", "A", "proj-a", {1.96, 0, 0, 0}, 3600},
    };
    struct usage_row rows[] = {phase_row(0, 3600, 1304, 2000, 296, 1),
                               phase_row(1, 2400, 0, 0, 0, 0)};
    struct plan_cost_group *g = NULL;
    size_t n = 0;
    struct plan_cost c;
    struct plan_cost_phases ph;
    /* P alone: everything broken down. */
    CHECK(plan_costs_group(hosts, 2, rows, 2, PLAN_BY_HOST, &g, &n) == 0 && n == 2);
    plan_cost_finish(&g[0].acc, &c);
    plan_cost_phases(&g[0].acc, &c, &ph);
    CHECK(c.total == 1.96 && plan_round_to(c.cost_per_unit[USAGE_UNIT_TOKENS] * 1000, 4) == 0.0196);
    CHECK(ph.has_seconds && ph.has_share && ph.has_coverage && ph.has_split);
    CHECK(ph.reports == 1 && ph.of_reports == 1 && ph.covered_busy_share == 1);
    CHECK(ph.total_seconds == 3600 && ph.seconds[USAGE_PHASE_LOAD] == 1304);
    CHECK(ph.share[USAGE_PHASE_LOAD] == 0.3622 && ph.share[USAGE_PHASE_COMPUTE] == 0.5556);
    CHECK(ph.cost[USAGE_PHASE_LOAD] == 0.71 && ph.cost[USAGE_PHASE_COMPUTE] == 1.09);
    CHECK(ph.cost[USAGE_PHASE_WRITE] == 0.16 && ph.cost[USAGE_PHASE_QUEUE] == 0);
    CHECK(ph.not_broken_down == 0);
    double *k = ph.cost_per_unit[USAGE_UNIT_TOKENS];
    CHECK(plan_round_to(k[USAGE_PHASE_LOAD] * 1000, 4) == 0.0071);
    CHECK(NEAR(k[USAGE_PHASE_LOAD] + k[USAGE_PHASE_COMPUTE] + k[USAGE_PHASE_WRITE],
               c.cost_per_unit[USAGE_UNIT_TOKENS], 1e-15));
    CHECK(ph.per_unit_not_broken_down[USAGE_UNIT_TOKENS] == 0);
    /* Q alone: no phases → nothing split, no shares (never "compute-bound"). */
    plan_cost_finish(&g[1].acc, &c);
    plan_cost_phases(&g[1].acc, &c, &ph);
    CHECK(!ph.has_seconds && !ph.has_share && !ph.has_split && ph.reports == 0);
    CHECK(ph.of_reports == 1 && ph.has_coverage && ph.covered_busy_share == 0);
    CHECK(ph.cost[USAGE_PHASE_COMPUTE] == 0 && ph.not_broken_down == 0);
    free(g);

    /* The pool: Q's report adds nothing to the phases; its 40% of the busy time is not
     * broken down. $3.92: load 3.92 × 0.6 × 0.362222 = 0.85195 → $0.85, compute
     * 1.30667 → $1.31, write 0.19339 → $0.19, not broken down 1.568 → $1.57; load per
     * 1,000 tokens 0.0196 × 0.6 × 0.362222 = 0.0042597. */
    CHECK(plan_costs_group(hosts, 2, rows, 2, PLAN_BY_POOL, &g, &n) == 0 && n == 1);
    plan_cost_finish(&g[0].acc, &c);
    plan_cost_phases(&g[0].acc, &c, &ph);
    CHECK(c.total == 3.92);
    CHECK(ph.reports == 1 && ph.of_reports == 2 && ph.busy_seconds == 3600);
    CHECK(ph.of_busy_seconds == 6000 && ph.covered_busy_share == 0.6);
    CHECK(ph.share[USAGE_PHASE_LOAD] == 0.3622 && ph.seconds[USAGE_PHASE_LOAD] == 1304);
    CHECK(ph.cost[USAGE_PHASE_LOAD] == 0.85 && ph.cost[USAGE_PHASE_COMPUTE] == 1.31);
    CHECK(ph.cost[USAGE_PHASE_WRITE] == 0.19 && ph.not_broken_down == 1.57);
    k = ph.cost_per_unit[USAGE_UNIT_TOKENS];
    CHECK(NEAR(k[USAGE_PHASE_LOAD] * 1000, 0.0196 * 0.6 * 1304 / 3600, 1e-12));
    CHECK(NEAR(ph.per_unit_not_broken_down[USAGE_UNIT_TOKENS] * 1000, 0.0196 * 0.4, 1e-12));
    free(g);
}

/* Phases that cannot split anything: all 0 s (no shares), or no busy time (no coverage). */
static void phases_edges(void)
{
    struct plan_cost_acc acc = {0};
    struct plan_usage u = {.held_seconds = 3600, .reports = 2, .busy_seconds = 0};
    u.phases.reports = 2;
    u.phases.seconds[USAGE_PHASE_QUEUE] = 100;
    struct usage_prices p = {2, 0, 0, 0};
    plan_cost_add(&acc, &p, &u);
    struct plan_cost c;
    struct plan_cost_phases ph;
    plan_cost_finish(&acc, &c);
    plan_cost_phases(&acc, &c, &ph);
    CHECK(ph.has_seconds && ph.has_share && ph.share[USAGE_PHASE_QUEUE] == 1);
    CHECK(!ph.has_coverage && !ph.has_split && ph.cost[USAGE_PHASE_QUEUE] == 0);

    struct plan_cost_acc acc2 = {0};
    struct plan_usage z = {.held_seconds = 3600, .reports = 1, .busy_seconds = 600};
    z.phases.reports = 1;
    z.phases.busy_seconds = 600;
    plan_cost_add(&acc2, &p, &z);
    plan_cost_finish(&acc2, &c);
    plan_cost_phases(&acc2, &c, &ph);
    CHECK(ph.has_seconds && !ph.has_share && ph.has_coverage && !ph.has_split);
    CHECK(ph.covered_busy_share == 1 && ph.total_seconds == 0);
    /* Coverage is capped at 1 (busy seconds summed in another order). */
    acc2.phases.busy_seconds = 600.0000001;
    acc2.phases.seconds[USAGE_PHASE_COMPUTE] = 10;
    plan_cost_phases(&acc2, &c, &ph);
    CHECK(ph.has_split && ph.covered_busy_share == 1 && ph.cost[USAGE_PHASE_COMPUTE] == 2.00);
    CHECK(ph.not_broken_down == 0);
}

/* The unit a group is shown in (a rollout's cost view): the one completed most of. */
static void main_unit(void)
{
    struct plan_cost c = {0};
    CHECK(plan_cost_main_unit(&c) == -1);
    c.has_unit[USAGE_UNIT_REQUESTS] = 1; /* reported, nothing completed */
    CHECK(plan_cost_main_unit(&c) == USAGE_UNIT_REQUESTS);
    c.has_unit[USAGE_UNIT_TOKENS] = 1;
    c.completed[USAGE_UNIT_TOKENS] = 10;
    c.has_unit[USAGE_UNIT_ITEMS] = 1;
    c.completed[USAGE_UNIT_ITEMS] = 12;
    CHECK(plan_cost_main_unit(&c) == USAGE_UNIT_ITEMS);
    c.completed[USAGE_UNIT_TOKENS] = 12; /* a tie: the first in enum order */
    CHECK(plan_cost_main_unit(&c) == USAGE_UNIT_TOKENS);
    c.completed[USAGE_UNIT_VECTORS] = 99; /* not reported: not counted */
    CHECK(plan_cost_main_unit(&c) == USAGE_UNIT_TOKENS);
}

UNIT_SUITE(costs_tests) = {
    {"costs: held time from state histories", held_time},
    {"costs: the worked example of issue 6", worked_example},
    {"costs: a group sums before rounding", group_sums},
    {"costs: no reports, nothing completed, no held time", edge_cases},
    {"costs: grouping by host, pool and brief", grouping},
    {"costs: rounding half away from zero", rounding},
    {"costs: the unit a group completed most of", main_unit},
    {"costs: the split by phase, over the reports that gave phases", phases_split},
    {"costs: phases with no shares or no coverage split nothing", phases_edges},
    UNIT_END,
};
