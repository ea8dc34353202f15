/* retry_budget.h — the retry budgets the recommendations check (issue 27, item 2;
 * planner/recommend_retry.h): every pool and brief whose document sets retry_budget_pct,
 * extracted in SQL into typed rows (no caller parses JSON to decide). */
#ifndef GPUFLEET_DB_RETRY_BUDGET_H
#define GPUFLEET_DB_RETRY_BUDGET_H

#include <stddef.h>

#include "db/db.h"

struct db_retry_budget {
    int is_brief;   /* 0: a pool, 1: a brief */
    const char *id; /* borrowed from the result */
    double pct;     /* 0 < pct ≤ 100 (the API refuses others) */
};

/* Start it zeroed; free it with db_retry_budgets_free (leaves it zeroed). */
struct db_retry_budgets {
    size_t n;
    struct db_retry_budget *items; /* pools first, then briefs, each by id */
    void *res;
};
enum db_status db_retry_budgets_read(struct db_conn *c, struct db_retry_budgets *out);
void db_retry_budgets_free(struct db_retry_budgets *b);

#endif
