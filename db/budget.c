/* budget.c — see budget.h. Money travels as decimal text with its column's scale (cents,
 * or 4 decimals for the burn rate), so that what is stored is what was computed. */
#include "db/budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"

const struct db_stmt db_budget_stmts[] = {
    {"budget_projects", "SELECT id::text AS id, name, budget_monthly::text AS budget,"
                        " array_to_string(budget_thresholds, ',') AS thresholds, on_exhausted"
                        " FROM projects ORDER BY id"},
    {"budget_spend_put",
     "INSERT INTO project_spend (project_id, month, spend, burn_per_hour, forecast, exhausted,"
     " computed_at) VALUES ($1::uuid, $2::date, $3::numeric, $4::numeric, $5::numeric,"
     " $6::boolean, now())"
     " ON CONFLICT (project_id) DO UPDATE SET month = excluded.month, spend = excluded.spend,"
     "  burn_per_hour = excluded.burn_per_hour, forecast = excluded.forecast,"
     "  exhausted = excluded.exhausted, computed_at = excluded.computed_at"},
    /* The event only when this insert took (ON CONFLICT DO NOTHING returns no row). */
    {"budget_alert",
     "WITH a AS (INSERT INTO budget_alerts (project_id, month, threshold_pct, spend, budget)"
     "  VALUES ($1::uuid, $2::date, $3::int, $4::numeric, $5::numeric)"
     "  ON CONFLICT (project_id, month, threshold_pct) DO NOTHING RETURNING project_id)"
     " INSERT INTO events (type, project_id, data)"
     " SELECT 'budget.threshold', a.project_id, jsonb_build_object("
     "  'project', jsonb_build_object('id', p.id, 'name', p.name),"
     "  'threshold_pct', $3::int, 'spend', $4::numeric, 'budget', $5::numeric,"
     "  'month', $2::date::text, 'forecast', $6::numeric)"
     " FROM a JOIN projects p ON p.id = a.project_id RETURNING id"},
};
const size_t db_budget_nstmts = sizeof db_budget_stmts / sizeof db_budget_stmts[0];

void db_budget_projects_free(struct db_budget_projects *out)
{
    free(out->p);
    PQclear(out->res);
    memset(out, 0, sizeof *out);
}

/* "50,80,100" into p's thresholds (at most DB_BUDGET_MAX_THRESHOLDS). */
static void thresholds(const char *text, struct db_budget_project *p)
{
    p->nthresholds = 0;
    for (const char *s = text; s != NULL && *s && p->nthresholds < DB_BUDGET_MAX_THRESHOLDS;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        p->thresholds[p->nthresholds++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
}

enum db_status db_budget_projects(struct db_conn *c, struct db_budget_projects *out)
{
    PGresult *r;
    db_budget_projects_free(out);
    enum db_status s = db_exec(c, "budget_projects", 0, NULL, &r);
    if (s < 0)
        return s;
    size_t n = (size_t)PQntuples(r);
    out->p = calloc(n + 1, sizeof *out->p);
    if (out->p == NULL) {
        PQclear(r);
        return DB_HARD_ERROR;
    }
    out->res = r;
    enum { C_ID, C_NAME, C_BUDGET, C_THRESHOLDS, C_ON, C_N };
    static const char *const names[C_N] = {"id", "name", "budget", "thresholds", "on_exhausted"};
    int col[C_N];
    db_cols(r, names, C_N, col);
    for (size_t i = 0; i < n; i++) {
        struct db_budget_project *p = &out->p[i];
        int row = (int)i;
        p->id = db_val(r, row, col[C_ID]);
        p->name = db_val(r, row, col[C_NAME]);
        p->has_budget = !db_val_isnull(r, row, col[C_BUDGET]);
        p->budget = db_val_num(r, row, col[C_BUDGET]);
        thresholds(db_val(r, row, col[C_THRESHOLDS]), p);
        p->on_exhausted = db_val(r, row, col[C_ON]);
    }
    out->n = n;
    return s;
}

enum db_status db_budget_spend_put(struct db_conn *c, const struct db_budget_spend *s)
{
    char spend[48], burn[48], forecast[48];
    snprintf(spend, sizeof spend, "%.2f", s->spend);
    snprintf(burn, sizeof burn, "%.4f", s->burn_per_hour);
    snprintf(forecast, sizeof forecast, "%.2f", s->forecast);
    const char *p[6] = {s->project_id, s->month, spend,
                        burn,          forecast, s->exhausted ? "true" : "false"};
    return db_exec_noresult(c, "budget_spend_put", 6, p);
}

enum db_status db_budget_alert(struct db_conn *c, const struct db_budget_spend *s,
                               int threshold_pct, double budget, int *emitted)
{
    char t[16], spend[48], b[48], forecast[48];
    snprintf(t, sizeof t, "%d", threshold_pct);
    snprintf(spend, sizeof spend, "%.2f", s->spend);
    snprintf(b, sizeof b, "%.2f", budget);
    snprintf(forecast, sizeof forecast, "%.2f", s->forecast);
    const char *p[6] = {s->project_id, s->month, t, spend, b, forecast};
    long n = 0;
    enum db_status st = db_exec_count(c, "budget_alert", 6, p, &n);
    *emitted = st >= 0 && n > 0;
    return st;
}
