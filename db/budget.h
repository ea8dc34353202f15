/* budget.h — what the budget pass (service/budget.c) reads and writes: the projects with
 * their budgets, each project's spend this month (project_spend), and the thresholds
 * crossed (budget_alerts) with their budget.threshold events (migrations/0022). The
 * spend itself is the cost report's (db/costs.h), priced by planner/costs.h. */
#ifndef GPUFLEET_DB_BUDGET_H
#define GPUFLEET_DB_BUDGET_H

#include <stddef.h>

#include "db/db.h"

#define DB_BUDGET_MAX_THRESHOLDS 10 /* projects.budget_thresholds: 1 to 10 */

/* A project as the budget pass reads it. */
struct db_budget_project {
    const char *id, *name;
    int has_budget;
    double budget; /* budget_monthly */
    int thresholds[DB_BUDGET_MAX_THRESHOLDS];
    int nthresholds;
    const char *on_exhausted; /* notify, refuse_new or stop_idle */
};
/* Every project, ordered by id (the order the pass locks their rows in). The strings
 * borrow from the result the struct owns (res: opaque outside db/); start it zeroed;
 * db_budget_projects frees what it held first; db_budget_projects_free empties it. */
struct db_budget_projects {
    size_t n;
    struct db_budget_project *p;
    void *res;
};
enum db_status db_budget_projects(struct db_conn *c, struct db_budget_projects *out);
void db_budget_projects_free(struct db_budget_projects *out);

/* A project's figures this month, as the pass computed them. */
struct db_budget_spend {
    const char *project_id;
    const char *month; /* its first day, YYYY-MM-01 (UTC) */
    double spend, burn_per_hour, forecast;
    int exhausted;
};
/* Makes s the project's row of project_spend (one per project: a new month replaces the
 * last). */
enum db_status db_budget_spend_put(struct db_conn *c, const struct db_budget_spend *s);

/* Records that s's project crossed threshold_pct (of budget) in s->month, with its
 * budget.threshold event (project, threshold_pct, spend, budget, month, forecast), in one
 * statement. The row is inserted ON CONFLICT DO NOTHING and the event written only when
 * this insert took: whichever replica comes first records it, once. *emitted: 1 when
 * this call wrote the event, 0 when it was recorded before. */
enum db_status db_budget_alert(struct db_conn *c, const struct db_budget_spend *s,
                               int threshold_pct, double budget, int *emitted);

#endif
