/* test_budget.c — the budget's decisions (planner/budget.h): the UTC month and the burn
 * window, the burn rate and forecast, the thresholds crossed and exhaustion, each against
 * a hand-computed value. */
#include <math.h>
#include <string.h>

#include "planner/budget.h"
#include "tests/unit/unit.h"

#define S(x) ((int64_t)(x)*1000000) /* seconds to µs */

/* Epoch seconds (calendar.timegm): 2026-02-01 1769904000, 2026-03-01 1772323200,
 * 2026-02-14T10:30 1771065000, 2025-12-01 1764547200, 2026-01-01 1767225600,
 * 2025-12-31T23:59:59 1767225599, 2024-02-01 1706745600, 2024-03-01 1709251200,
 * 2024-02-29T12:00 1709208000, 2026-02-01T06:00 1769925600. */
static void month(void)
{
    int64_t a, b;
    char m[11];
    plan_budget_month(S(1771065000), &a, &b, m);
    CHECK(a == S(1769904000) && b == S(1772323200));
    CHECK_STR(m, "2026-02-01");
    plan_budget_month(S(1767225599) + 999999, &a, &b, m); /* the last µs of 2025 */
    CHECK(a == S(1764547200) && b == S(1767225600));
    CHECK_STR(m, "2025-12-01");
    plan_budget_month(S(1767225600), &a, &b, m); /* the first µs of 2026 */
    CHECK(a == S(1767225600));
    CHECK_STR(m, "2026-01-01");
    plan_budget_month(S(1709208000), &a, &b, m); /* a leap day */
    CHECK(a == S(1706745600) && b == S(1709251200));
    CHECK_STR(m, "2024-02-01");
    /* The burn window: the last 24 h, or the month so far when shorter. */
    CHECK(plan_burn_start(S(1771065000)) == S(1771065000 - 86400));
    CHECK(plan_burn_start(S(1769925600)) == S(1769904000)); /* 6 h into February */
    CHECK(plan_burn_start(S(1769904000)) == S(1769904000)); /* its first instant: empty */
}

static struct plan_budget_in base(void)
{
    struct plan_budget_in in = {0};
    in.has_budget = 1;
    in.budget = 1000;
    in.thresholds[0] = 50;
    in.thresholds[1] = 80;
    in.thresholds[2] = 100;
    in.nthresholds = 3;
    in.burn_hours = 24;
    in.hours_left = 300;
    return in;
}

/* $812.34 of $1000: 50 and 80 crossed (≥ $500, ≥ $800), not 100. $48 over the last 24 h
 * is $2/h; 300 h left: forecast 812.34 + 600 = $1412.34. */
static void thresholds(void)
{
    struct plan_budget_in in = base();
    struct plan_budget_out out;
    in.spend = 812.34;
    in.burn_spend = 48;
    plan_budget(&in, &out);
    CHECK(out.spend == 812.34 && out.burn_per_hour == 2.0 && out.forecast == 1412.34);
    CHECK(out.ncrossed == 2 && out.crossed[0] == 50 && out.crossed[1] == 80);
    CHECK(!out.exhausted);
    /* Exactly at a threshold crosses it; a cent under does not. */
    in.spend = 500.00;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 1 && out.crossed[0] == 50);
    in.spend = 499.99;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 0);
    /* Exactly the budget: exhausted, every threshold crossed. */
    in.spend = 1000;
    plan_budget(&in, &out);
    CHECK(out.exhausted && out.ncrossed == 3 && out.crossed[2] == 100);
    in.spend = 999.994; /* rounds to $999.99 */
    plan_budget(&in, &out);
    CHECK(!out.exhausted && out.ncrossed == 2 && out.spend == 999.99);
    /* A threshold over 100 %: $1600 of $1000 crosses 150. */
    in.thresholds[3] = 150;
    in.nthresholds = 4;
    in.spend = 1600;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 4 && out.crossed[3] == 150 && out.exhausted);
    in.spend = 1499.99;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 3);
}

/* Cents compared exactly: 50 % of $0.03 is 1.5 cents, crossed at $0.02, not at $0.01. A
 * repeated threshold counts once. */
static void small_sums(void)
{
    struct plan_budget_in in = base();
    struct plan_budget_out out;
    in.budget = 0.03;
    in.spend = 0.02;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 1 && out.crossed[0] == 50 && !out.exhausted);
    in.spend = 0.01;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 0);
    in.budget = 100;
    in.thresholds[0] = 80;
    in.thresholds[1] = 80;
    in.thresholds[2] = 50;
    in.spend = 90;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 2 && out.crossed[0] == 80 && out.crossed[1] == 50);
}

/* Without a budget: figures, nothing crossed, never exhausted. A budget of 0 is exhausted
 * from the start. */
static void no_budget(void)
{
    struct plan_budget_in in = base();
    struct plan_budget_out out;
    in.has_budget = 0;
    in.spend = 5000;
    in.burn_spend = 240;
    plan_budget(&in, &out);
    CHECK(out.ncrossed == 0 && !out.exhausted);
    CHECK(out.burn_per_hour == 10 && out.forecast == 8000); /* 5000 + 10 × 300 */
    in = base();
    in.budget = 0;
    in.spend = 0;
    plan_budget(&in, &out);
    CHECK(out.exhausted && out.ncrossed == 3);
}

/* The burn rate to 4 decimals: $10 over 3 h is 3.3333/h; 10 h left: 1.00 + 33.333 →
 * $34.33. An empty burn window (the month's first instant) burns nothing. */
static void burn(void)
{
    struct plan_budget_in in = base();
    struct plan_budget_out out;
    in.spend = 1;
    in.burn_spend = 10;
    in.burn_hours = 3;
    in.hours_left = 10;
    plan_budget(&in, &out);
    CHECK(out.burn_per_hour == 3.3333 && out.forecast == 34.33);
    in.burn_hours = 0;
    plan_budget(&in, &out);
    CHECK(out.burn_per_hour == 0 && out.forecast == 1);
    in.burn_hours = 6; /* six hours into the month: the month so far */
    in.burn_spend = 3;
    in.hours_left = 666;
    plan_budget(&in, &out);
    CHECK(out.burn_per_hour == 0.5 && out.forecast == 334); /* 1 + 0.5 × 666 */
}

UNIT_SUITE(budget_tests) = {
    {"budget: the UTC month and the burn window", month},
    {"budget: thresholds crossed and exhaustion", thresholds},
    {"budget: cents compared exactly, a threshold once", small_sums},
    {"budget: no budget, and a budget of 0", no_budget},
    {"budget: the burn rate and the forecast", burn},
    UNIT_END,
};
