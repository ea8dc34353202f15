/* placement.c — see placement.h. */
#include "planner/placement.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "planner/baseline.h"

const char *const plan_place_basis_names[] = {"measured", "estimated", "declared", NULL};

/* ---- validation ---- */

static int fail(struct plan_error *err, const char *field, const char *detail)
{
    snprintf(err->field, sizeof err->field, "%s", field);
    snprintf(err->detail, sizeof err->detail, "%s", detail);
    return -1;
}

static const char *const alt_kinds[] = {"api", "on_demand", "reserved", NULL};
/* Per kind: the fields it requires, and those only it may carry. */
static const char *const api_required[] = {"price_per_unit", "per_units", "unit", NULL};
static const char *const api_only[] = {"price_per_unit", "per_units",        "unit",
                                       "latency_ms_p95", "availability_pct", NULL};
static const char *const od_required[] = {"price_per_gpu_hour", "gpus", "cold_start_seconds", NULL};
static const char *const res_required[] = {"price_per_gpu_hour", "gpus", NULL};
static const char *const gpu_only[] = {"price_per_gpu_hour", "gpus", "gpu_model", NULL};

static int check_one(const json_t *a, size_t i, struct plan_error *err)
{
    char field[128], detail[256];
    int kind = util_lookup(alt_kinds, json_string_value(json_object_get(a, "kind")));
    const char *const *req = kind == 0 ? api_required : kind == 1 ? od_required : res_required;
    for (const char *const *f = req; *f; f++)
        if (json_object_get(a, *f) == NULL) {
            snprintf(field, sizeof field, "alternatives[%zu].%s", i, *f);
            snprintf(detail, sizeof detail, "a %s alternative needs %s", alt_kinds[kind], *f);
            return fail(err, field, detail);
        }
    const char *const *foreign[] = {
        kind == 0 ? gpu_only : api_only,
        kind == 1 ? NULL : (const char *const[]){"cold_start_seconds", NULL},
        kind == 2 ? NULL : (const char *const[]){"commitment_months", NULL}};
    for (size_t k = 0; k < 3; k++)
        for (const char *const *f = foreign[k]; f && *f; f++)
            if (json_object_get(a, *f) != NULL) {
                snprintf(field, sizeof field, "alternatives[%zu].%s", i, *f);
                snprintf(detail, sizeof detail, "%s does not apply to a %s alternative", *f,
                         alt_kinds[kind]);
                return fail(err, field, detail);
            }
    if (kind == 2 && json_object_get(a, "commitment_months") == NULL) {
        snprintf(field, sizeof field, "alternatives[%zu].commitment_months", i);
        return fail(err, field, "a reserved alternative needs commitment_months");
    }
    return 0;
}

int plan_place_check(const json_t *brief, struct plan_error *err)
{
    const json_t *alts = json_object_get(brief, "alternatives");
    size_t i, j;
    const json_t *a;
    json_array_foreach(alts, i, a)
    {
        if (check_one(a, i, err) != 0)
            return -1;
        const char *name = json_string_value(json_object_get(a, "name"));
        for (j = 0; j < i; j++)
            if (strcmp(name, json_string_value(json_object_get(json_array_get(alts, j), "name"))) ==
                0) {
                char field[128], detail[256];
                snprintf(field, sizeof field, "alternatives[%zu].name", i);
                snprintf(detail, sizeof detail, "alternatives[%zu] is named %s already", j, name);
                return fail(err, field, detail);
            }
    }
    return 0;
}

/* ---- measured ---- */

void plan_place_add_host(struct plan_cost_acc *acc, const struct usage_host *host,
                         const struct usage_row *rows, size_t first, size_t last,
                         const char *brief_id)
{
    double covered = 0, slice = 0;
    struct plan_usage u;
    memset(&u, 0, sizeof u);
    for (size_t i = first; i < last; i++) {
        const struct usage_row *r = &rows[i];
        covered += r->covered_seconds;
        if (r->brief_id == NULL || strcmp(r->brief_id, brief_id) != 0)
            continue;
        slice += r->covered_seconds;
        u.reports += r->reports;
        u.busy_seconds += r->busy_seconds;
        u.storage_gb_seconds += r->storage_gb_seconds;
        u.storage_seconds += r->storage_seconds;
        u.bytes_moved += r->bytes_moved;
        if (r->unit >= 0 && r->unit < USAGE_UNIT_COUNT) {
            u.completed[r->unit] += r->completed;
            u.failed[r->unit] += r->failed;
            u.retried[r->unit] += r->retried;
            u.has_unit[r->unit] = 1;
        }
    }
    if (u.reports == 0)
        return; /* the brief never ran on this host: nothing of it is attributed */
    u.held_seconds = plan_held_share(host->held_seconds, slice, covered);
    plan_cost_add(acc, &host->prices, &u);
}

/* ---- rows ---- */

static double demand(const struct plan_place_brief *b)
{
    return b->unit >= 0 && b->span_hours > 0 ? b->completed / b->span_hours : 0;
}

static void set_why(struct plan_place_row *r, int meets, const char *fmt, double a, double c)
{
    r->meets = meets;
    snprintf(r->why, sizeof r->why, fmt, a, c);
}

static int measured_row(const struct plan_place_brief *b, const struct plan_place_pool *p,
                        struct plan_place_row *r)
{
    struct plan_cost c;
    plan_cost_finish(&p->acc, &c);
    r->basis = PLACE_MEASURED;
    r->days = p->days;
    r->has_cost = b->unit >= 0 && c.has_cost_per_unit[b->unit];
    r->cost_per_unit = r->has_cost ? c.cost_per_unit[b->unit] : 0;
    r->per_hour = c.held_hours > 0 ? c.total / c.held_hours : 0;
    set_why(r, -1, "work reports carry no measure of the brief's targets per pool", 0, 0);
    r->evidence = json_pack(
        "{s:f,s:f,s:I,s:I,s:f,s:f,s:f}", "total", c.total, "completed",
        b->unit >= 0 ? c.completed[b->unit] : 0.0, "reports", (json_int_t)p->acc.reports, "days",
        (json_int_t)p->days, "held_hours", plan_round_to(c.held_hours, 4), "busy_hours",
        plan_round_to(c.busy_hours, 4), "idle_hours", plan_round_to(c.idle_hours, 4));
    if (r->evidence == NULL)
        return -1;
    json_object_set_new(r->evidence, "utilization",
                        c.has_utilization ? json_real(plan_round_to(c.utilization, 4))
                                          : json_null());
    json_object_set_new(r->evidence, "failed_retried_share",
                        c.has_share ? json_real(c.failed_retried_share) : json_null());
    return 0;
}

/* The nearest baselines of a GPU model: the median per-second figure of the newest (≤ 20)
 * of those that match most of gpu_count, model_revision and concurrency; *n how many. */
static int nearest(const struct plan_place_baseline *bl, size_t nbl, const char *gpu_model,
                   long gpu_count, const char *revision, long concurrency, double *per_second,
                   long *bl_gpus, long *n, int *score_out)
{
    double vals[PLAN_BASELINE_MAX_MATCHED];
    int best = -1;
    size_t k = 0;
    for (size_t i = 0; i < nbl; i++) {
        if (bl[i].gpu_model == NULL || strcmp(bl[i].gpu_model, gpu_model) != 0)
            continue;
        int s = (bl[i].gpu_count == gpu_count) + (bl[i].concurrency == concurrency) +
                (revision && bl[i].model_revision && strcmp(revision, bl[i].model_revision) == 0);
        if (s < best || (s == best && k == PLAN_BASELINE_MAX_MATCHED))
            continue;
        if (s > best) {
            best = s;
            k = 0;
            *bl_gpus = bl[i].gpu_count > 0 ? bl[i].gpu_count : 1;
        }
        if (bl[i].gpu_count == *bl_gpus || (bl[i].gpu_count <= 0 && *bl_gpus == 1))
            vals[k++] = bl[i].per_second;
    }
    *n = (long)k;
    *score_out = best;
    if (k == 0)
        return 0;
    *per_second = plan_baseline_median(vals, k);
    return 1;
}

struct place_ctx {
    const struct plan_place_brief *b;
    const struct plan_place_pool *pools;
    size_t np;
    const struct plan_place_baseline *bl;
    size_t nbl;
    const char *revision;
    long concurrency;
};

static int estimated_row(const struct place_ctx *x, const struct plan_place_pool *p,
                         struct plan_place_row *r)
{
    const struct plan_place_brief *b = x->b;
    double ps = 0, d = demand(b);
    long bl_gpus = 1, n = 0;
    int score = -1;
    r->basis = PLACE_ESTIMATED;
    set_why(r, -1, "not measured on this pool", 0, 0);
    r->evidence = json_object();
    if (r->evidence == NULL)
        return -1;
    json_object_set_new(r->evidence, "gpus_needed", json_integer(p->gpus_needed));
    if (b->unit < 0 ||
        !nearest(x->bl, x->nbl, p->gpu_model, p->gpu_count, x->revision, x->concurrency, &ps,
                 &bl_gpus, &n, &score) ||
        ps <= 0) {
        json_object_set_new(r->evidence, "throughput",
                            json_string(b->unit < 0 ? "unknown: the brief has no work report"
                                                    : "unknown: no baseline on this GPU model"));
        return 0;
    }
    double t = ps * 3600 * (double)p->gpu_count / (double)bl_gpus;
    long per_replica = p->gpu_count > 0 ? (p->gpus_needed + p->gpu_count - 1) / p->gpu_count : 1;
    long hosts = per_replica < 1 ? 1 : per_replica;
    if (d > 0 && (long)ceil(d / t) > hosts)
        hosts = (long)ceil(d / t);
    double hourly = (double)hosts * p->prices.per_hour * (1 + p->prices.overhead_pct / 100);
    r->has_cost = 1;
    r->per_hour = hourly;
    r->cost_per_unit =
        d > 0 ? hourly / d : p->prices.per_hour * (1 + p->prices.overhead_pct / 100) / t;
    json_object_set_new(r->evidence, "throughput_per_host_hour", json_real(t));
    json_object_set_new(r->evidence, "baselines", json_integer(n));
    json_object_set_new(r->evidence, "baseline_gpu_count", json_integer(bl_gpus));
    json_object_set_new(r->evidence, "conditions_matched", json_integer(score));
    json_object_set_new(r->evidence, "hosts", json_integer(hosts));
    json_object_set_new(r->evidence, "demand_per_hour", d > 0 ? json_real(d) : json_null());
    json_object_set_new(r->evidence, "note",
                        json_string(d > 0 ? "hosts held every hour at the measured demand; "
                                            "throughput scaled linearly with GPUs"
                                          : "no measured demand: assumes full use"));
    return 0;
}

/* Per GPU-hour throughput for a GPU model (NULL: the current pool's): the measured pools
 * of that model (completed ÷ busy GPU-hours), else the nearest baselines. *src says which. */
static double gpu_hour_throughput(const struct place_ctx *x, const char *gpu_model,
                                  const char **src)
{
    const struct plan_place_brief *b = x->b;
    double done = 0, gpu_hours = 0;
    const struct plan_place_pool *cur = NULL;
    for (size_t i = 0; i < x->np; i++) {
        const struct plan_place_pool *p = &x->pools[i];
        if (b->unit < 0 || p->acc.reports == 0)
            continue;
        if (cur == NULL || p->acc.completed[b->unit] > cur->acc.completed[b->unit])
            cur = p;
    }
    const char *model = gpu_model ? gpu_model : cur ? cur->gpu_model : NULL;
    for (size_t i = 0; model && b->unit >= 0 && i < x->np; i++) {
        const struct plan_place_pool *p = &x->pools[i];
        if (p->acc.reports > 0 && strcmp(p->gpu_model, model) == 0) {
            done += p->acc.completed[b->unit];
            gpu_hours += p->acc.busy_seconds / 3600 * (double)p->gpu_count;
        }
    }
    if (gpu_hours > 0 && done > 0) {
        *src = "measured";
        return done / gpu_hours;
    }
    double ps = 0;
    long bl_gpus = 1, n = 0;
    int score;
    if (model && b->unit >= 0 &&
        nearest(x->bl, x->nbl, model, 1, x->revision, x->concurrency, &ps, &bl_gpus, &n, &score) &&
        ps > 0) {
        *src = "baseline";
        return ps * 3600 / (double)bl_gpus;
    }
    *src = "unknown";
    return 0;
}

static int gpu_alt_row(const struct place_ctx *x, const json_t *a, int reserved,
                       struct plan_place_row *r)
{
    const struct plan_place_brief *b = x->b;
    double price = json_number_value(json_object_get(a, "price_per_gpu_hour"));
    double gpus = (double)json_integer_value(json_object_get(a, "gpus"));
    const char *src;
    double g = gpu_hour_throughput(x, json_string_value(json_object_get(a, "gpu_model")), &src);
    double d = demand(b);
    r->basis = PLACE_ESTIMATED;
    set_why(r, -1, "not measured on this capacity", 0, 0);
    r->evidence = json_pack("{s:s,s:f,s:f}", "throughput_source", src, "price_per_gpu_hour", price,
                            "gpus", gpus);
    if (r->evidence == NULL)
        return -1;
    if (g <= 0 || d <= 0) {
        json_object_set_new(r->evidence, "note",
                            json_string("no throughput or demand measured: no estimate"));
        return 0;
    }
    json_object_set_new(r->evidence, "throughput_per_gpu_hour", json_real(g));
    json_object_set_new(r->evidence, "demand_per_hour", json_real(d));
    r->has_cost = 1;
    if (reserved) {
        double cap = g * gpus;
        r->per_hour = price * gpus;
        r->cost_per_unit = r->per_hour / (d < cap ? d : cap);
        json_object_set_new(r->evidence, "commitment_months",
                            json_copy(json_object_get(a, "commitment_months")));
        json_object_set_new(r->evidence, "note",
                            json_string("every hour of the commitment is paid, used or not"));
        if (cap < d)
            set_why(r, 0, "capacity %.0f units/h is below the demand of %.0f units/h", cap, d);
        return 0;
    }
    double cold = json_number_value(json_object_get(a, "cold_start_seconds"));
    r->per_hour = price * d / g + cold / 3600 * price * gpus / 24;
    r->cost_per_unit = r->per_hour / d;
    json_object_set_new(r->evidence, "cold_start_seconds", json_real(cold));
    json_object_set_new(r->evidence, "note",
                        json_string("GPU-hours the demand needs, plus one cold start a day"));
    return 0;
}

static int api_row(const struct plan_place_brief *b, const json_t *a, struct plan_place_row *r)
{
    const char *unit = json_string_value(json_object_get(a, "unit"));
    double price = json_number_value(json_object_get(a, "price_per_unit"));
    double per = json_number_value(json_object_get(a, "per_units"));
    const json_t *lat = json_object_get(a, "latency_ms_p95");
    const json_t *av = json_object_get(a, "availability_pct");
    r->basis = PLACE_DECLARED;
    r->evidence =
        json_pack("{s:f,s:f,s:s}", "price_per_unit", price, "per_units", per, "unit", unit);
    if (r->evidence == NULL)
        return -1;
    json_object_set_new(r->evidence, "note", json_string("priced per unit: no idle cost"));
    if (json_object_get(a, "notes"))
        json_object_set(r->evidence, "notes", json_object_get(a, "notes"));
    set_why(r, -1, "no latency or availability declared to compare with the brief's targets", 0, 0);
    if (b->has_latency && lat)
        set_why(r, json_number_value(lat) <= b->latency_ms,
                "declared p95 latency %.0f ms against the brief's target %.0f ms",
                json_number_value(lat), b->latency_ms);
    if (b->has_avail && av && json_number_value(av) < b->avail_pct)
        set_why(r, 0, "declared availability %.2f%% below the brief's target %.2f%%",
                json_number_value(av), b->avail_pct);
    int k = util_lookup(usage_unit_names, unit);
    if (b->unit >= 0 && k != b->unit) {
        json_object_set_new(r->evidence, "comparable",
                            json_string("priced in another unit than the brief completes"));
        return 0;
    }
    r->has_cost = per > 0;
    r->cost_per_unit = per > 0 ? price / per : 0;
    r->per_hour = demand(b) * r->cost_per_unit;
    return 0;
}

static int by_cost(const void *pa, const void *pb)
{
    const struct plan_place_row *a = pa, *b = pb;
    if (a->has_cost != b->has_cost)
        return a->has_cost ? -1 : 1;
    if (a->has_cost && a->cost_per_unit != b->cost_per_unit)
        return a->cost_per_unit < b->cost_per_unit ? -1 : 1;
    return strcmp(a->option, b->option);
}

static int alt_rows(const struct place_ctx *x, const json_t *alts, struct plan_place_row *rows,
                    size_t *n)
{
    size_t i;
    const json_t *a;
    json_array_foreach(alts, i, a)
    {
        struct plan_place_row *r = &rows[(*n)++];
        memset(r, 0, sizeof *r);
        r->option = json_string_value(json_object_get(a, "name"));
        r->kind = json_string_value(json_object_get(a, "kind"));
        int rc = strcmp(r->kind, "api") == 0
                     ? api_row(x->b, a, r)
                     : gpu_alt_row(x, a, strcmp(r->kind, "reserved") == 0, r);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int plan_place_rows(const struct plan_place_brief *b, const struct plan_place_pool *pools,
                    size_t np, const struct plan_place_baseline *bl, size_t nbl,
                    const json_t *alternatives, struct plan_place_row **out, size_t *nout)
{
    struct place_ctx x = {b, pools, np, bl, nbl, NULL, 0};
    size_t cap = np + json_array_size(alternatives) + 1, n = 0;
    struct plan_place_row *rows = calloc(cap, sizeof *rows);
    *out = NULL;
    *nout = 0;
    if (rows == NULL)
        return -1;
    x.revision = b->revision;
    x.concurrency = b->concurrency;
    const struct plan_place_pool *cur = NULL;
    for (size_t i = 0; b->unit >= 0 && i < np; i++)
        if (pools[i].acc.reports > 0 &&
            (cur == NULL || pools[i].acc.completed[b->unit] > cur->acc.completed[b->unit]))
            cur = &pools[i];
    for (size_t i = 0; i < np; i++) {
        const struct plan_place_pool *p = &pools[i];
        if (!p->fits && p->acc.reports == 0)
            continue; /* sizing says it does not fit, and it never ran there */
        struct plan_place_row *r = &rows[n++];
        r->option = p->name;
        r->kind = "pool";
        r->pool_id = p->id;
        r->current = p == cur;
        if ((p->acc.reports > 0 ? measured_row(b, p, r) : estimated_row(&x, p, r)) != 0)
            goto oom;
    }
    if (alt_rows(&x, alternatives, rows, &n) != 0)
        goto oom;
    qsort(rows, n, sizeof *rows, by_cost);
    *out = rows;
    *nout = n;
    return 0;
oom:
    plan_place_rows_free(rows, n);
    return -1;
}

void plan_place_rows_free(struct plan_place_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        json_decref(rows[i].evidence);
    free(rows);
}

json_t *plan_place_row_json(const struct plan_place_row *r, int unit)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "option", json_string(r->option));
    json_object_set_new(o, "kind", json_string(r->kind));
    json_object_set_new(o, "pool_id", r->pool_id ? json_string(r->pool_id) : json_null());
    json_object_set_new(o, "basis", json_string(plan_place_basis_names[r->basis]));
    json_object_set_new(o, "current", json_boolean(r->current));
    json_object_set_new(o, "unit", unit >= 0 ? json_string(usage_unit_names[unit]) : json_null());
    json_object_set_new(o, "cost_per_unit",
                        r->has_cost ? json_real(plan_round_to(r->cost_per_unit, 12)) : json_null());
    json_object_set_new(o, "cost_per_million_units",
                        r->has_cost ? json_real(plan_round_cents(r->cost_per_unit * 1e6))
                                    : json_null());
    json_object_set_new(o, "cost_per_hour",
                        r->has_cost && r->per_hour > 0 ? json_real(plan_round_cents(r->per_hour))
                                                       : json_null());
    json_object_set_new(o, r->basis == PLACE_MEASURED ? "evidence" : "assumptions",
                        json_incref(r->evidence));
    json_object_set_new(o, "meets_success_metric",
                        r->meets < 0 ? json_null() : json_boolean(r->meets));
    json_object_set_new(o, "why", json_string(r->why));
    return o;
}
