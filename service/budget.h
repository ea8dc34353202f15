/* budget.h — the budget pass (docs/projects.md, Budgets). One thread, started by `serve`
 * and `worker` unless GPUFLEET_BUDGET_INTERVAL is 0. Every interval it computes, for
 * every project (with a budget or without), in one transaction:
 *
 *   - the month-to-date spend: the cost report's own figures (db/costs.h read over every
 *     host, planner/costs.h priced and grouped by project) from the first of the month,
 *     UTC, until now;
 *   - the burn rate: the spend of the last 24 h (of the month so far when shorter) per
 *     hour, and the forecast: spend + burn rate × the hours left (planner/budget.h);
 *
 * and writes them to project_spend (exhausted: spend ≥ budget; the hosts' refuse_new and
 * the idle policy's stop_idle read it). Each threshold crossed is recorded in
 * budget_alerts ON CONFLICT DO NOTHING, and its budget.threshold event written only when
 * that insert took: every replica runs the pass, and each threshold's event is written
 * once a month, by whichever comes first. */
#ifndef GPUFLEET_SERVICE_BUDGET_H
#define GPUFLEET_SERVICE_BUDGET_H

#define BUDGET_PRINCIPAL "system:budget"

/* interval_s > 0. Returns 0, or -1 when the thread cannot start. */
int svc_budget_start(int interval_s);
void svc_budget_stop(void);

/* One pass now, in the caller's thread: the budget.threshold events it wrote, or -1 on
 * a database error. */
int svc_budget_run_once(void);

#endif
