/* recommend_loads.c — see recommend_loads.h. */
#include "service/recommend_loads.h"

#include <stdlib.h>
#include <string.h>

#include "planner/recommend_loads.h"
#include "service/bottleneck.h"

static int same_brief(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The index of id among n sorted ids (stride bytes apart, the id first), or -1. */
static long find(const void *base, size_t n, size_t stride, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *k = *(const char *const *)((const char *)base + mid * stride);
        int c = strcmp(k, id);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int svc_rec_loads_apply(const struct svc_rec_bn *b, const struct usage_host *held, size_t nheld,
                        const char *const *ids, const struct plan_cost *costs, size_t n,
                        json_t *items)
{
    const struct db_bn_input *in = &b->in;
    size_t nl = 0; /* one load per host and brief (the rows' runs of them): sized by those */
    for (size_t i = 0; i < in->nrows; i++)
        nl += i == 0 || strcmp(in->rows[i].host_id, in->rows[i - 1].host_id) != 0 ||
              !same_brief(in->rows[i].brief_id, in->rows[i - 1].brief_id);
    struct plan_rec_load *l = calloc(nl + 1, sizeof *l);
    nl = 0;
    if (l == NULL)
        return -1;
    for (size_t i = 0; i < in->nrows;) { /* one host's rows, by brief */
        const char *host = in->rows[i].host_id;
        long hi = find(held, nheld, sizeof *held, host);
        long ci = find(ids, n, sizeof *ids, host);
        double ph = 0, busy = 0, phbusy = 0;
        size_t first = nl;
        for (; i < in->nrows && strcmp(in->rows[i].host_id, host) == 0;) {
            struct plan_rec_load *x = &l[nl++];
            const char *brief = in->rows[i].brief_id;
            x->host_id = host;
            x->pool_id = in->rows[i].pool_id;
            x->brief_id = brief;
            x->work.id = host;
            x->work.pool_id = x->pool_id;
            x->egress_per_gb = hi >= 0 ? held[hi].prices.egress_per_gb : 0;
            x->has_host_cost = ci >= 0;
            x->host_cost = ci >= 0 ? costs[ci].total : 0;
            /* A bucket with reports in two units is a row of each: per half, the
             * buckets are the most any unit has (never counted twice). */
            long most[2] = {0, 0};
            for (; i < in->nrows && strcmp(in->rows[i].host_id, host) == 0 &&
                   same_brief(in->rows[i].brief_id, brief);
                 i++) {
                const struct db_bn_row *w = &in->rows[i];
                svc_bn_add_row(&x->work, w);
                if (w->load_buckets > most[w->half & 1])
                    most[w->half & 1] = w->load_buckets;
                x->work.load_buckets = most[0] + most[1];
                busy += w->busy_s;
                phbusy += w->phase_busy_s;
                for (int k = 0; k < DB_BN_PHASES; k++)
                    ph += w->phase_s[k];
            }
        }
        for (size_t j = first; j < nl; j++) {
            l[j].host_phase_s = ph;
            l[j].host_busy_s = busy;
            l[j].host_phase_busy_s = phbusy;
        }
    }
    int rc = plan_rec_loads(l, nl, items);
    free(l);
    return rc;
}
