/* recommend_bn.c — see recommend_bn.h. */
#include "service/recommend_bn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "planner/recommend_bn.h"
#include "service/bottleneck.h"

static int by_pool(const void *a, const void *b)
{
    const struct plan_bn_host *x = a, *y = b;
    int c = strcmp(x->pool_id, y->pool_id);
    return c ? c : strcmp(x->id, y->id);
}

/* The rows (by host) into b->hosts, one per host, sorted by pool then id; then the pools.
 * Both arrays are sized by what they hold (a pool is 1.6 KB: sized by the rows, they
 * were 80 MB to zero at 10,000 hosts). */
static int group(struct svc_rec_bn *b)
{
    const struct db_bn_input *in = &b->in;
    size_t nh = 0, np = 0;
    for (size_t i = 0; i < in->nrows; i++)
        nh += i == 0 || strcmp(in->rows[i].host_id, in->rows[i - 1].host_id) != 0;
    b->hosts = calloc(nh + 1, sizeof *b->hosts);
    if (b->hosts == NULL)
        return -1;
    for (size_t i = 0; i < in->nrows; i++) {
        const struct db_bn_row *w = &in->rows[i];
        struct plan_bn_host *h = b->nh ? &b->hosts[b->nh - 1] : NULL;
        if (h == NULL || strcmp(h->id, w->host_id) != 0) {
            h = &b->hosts[b->nh++];
            h->id = w->host_id;
            h->pool_id = w->pool_id;
        }
        svc_bn_add_row(h, w);
    }
    if (b->nh > 1)
        qsort(b->hosts, b->nh, sizeof *b->hosts, by_pool);
    for (size_t i = 0; i < b->nh; i++)
        np += i == 0 || strcmp(b->hosts[i].pool_id, b->hosts[i - 1].pool_id) != 0;
    b->pools = calloc(np + 1, sizeof *b->pools);
    if (b->pools == NULL)
        return -1;
    for (size_t i = 0; i < b->nh; i++) {
        struct svc_rec_bn_pool *p = b->np ? &b->pools[b->np - 1] : NULL;
        if (p == NULL || strcmp(p->pool_id, b->hosts[i].pool_id) != 0) {
            p = &b->pools[b->np++];
            p->pool_id = b->hosts[i].pool_id;
            p->hosts = &b->hosts[i];
        }
        p->nh++;
    }
    return 0;
}

enum db_status svc_rec_bn_read(struct db_conn *c, int64_t at_us, struct svc_rec_bn *b)
{
    const int64_t hour = 3600LL * 1000000;
    char from[40], to[40], mid[40];
    int64_t f = util_floor_us(at_us - 24 * hour, 6 * hour); /* a quarter's start */
    util_rfc3339(f, from, sizeof from);
    util_rfc3339(at_us, to, sizeof to);
    util_rfc3339(f + 12 * hour, mid, sizeof mid);
    svc_rec_bn_free(b);
    enum db_status s = db_bn_rows_fleet(c, from, to, mid, &b->in);
    if (s < 0)
        return s;
    if (group(b) != 0)
        return DB_HARD_ERROR;
    size_t named = 0;
    for (size_t i = 0; i < b->np; i++) {
        plan_bn_summarize(b->pools[i].hosts, b->pools[i].nh, &b->pools[i].f);
        named += b->pools[i].f.nnamed;
    }
    if (named == 0)
        return DB_ONE_RESULT;
    char *ids = malloc(named * 38 + 3);
    if (ids == NULL)
        return DB_HARD_ERROR;
    size_t o = 0;
    ids[o++] = '{';
    for (size_t i = 0; i < b->np; i++)
        for (size_t j = 0; j < b->pools[i].f.nnamed; j++)
            o += (size_t)sprintf(ids + o, "%s%s", o > 1 ? "," : "",
                                 b->pools[i].hosts[b->pools[i].f.named[j]].id);
    snprintf(ids + o, 2, "}");
    s = db_bn_signals(c, ids, from, to, &b->in);
    free(ids);
    if (s < 0)
        return s;
    b->sig = calloc(b->in.nsignals + 1, sizeof *b->sig);
    if (b->sig == NULL)
        return DB_HARD_ERROR;
    b->nsig = b->in.nsignals;
    for (size_t i = 0; i < b->nsig; i++)
        svc_bn_signal(&b->in.signals[i], &b->sig[i]);
    /* the signals come back in the order asked: each pool's named hosts in turn */
    size_t at = 0;
    for (size_t i = 0; i < b->np && at <= b->nsig; i++) {
        b->pools[i].sig = &b->sig[at];
        b->pools[i].nsig = b->pools[i].f.nnamed <= b->nsig - at ? b->pools[i].f.nnamed : 0;
        at += b->pools[i].f.nnamed;
    }
    return DB_ONE_RESULT;
}

static const struct plan_rec_host *find(const struct plan_rec_host *hosts, size_t nh,
                                        const char *id)
{
    size_t lo = 0, hi = nh;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(hosts[mid].id, id);
        if (c == 0)
            return &hosts[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A brief's work per pool and unit (rows of one host, brief and unit are adjacent). */
static size_t tputs(const struct svc_rec_bn *b, const struct plan_rec_host *hosts, size_t nh,
                    struct plan_rec_tput *t, double *least)
{
    size_t nt = 0;
    const struct db_bn_input *in = &b->in;
    for (size_t i = 0; i < in->nrows;) {
        const struct db_bn_row *w = &in->rows[i];
        struct plan_rec_tput one = {0};
        size_t j = i;
        for (; j < in->nrows && strcmp(in->rows[j].host_id, w->host_id) == 0 &&
               in->rows[j].brief_id && w->brief_id &&
               strcmp(in->rows[j].brief_id, w->brief_id) == 0 &&
               strcmp(in->rows[j].unit, w->unit) == 0;
             j++) {
            one.completed += in->rows[j].completed;
            one.busy_s += in->rows[j].busy_s;
            for (int k = 0; k < PLAN_PHASE_COUNT; k++)
                one.phase_s[k] += in->rows[j].phase_s[k];
        }
        i = j > i ? j : i + 1;
        const struct plan_rec_host *h = w->brief_id ? find(hosts, nh, w->host_id) : NULL;
        if (h == NULL)
            continue; /* no brief, or a stopped host */
        size_t g = 0;
        while (g < nt &&
               !(strcmp(t[g].pool_id, w->pool_id) == 0 && strcmp(t[g].brief_id, w->brief_id) == 0 &&
                 strcmp(t[g].unit, w->unit) == 0))
            g++;
        if (g == nt) {
            t[nt] = (struct plan_rec_tput){.pool_id = w->pool_id,
                                           .brief_id = w->brief_id,
                                           .unit = w->unit,
                                           .gpu_count = h->gpu_count,
                                           .price_per_hour = h->price_per_hour};
            least[nt++] = -1;
        }
        t[g].completed += one.completed;
        t[g].busy_s += one.busy_s;
        for (int k = 0; k < PLAN_PHASE_COUNT; k++)
            t[g].phase_s[k] += one.phase_s[k];
        if (least[g] < 0 || one.completed < least[g]) { /* rows by host id: ties keep the first */
            least[g] = one.completed;
            t[g].least_host_id = w->host_id;
        }
    }
    return nt;
}

int svc_rec_bn_apply(struct svc_rec_bn *b, const struct plan_rec_host *hosts, size_t nh,
                     json_t *items)
{
    struct plan_rec_bn_pool *p = calloc(b->np + 1, sizeof *p);
    struct plan_rec_tput *t = calloc(b->in.nrows + 1, sizeof *t);
    double *least = calloc(b->in.nrows + 1, sizeof *least);
    int rc = -1;
    if (p == NULL || t == NULL || least == NULL)
        goto out;
    for (size_t i = 0; i < b->np; i++) {
        struct svc_rec_bn_pool *q = &b->pools[i];
        plan_bn_decide(q->hosts, q->nh, q->sig, q->nsig, &q->f);
        p[i].pool_id = q->pool_id;
        p[i].f = &q->f;
    }
    size_t nt = tputs(b, hosts, nh, t, least);
    rc = plan_rec_bottlenecks(p, b->np, t, nt, items);
out:
    free(p);
    free(t);
    free(least);
    return rc;
}

void svc_rec_bn_free(struct svc_rec_bn *b)
{
    db_bn_free(&b->in);
    free(b->hosts);
    free(b->pools);
    free(b->sig);
    memset(b, 0, sizeof *b);
}
