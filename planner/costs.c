/* costs.c — see costs.h. */
#include "planner/costs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double plan_held_seconds(const struct plan_state_change *changes, size_t n, int64_t from_us,
                         int64_t to_us, int64_t now_us)
{
    if (to_us > now_us)
        to_us = now_us;
    int64_t held_us = 0;
    for (size_t i = 0; i < n; i++) {
        if (!changes[i].held)
            continue;
        int64_t start = changes[i].at_us;
        int64_t end = i + 1 < n ? changes[i + 1].at_us : to_us;
        if (start < from_us)
            start = from_us;
        if (end > to_us)
            end = to_us;
        if (end > start)
            held_us += end - start;
    }
    return (double)held_us / 1e6;
}

double plan_round_to(double x, int places)
{
    double scale = pow(10, places);
    double v = fabs(x) * scale;
    /* 2.675 is 2.67499999… in binary; a relative nudge keeps halves rounding up. */
    double r = floor(v + 0.5 + v * 1e-12 + 1e-9);
    return copysign(r / scale, x);
}

double plan_round_cents(double dollars)
{
    return plan_round_to(dollars, 2);
}

double plan_held_share(double held_seconds, double slice_seconds, double host_seconds)
{
    if (host_seconds <= 0)
        return held_seconds;
    return held_seconds * slice_seconds / host_seconds;
}

static void add_phases(struct usage_phases *to, const struct usage_phases *from)
{
    for (int p = 0; p < USAGE_PHASE_COUNT; p++)
        to->seconds[p] += from->seconds[p];
    to->reports += from->reports;
    to->busy_seconds += from->busy_seconds;
}

static void add_failures(struct usage_failures *to, const struct usage_failures *from)
{
    for (int k = 0; k < USAGE_FAIL_COUNT; k++)
        to->units[k] += from->units[k];
    to->reports += from->reports;
    to->of_units += from->of_units;
}

void plan_cost_add(struct plan_cost_acc *acc, const struct usage_prices *p,
                   const struct plan_usage *u)
{
    double held_h = u->held_seconds / 3600.0;
    double compute = p->per_hour * held_h;
    double storage = 0;
    if (u->storage_seconds > 0) {
        double avg_gb = u->storage_gb_seconds / u->storage_seconds;
        storage = avg_gb * p->storage_per_gb_month * held_h / PLAN_HOURS_PER_MONTH;
    }
    double data = u->bytes_moved / PLAN_BYTES_PER_GB * p->egress_per_gb;
    acc->compute += compute;
    acc->storage += storage;
    acc->data_movement += data;
    acc->overhead += (compute + storage + data) * p->overhead_pct / 100.0;
    acc->held_seconds += u->held_seconds;
    acc->busy_seconds += u->busy_seconds;
    acc->reports += u->reports;
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        acc->completed[k] += u->completed[k];
        acc->failed[k] += u->failed[k];
        acc->retried[k] += u->retried[k];
        acc->has_unit[k] |= u->has_unit[k];
    }
    add_phases(&acc->phases, &u->phases);
    add_failures(&acc->failures, &u->failures);
}

void plan_cost_finish(const struct plan_cost_acc *acc, struct plan_cost *out)
{
    memset(out, 0, sizeof *out);
    out->compute = plan_round_cents(acc->compute);
    out->storage = plan_round_cents(acc->storage);
    out->data_movement = plan_round_cents(acc->data_movement);
    out->overhead = plan_round_cents(acc->overhead);
    out->total = plan_round_cents(out->compute + out->storage + out->data_movement + out->overhead);
    double good = 0, bad = 0;
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        out->has_unit[k] = acc->has_unit[k];
        out->completed[k] = acc->completed[k];
        good += acc->completed[k];
        bad += acc->failed[k] + acc->retried[k];
        if (acc->has_unit[k] && acc->completed[k] > 0) {
            out->has_cost_per_unit[k] = 1;
            out->cost_per_unit[k] = out->total / acc->completed[k];
        }
    }
    if (good + bad > 0) {
        double share = bad / (good + bad);
        out->has_share = 1;
        out->failed_retried_share = plan_round_to(share, 4);
        out->failed_retried_amount = plan_round_cents(out->total * share);
    }
    out->held_hours = acc->held_seconds / 3600.0;
    out->busy_hours = acc->busy_seconds / 3600.0;
    out->no_usage_data = acc->reports == 0;
    if (!out->no_usage_data) {
        out->has_idle_hours = 1;
        out->idle_hours = out->held_hours > out->busy_hours ? out->held_hours - out->busy_hours : 0;
        if (acc->held_seconds > 0) {
            out->has_utilization = 1;
            out->utilization = acc->busy_seconds / acc->held_seconds;
        }
    }
}

void plan_cost_phases(const struct plan_cost_acc *acc, const struct plan_cost *c,
                      struct plan_cost_phases *out)
{
    memset(out, 0, sizeof *out);
    const struct usage_phases *ph = &acc->phases;
    out->reports = ph->reports;
    out->of_reports = acc->reports;
    out->busy_seconds = ph->busy_seconds;
    out->of_busy_seconds = acc->busy_seconds;
    out->has_seconds = ph->reports > 0;
    for (int p = 0; p < USAGE_PHASE_COUNT; p++) {
        out->seconds[p] = ph->seconds[p];
        out->total_seconds += ph->seconds[p];
    }
    out->has_share = out->has_seconds && out->total_seconds > 0;
    double frac[USAGE_PHASE_COUNT] = {0};
    for (int p = 0; out->has_share && p < USAGE_PHASE_COUNT; p++) {
        frac[p] = ph->seconds[p] / out->total_seconds;
        out->share[p] = plan_round_to(frac[p], 4);
    }
    double covered = 0;
    if (acc->busy_seconds > 0) {
        out->has_coverage = 1;
        covered = ph->busy_seconds / acc->busy_seconds;
        covered = covered > 1 ? 1 : covered;
        out->covered_busy_share = plan_round_to(covered, 4);
    }
    out->has_split = out->has_share && out->has_coverage;
    if (!out->has_split)
        return;
    for (int p = 0; p < USAGE_PHASE_COUNT; p++)
        out->cost[p] = plan_round_cents(c->total * covered * frac[p]);
    out->not_broken_down = plan_round_cents(c->total * (1 - covered));
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        if (!c->has_cost_per_unit[k])
            continue;
        for (int p = 0; p < USAGE_PHASE_COUNT; p++)
            out->cost_per_unit[k][p] = c->cost_per_unit[k] * covered * frac[p];
        out->per_unit_not_broken_down[k] = c->cost_per_unit[k] * (1 - covered);
    }
}

void plan_cost_failures(const struct plan_cost_acc *acc, const struct plan_cost *c,
                        struct plan_cost_failures *out)
{
    memset(out, 0, sizeof *out);
    const struct usage_failures *f = &acc->failures;
    double all = 0;
    out->reports = f->reports;
    out->of_reports = acc->reports;
    out->units = f->of_units;
    out->dominant = -1;
    for (int k = 0; k < USAGE_UNIT_COUNT; k++) {
        out->of_units += acc->failed[k] + acc->retried[k];
        all += acc->completed[k] + acc->failed[k] + acc->retried[k];
    }
    for (int k = 0; k < USAGE_FAIL_COUNT; k++) {
        out->counts[k] = f->units[k];
        out->classified += f->units[k];
        if (f->units[k] > 0 && (out->dominant < 0 || f->units[k] > f->units[out->dominant]))
            out->dominant = k;
    }
    out->has_share = out->classified > 0;
    for (int k = 0; out->has_share && k < USAGE_FAIL_COUNT; k++)
        out->share[k] = plan_round_to(f->units[k] / out->classified, 4);
    out->has_split = out->of_units > 0 && all > 0;
    if (!out->has_split)
        return;
    /* the classes never claim more than the failed and retried units (the API checks
     * each report; this guards sums that drift by rounding) */
    double classified = out->classified < out->of_units ? out->classified : out->of_units;
    double scale = out->classified > 0 ? classified / out->classified : 0;
    out->covered_share = plan_round_to(classified / out->of_units, 4);
    for (int k = 0; k < USAGE_FAIL_COUNT; k++)
        out->cost[k] = plan_round_cents(c->total * f->units[k] * scale / all);
    out->not_broken_down = plan_round_cents(c->total * (out->of_units - classified) / all);
}

int plan_cost_main_unit(const struct plan_cost *c)
{
    int unit = -1;
    for (int k = 0; k < USAGE_UNIT_COUNT; k++)
        if (c->has_unit[k] && (unit < 0 || c->completed[k] > c->completed[unit]))
            unit = k;
    return unit;
}

const char *const plan_group_by_names[] = {"host", "pool", "brief", "project", NULL};

static int same_id(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

struct groups {
    struct plan_cost_group *g;
    size_t n, cap;
};

/* The group with this id (appended when new; search from the end: ids repeat nearby). */
static struct plan_cost_acc *group_of(struct groups *gs, const char *id, const char *name,
                                      int search)
{
    if (search)
        for (size_t i = gs->n; i-- > 0;)
            if (same_id(gs->g[i].id, id))
                return &gs->g[i].acc;
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? gs->cap * 2 : 16;
        struct plan_cost_group *g = realloc(gs->g, cap * sizeof *g);
        if (g == NULL)
            return NULL;
        gs->g = g;
        gs->cap = cap;
    }
    struct plan_cost_group *g = &gs->g[gs->n++];
    memset(g, 0, sizeof *g);
    g->id = id;
    g->name = name;
    return &g->acc;
}

static void add_row(struct plan_usage *u, const struct usage_row *r)
{
    u->reports += r->reports;
    u->busy_seconds += r->busy_seconds;
    u->storage_gb_seconds += r->storage_gb_seconds;
    u->storage_seconds += r->storage_seconds;
    u->bytes_moved += r->bytes_moved;
    add_phases(&u->phases, &r->phases);
    add_failures(&u->failures, &r->failures);
    if (r->unit >= 0 && r->unit < USAGE_UNIT_COUNT) {
        u->completed[r->unit] += r->completed;
        u->failed[r->unit] += r->failed;
        u->retried[r->unit] += r->retried;
        u->has_unit[r->unit] = 1;
    }
}

int plan_costs_group(const struct usage_host *hosts, size_t nh, const struct usage_row *rows,
                     size_t nr, enum plan_group_by by, struct plan_cost_group **out,
                     size_t *ngroups)
{
    struct groups gs = {0};
    size_t ri = 0;
    for (size_t h = 0; h < nh; h++) {
        const struct usage_host *host = &hosts[h];
        while (ri < nr && rows[ri].host < h) /* rows of unknown hosts are skipped */
            ri++;
        size_t first = ri;
        double covered = 0;
        while (ri < nr && rows[ri].host == h)
            covered += rows[ri++].covered_seconds;
        size_t last = ri; /* rows [first, last) are this host's */
        if (host->held_seconds <= 0 && first == last)
            continue; /* neither held nor reporting in the window */
        struct plan_usage u;
        struct plan_cost_acc *acc;
        if (by != PLAN_BY_BRIEF || first == last) {
            memset(&u, 0, sizeof u);
            u.held_seconds = host->held_seconds;
            for (size_t i = first; i < last; i++)
                add_row(&u, &rows[i]);
            if (by == PLAN_BY_HOST)
                acc = group_of(&gs, host->id, host->name, 0);
            else if (by == PLAN_BY_POOL)
                acc = group_of(&gs, host->pool_id, host->pool_name, 1);
            else if (by == PLAN_BY_PROJECT)
                acc = group_of(&gs, host->project_id, host->project_name, 1);
            else
                acc = group_of(&gs, NULL, NULL, 1);
            if (acc == NULL)
                goto oom;
            plan_cost_add(acc, &host->prices, &u);
            continue;
        }
        for (size_t i = first; i < last;) {
            memset(&u, 0, sizeof u);
            double slice = 0;
            size_t j = i;
            for (; j < last && same_id(rows[j].brief_id, rows[i].brief_id); j++) {
                add_row(&u, &rows[j]);
                slice += rows[j].covered_seconds;
            }
            u.held_seconds = plan_held_share(host->held_seconds, slice, covered);
            acc = group_of(&gs, rows[i].brief_id, rows[i].brief_name, 1);
            if (acc == NULL)
                goto oom;
            plan_cost_add(acc, &host->prices, &u);
            i = j;
        }
    }
    *out = gs.g;
    *ngroups = gs.n;
    return 0;
oom:
    free(gs.g);
    *out = NULL;
    *ngroups = 0;
    return -1;
}
