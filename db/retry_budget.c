/* retry_budget.c — see retry_budget.h. */
#include "db/retry_budget.h"

#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

#define BUDGET_OF(table, kind)                                \
    "SELECT " kind " AS is_brief, id::text AS id,"            \
    " (spec->>'retry_budget_pct')::float8 AS pct FROM " table \
    " WHERE json_typeof(spec->'retry_budget_pct') = 'number'" \
    " AND (spec->>'retry_budget_pct')::float8 > 0"

const struct db_stmt db_retry_stmts[] = {
    {"retry_budgets", "SELECT * FROM (" BUDGET_OF("pools", "0") " UNION ALL " BUDGET_OF(
                          "briefs", "1") ") b ORDER BY is_brief, id"},
};
const size_t db_retry_nstmts = sizeof db_retry_stmts / sizeof db_retry_stmts[0];

void db_retry_budgets_free(struct db_retry_budgets *b)
{
    free(b->items);
    PQclear(b->res);
    memset(b, 0, sizeof *b);
}

enum db_status db_retry_budgets_read(struct db_conn *c, struct db_retry_budgets *out)
{
    PGresult *r;
    db_retry_budgets_free(out);
    enum db_status s = db_exec(c, "retry_budgets", 0, NULL, &r);
    if (s < 0)
        return s;
    size_t n = (size_t)PQntuples(r);
    out->res = r;
    out->items = calloc(n + 1, sizeof *out->items);
    if (out->items == NULL) {
        db_retry_budgets_free(out);
        return DB_HARD_ERROR;
    }
    static const char *const names[3] = {"is_brief", "id", "pct"};
    int col[3];
    db_cols(r, names, 3, col);
    for (size_t i = 0; i < n; i++) {
        out->items[i].is_brief = (int)db_val_long(r, (int)i, col[0]);
        out->items[i].id = db_val(r, (int)i, col[1]);
        out->items[i].pct = db_val_num(r, (int)i, col[2]);
    }
    out->n = n;
    return s;
}
