/* recommend_retry.c — see recommend_retry.h. */
#include "service/recommend_retry.h"

#include <stdlib.h>
#include <string.h>

#include "planner/costs.h"
#include "planner/recommend_retry.h"

/* The day window's cost input from the recommendations' read: every host with its held
 * seconds of [at − 24 h, at), and the usage rows of that window (parts 0 and 1), sorted by
 * host id as the cost report's rows. The same reports and held time db_cost_read reads
 * over [at − 24 h, at), in more rows (split by part and lookback), which the groups sum. */
static int day_input(const struct db_rec_input *rin, struct db_cost_input *out)
{
    out->hosts = calloc(rin->nheld + 1, sizeof *out->hosts);
    out->rows = calloc(rin->nusage + 1, sizeof *out->rows);
    if (out->hosts == NULL || out->rows == NULL)
        return -1;
    for (size_t i = 0; i < rin->nheld; i++) {
        out->hosts[i] = rin->held[i];
        out->hosts[i].held_seconds = rin->held_seconds[i][DB_REC_DAY];
    }
    out->nhosts = rin->nheld;
    for (size_t i = 0; i < rin->nusage; i++) {
        const struct db_rec_usage *u = &rin->usage[i];
        if (u->part <= 1 && u->row.host != DB_NO_HOST)
            out->rows[out->nrows++] = u->row;
    }
    return 0;
}

enum db_status svc_rec_retry_budgets(struct db_conn *c, struct svc_rec_retry *r)
{
    svc_rec_retry_free(r);
    enum db_status s = db_retry_budgets_read(c, &r->budgets);
    return s < 0 ? s : DB_ONE_RESULT;
}

int svc_rec_retry_take(const struct db_rec_input *in, struct svc_rec_retry *r)
{
    return r->budgets.n == 0 ? 0 : day_input(in, &r->in);
}

static int same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* The host of group g (a pool or a brief) with the most hardware failures, from the rows
 * (sorted by host). */
static void hardware_host(const struct db_cost_input *in, struct plan_retry_group *g)
{
    double most = -1;
    for (size_t i = 0; i < in->nrows;) {
        size_t h = in->rows[i].host;
        double units = 0, bad = 0;
        int mine = 0;
        for (; i < in->nrows && in->rows[i].host == h; i++) {
            const struct usage_row *w = &in->rows[i];
            if (g->is_brief ? same(w->brief_id, g->id) : same(in->hosts[h].pool_id, g->id)) {
                mine = 1;
                units += w->failures.units[USAGE_FAIL_HARDWARE];
                bad += w->failed + w->retried;
            }
        }
        if (mine && bad > most) { /* hosts by id: ties keep the first */
            most = bad;
            g->pool_id = in->hosts[h].pool_id;
        }
        g->hw_units += units;
        if (units > g->hw_host_units) {
            g->hw_host_units = units;
            g->hw_host_id = in->hosts[h].id;
            g->hw_host_pool_id = in->hosts[h].pool_id;
        }
    }
}

/* The budget of the group with this id among b's (pools first, then briefs), or 0. */
static double budget_of(const struct db_retry_budgets *b, int is_brief, const char *id)
{
    for (size_t i = 0; id != NULL && i < b->n; i++)
        if (b->items[i].is_brief == is_brief && strcmp(b->items[i].id, id) == 0)
            return b->items[i].pct;
    return 0;
}

/* The groups of one grouping (by pool or by brief) that have a budget into out[*n…). */
static int collect(const struct svc_rec_retry *r, enum plan_group_by by,
                   struct plan_retry_group *out, size_t cap, size_t *n)
{
    const struct db_cost_input *in = &r->in;
    struct plan_cost_group *groups = NULL;
    size_t ng = 0;
    if (plan_costs_group(in->hosts, in->nhosts, in->rows, in->nrows, by, &groups, &ng) != 0)
        return -1;
    int is_brief = by == PLAN_BY_BRIEF;
    for (size_t i = 0; i < ng && *n < cap; i++) {
        double pct = budget_of(&r->budgets, is_brief, groups[i].id);
        if (!(pct > 0))
            continue;
        struct plan_retry_group *g = &out[(*n)++];
        memset(g, 0, sizeof *g);
        g->is_brief = is_brief;
        g->id = groups[i].id;
        g->budget_pct = pct;
        plan_cost_finish(&groups[i].acc, &g->cost);
        plan_cost_failures(&groups[i].acc, &g->cost, &g->f);
        hardware_host(in, g);
    }
    free(groups);
    return 0;
}

int svc_rec_retry_apply(const struct svc_rec_retry *r, json_t *items)
{
    if (r->budgets.n == 0 || r->in.nrows == 0)
        return 0;
    struct plan_retry_group *g = calloc(r->budgets.n + 1, sizeof *g);
    size_t n = 0;
    int rc = -1;
    if (g != NULL && collect(r, PLAN_BY_POOL, g, r->budgets.n, &n) == 0 &&
        collect(r, PLAN_BY_BRIEF, g, r->budgets.n, &n) == 0)
        rc = plan_rec_retry(g, n, items);
    free(g);
    return rc;
}

void svc_rec_retry_free(struct svc_rec_retry *r)
{
    db_retry_budgets_free(&r->budgets);
    db_cost_input_free(&r->in);
}
