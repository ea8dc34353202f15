/* budget.c — see budget.h. */
#include "planner/budget.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "planner/costs.h"

void plan_budget_month(int64_t now_us, int64_t *start_us, int64_t *end_us, char month[11])
{
    time_t now = (time_t)(now_us / 1000000);
    if (now_us < 0 && now_us % 1000000 != 0)
        now--; /* floor: an instant before the epoch belongs to the second before */
    struct tm tm;
    gmtime_r(&now, &tm);
    struct tm first = {0};
    first.tm_year = tm.tm_year;
    first.tm_mon = tm.tm_mon;
    first.tm_mday = 1;
    struct tm next = first;
    if (++next.tm_mon == 12) {
        next.tm_mon = 0;
        next.tm_year++;
    }
    *start_us = (int64_t)timegm(&first) * 1000000;
    *end_us = (int64_t)timegm(&next) * 1000000;
    snprintf(month, 11, "%04u-%02u-01", (unsigned)(tm.tm_year + 1900) % 10000u,
             (unsigned)(tm.tm_mon + 1) % 100u);
}

int64_t plan_burn_start(int64_t now_us)
{
    int64_t start, end;
    char month[11];
    plan_budget_month(now_us, &start, &end, month);
    int64_t day_ago = now_us - PLAN_BURN_WINDOW_US;
    return day_ago > start ? day_ago : start;
}

/* Dollars to whole cents (rounded half away from zero, as plan_round_cents). */
static long long cents(double dollars)
{
    return llround(plan_round_cents(dollars) * 100);
}

void plan_budget(const struct plan_budget_in *in, struct plan_budget_out *out)
{
    out->spend = plan_round_cents(in->spend);
    out->burn_per_hour = in->burn_hours > 0 ? plan_round_to(in->burn_spend / in->burn_hours, 4) : 0;
    double left = in->hours_left > 0 ? in->hours_left : 0;
    out->forecast = plan_round_cents(out->spend + out->burn_per_hour * left);
    out->exhausted = 0;
    out->ncrossed = 0;
    if (!in->has_budget)
        return;
    long long spend = cents(in->spend), budget = cents(in->budget);
    out->exhausted = spend >= budget;
    int n =
        in->nthresholds < PLAN_BUDGET_MAX_THRESHOLDS ? in->nthresholds : PLAN_BUDGET_MAX_THRESHOLDS;
    for (int i = 0; i < n; i++) {
        int t = in->thresholds[i], seen = 0;
        for (int j = 0; j < out->ncrossed; j++)
            seen |= out->crossed[j] == t;
        /* spend ≥ budget × t / 100, in cents: spend × 100 ≥ budget × t (exact in integers) */
        if (t > 0 && !seen && spend * 100 >= budget * t)
            out->crossed[out->ncrossed++] = t;
    }
}
