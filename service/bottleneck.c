/* bottleneck.c — see bottleneck.h. */
#include "service/bottleneck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "service/rollups.h"

void svc_bn_add_row(struct plan_bn_host *h, const struct db_bn_row *w)
{
    struct plan_bn_sums *s = &h->half[w->half];
    s->reports += w->reports;
    s->phase_reports += w->phase_reports;
    s->busy_s += w->busy_s;
    s->phase_busy_s += w->phase_busy_s;
    for (int k = 0; k < PLAN_PHASE_COUNT && k < DB_BN_PHASES; k++)
        s->phase_s[k] += w->phase_s[k];
    s->completed += w->completed;
    s->failed += w->failed;
    s->retried += w->retried;
    s->bytes_moved += w->bytes_moved;
    h->load_buckets += w->load_buckets;
    h->load_bytes += w->load_bytes;
}

/* The rows (by host, then half) into hosts, one per host. */
static int to_hosts(struct svc_bottleneck *b)
{
    const struct db_bn_input *in = &b->in;
    free(b->hosts);
    b->nhosts = 0;
    b->hosts = calloc(in->nrows + 1, sizeof *b->hosts);
    if (b->hosts == NULL)
        return -1;
    for (size_t i = 0; i < in->nrows; i++) {
        const struct db_bn_row *w = &in->rows[i];
        struct plan_bn_host *h = b->nhosts ? &b->hosts[b->nhosts - 1] : NULL;
        if (h == NULL || strcmp(h->id, w->host_id) != 0) {
            h = &b->hosts[b->nhosts++];
            h->id = w->host_id;
            h->pool_id = w->pool_id;
        }
        svc_bn_add_row(h, w);
    }
    return 0;
}

void svc_bn_signal(const struct db_bn_signal *g, struct plan_bn_signals *s)
{
    s->host_id = g->host_id;
    s->has_gpu = g->has_gpu;
    s->gpu_samples = g->gpu_samples;
    s->has_util = g->has_util;
    s->has_mem = g->has_mem;
    s->has_power = g->has_power;
    s->util_pct = g->util_pct;
    s->mem_used_pct = g->mem_used_pct;
    s->power_w = g->power_w;
    s->has_storage = g->has_storage;
    s->storage_run_id = g->storage_run_id;
    s->storage_at = g->storage_at;
    s->read_mbps = g->read_mbps;
    s->has_min_read = g->has_min_read;
    s->min_read_mbps = g->min_read_mbps;
    s->has_bw = g->has_bw;
    s->bw_run_id = g->bw_run_id;
    s->bw_at = g->bw_at;
    s->busbw_gbps = g->busbw_gbps;
    s->has_min_bw = g->has_min_bw;
    s->min_busbw_gbps = g->min_busbw_gbps;
    s->has_diag = g->has_diag;
    s->diag_run_id = g->diag_run_id;
    s->diag_at = g->diag_at;
    s->diag_status = g->diag_status;
    s->diag_read_mbps = g->diag_read_mbps;
    s->has_diag_min = g->has_diag_min;
    s->diag_min_read_mbps = g->diag_min_read_mbps;
}

/* The window's bounds: from rounded down to the grain's bucket, the middle. */
static void bounds(struct svc_bottleneck *b)
{
    const int64_t hour = 3600LL * 1000000, day = 24 * hour, week = 7 * day;
    const int64_t monday = 4 * day; /* 1970-01-05, the first Monday after the epoch */
    b->grain = db_bn_grain_of((double)(b->to_us - b->from_us) / 1e6);
    /* quarters: date_bin('6 hours', …, 2000-01-01), which the epoch's 6-hour grid holds */
    int64_t f = b->grain == DB_BN_HOUR      ? util_floor_us(b->from_us, hour)
                : b->grain == DB_BN_QUARTER ? util_floor_us(b->from_us, 6 * hour)
                : b->grain == DB_BN_DAY     ? util_floor_us(b->from_us, day)
                                            : util_floor_us(b->from_us - monday, week) + monday;
    util_rfc3339(f, b->from, sizeof b->from);
    /* the whole ISO weeks inside the window, read from the week rollups (day grain) */
    int64_t fw = util_ceil_us(f - monday, week) + monday;
    int64_t tw = util_floor_us(b->to_us - monday, week) + monday;
    if (b->grain != DB_BN_DAY || !(fw < tw))
        fw = tw = b->to_us;
    util_rfc3339(fw, b->win.weeks[0], sizeof b->win.weeks[0]);
    util_rfc3339(tw, b->win.weeks[1], sizeof b->win.weeks[1]);
    static const int64_t width[] = {3600LL * 1000000, 6 * 3600LL * 1000000, 86400LL * 1000000,
                                    7 * 86400LL * 1000000};
    char *o = b->win.buckets, *ow = b->win.week_buckets;
    size_t n = 0;
    *o++ = '{';
    for (int64_t t = f; t < b->to_us && n < DB_BN_BUCKETS_MAX; t += width[b->grain]) {
        if (t >= fw && t < tw)
            continue; /* in a whole week */
        o += n++ ? sprintf(o, ",") : 0;
        util_rfc3339(t, o, 40);
        o += strlen(o);
    }
    strcpy(o, "}");
    n = 0;
    *ow++ = '{';
    for (int64_t t = fw; t < tw && n < DB_BN_BUCKETS_MAX; t += week) {
        ow += n++ ? sprintf(ow, ",") : 0;
        util_rfc3339(t, ow, 40);
        ow += strlen(ow);
    }
    strcpy(ow, "}");
    util_rfc3339(b->to_us, b->to, sizeof b->to);
    util_rfc3339(f + (b->to_us - f) / 2, b->mid, sizeof b->mid);
}

static enum db_status run_fn(struct db_conn *c, void *arg)
{
    struct svc_bottleneck *b = arg;
    enum db_status s = db_bn_target(c, b->kind, b->id, b->projects, &b->in);
    if (s != DB_ONE_RESULT)
        return s;
    s = db_bn_rows(c, b->kind, b->id, b->projects, b->grain, b->from, b->to, b->mid, &b->win,
                   &b->in);
    if (s < 0)
        return s;
    if (to_hosts(b) != 0)
        return DB_HARD_ERROR;
    plan_bn_summarize(b->hosts, b->nhosts, &b->f);
    b->nsig = 0;
    if (b->f.nnamed == 0)
        return DB_ONE_RESULT;
    char ids[PLAN_BN_NAMED_MAX * 38 + 3];
    size_t o = 0;
    ids[o++] = '{';
    for (size_t i = 0; i < b->f.nnamed; i++)
        o += (size_t)snprintf(ids + o, sizeof ids - o, "%s%s", i ? "," : "",
                              b->hosts[b->f.named[i]].id);
    snprintf(ids + o, sizeof ids - o, "}");
    s = db_bn_signals(c, ids, b->from, b->to, &b->in);
    if (s < 0)
        return s;
    free(b->sig);
    b->sig = calloc(b->in.nsignals + 1, sizeof *b->sig);
    if (b->sig == NULL)
        return DB_HARD_ERROR;
    for (size_t i = 0; i < b->in.nsignals; i++)
        svc_bn_signal(&b->in.signals[i], &b->sig[i]);
    b->nsig = b->in.nsignals;
    return DB_ONE_RESULT;
}

enum db_status svc_bottleneck_run(struct svc_bottleneck *b)
{
    bounds(b);
    enum db_status s = svc_rollups_run_tx(run_fn, b);
    if (s == DB_ONE_RESULT)
        plan_bn_decide(b->hosts, b->nhosts, b->sig, b->nsig, &b->f);
    return s;
}

void svc_bottleneck_free(struct svc_bottleneck *b)
{
    db_bn_free(&b->in);
    free(b->hosts);
    free(b->sig);
    b->hosts = NULL;
    b->sig = NULL;
    b->nhosts = b->nsig = 0;
}
