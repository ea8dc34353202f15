/* budget.h — a project's month against its budget (docs/projects.md, Budgets). Pure: no
 * I/O. The budget pass (service/budget.c) prices the project's hosts with the cost
 * report's own arithmetic (planner/costs.h) over two windows and asks this file what
 * follows:
 *
 *   month          [the first of the month 00:00 UTC, now): its spend is month to date
 *   burn window    [max(month start, now − 24 h), now): the current burn rate is its
 *                  spend ÷ its hours (0 when it is empty: the first instant of a month)
 *   forecast       spend + burn rate × the hours left until the next month starts
 *   thresholds     threshold t (a percentage) is crossed when spend ≥ budget × t ÷ 100,
 *                  compared exactly in whole cents (50 % of $0.03, 1.5 cents, is
 *                  crossed at $0.02); exhausted: spend ≥ budget (100 %). A project
 *                  without a budget crosses nothing and is never exhausted; a budget of 0
 *                  is exhausted from the start.
 *
 * Figures are rounded as the cost report rounds: spend and forecast to the cent, the burn
 * rate to 4 decimals (project_spend's columns). */
#ifndef GPUFLEET_PLAN_BUDGET_H
#define GPUFLEET_PLAN_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#define PLAN_BUDGET_MAX_THRESHOLDS 10 /* projects.budget_thresholds holds 1 to 10 */
#define PLAN_BURN_WINDOW_US        (24 * 3600 * 1000000LL)

/* The month now_us (µs since the epoch) lies in, UTC: its first instant and the first
 * instant of the next one; month receives its first day, "YYYY-MM-01" (11 bytes). */
void plan_budget_month(int64_t now_us, int64_t *start_us, int64_t *end_us, char month[11]);
/* The burn window's start: max(month start, now − 24 h). */
int64_t plan_burn_start(int64_t now_us);

struct plan_budget_in {
    double spend;      /* month to date, dollars */
    double burn_spend; /* spend of the burn window, dollars */
    double burn_hours; /* the burn window's length in hours */
    double hours_left; /* until the next month starts */
    int has_budget;
    double budget;                              /* monthly, dollars */
    int thresholds[PLAN_BUDGET_MAX_THRESHOLDS]; /* percentages, as the project lists them */
    int nthresholds;
};

struct plan_budget_out {
    double spend;         /* to the cent */
    double burn_per_hour; /* 4 decimals */
    double forecast;      /* to the cent */
    int exhausted;
    /* The thresholds crossed, in the order given (each once: a repeated value counts once). */
    int crossed[PLAN_BUDGET_MAX_THRESHOLDS];
    int ncrossed;
};

void plan_budget(const struct plan_budget_in *in, struct plan_budget_out *out);

#endif
