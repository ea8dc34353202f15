/* monitor_group.c — storing the samples (issue 28, item 1): the samples of many hosts are
 * committed together. A sample ready to store joins the worker's open group; the group is
 * submitted to the writer as one op when it holds cfg->monitor_group_max samples or when
 * cfg->monitor_group_ms have passed since its first sample (mon_tick), in one transaction:
 * one statement stores and fences them all (monitor_store_fenced, migrations/0037), each
 * by its own lease, and the policy's state changes of each are applied in it. Since
 * migrations/0044 the plain samples of a group (no event, the host's GPUs unchanged) are
 * written set-wise, one statement per table, with their hosts' health.
 *
 * A host in a group has its op busy (x->op.busy, as for an op of its own): it has at most
 * one write in flight, its claim row waits, and its next sample waits for the done, as
 * before. A group whose transaction fails (a document monitor_store refuses, a lost
 * connection) keeps nothing, and each of its samples is stored again alone (a group of
 * one): the one that fails is logged by its own done (fail closed: no sample is dropped
 * for another's failure). With cfg->monitor_group_max 0, each sample is its own
 * transaction of five round trips (BEGIN, fence, store, state, COMMIT), the path before
 * issue 28, kept so that bench/monitor measures both in one run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "provisioner/jobs/worker.h"
#include "provisioner/monitor/monitor_internal.h"
#include "provisioner/monitor/monitor_state.h"

struct mon_group {
    struct job_op op;
    struct monitor *m;
    int n, cap;
    struct mon_group_item *items; /* filled on the writer thread */
    struct mon_host *hosts[];
};

/* ---- one sample alone ---- */

/* The path before issue 28: fence, store, state, one statement each. */
static enum db_status legacy_fn(struct db_conn *c, void *arg)
{
    struct mon_host *x = arg;
    free(x->result);
    x->result = NULL;
    return mon_sampled_tx(c, x->m->w->owner, x->h.id, x->doc, x->isolate[0] ? x->isolate : NULL,
                          x->state, &x->result);
}

/* A group of one (a group that failed is stored again sample by sample this way). */
static enum db_status one_fn(struct db_conn *c, void *arg)
{
    struct mon_host *x = arg;
    struct mon_group_item it = {x->h.id,  x->doc,     x->isolate[0] ? x->isolate : NULL,
                                x->state, &x->result, DB_NO_RESULTS};
    enum db_status s = mon_sampled_group_tx(c, x->m->w->owner, &it, 1);
    return s < 0 ? s : it.status;
}

static void sampled_done(struct job_op *op)
{
    struct mon_host *x = op->ctx;
    mon_op_finished(x);
    free(x->doc);
    x->doc = NULL;
    if (op->status < 0)
        log_msg(LOG_WARN, "monitor: host %s: the sample could not be stored", x->h.id);
    else if (x->isolate[0] != '\0' && !strcmp(x->state, "quarantined"))
        /* the reason quotes host output: valid UTF-8 before JSON (jansson refuses others) */
        log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s, s:o}", "msg", "monitor: host isolated",
                                           "host_id", x->h.id, "host", x->h.name, "reason",
                                           utf8_json(x->isolate, strlen(x->isolate))));
}

/* ---- groups ---- */

static enum db_status group_fn(struct db_conn *c, void *arg)
{
    struct mon_group *g = arg;
    for (int i = 0; i < g->n; i++) {
        struct mon_host *x = g->hosts[i];
        free(x->result);
        x->result = NULL;
        g->items[i] =
            (struct mon_group_item){x->h.id,  x->doc,     x->isolate[0] ? x->isolate : NULL,
                                    x->state, &x->result, DB_NO_RESULTS};
    }
    return mon_sampled_group_tx(c, g->m->w->owner, g->items, g->n);
}

static void group_done(struct job_op *op)
{
    struct mon_group *g = op->ctx;
    int failed = op->status < 0;
    if (failed)
        log_msg(LOG_WARN,
                "monitor %s: a group of %d samples could not be stored together; each is "
                "stored alone",
                g->m->w->owner, g->n);
    for (int i = 0; i < g->n; i++) {
        struct mon_host *x = g->hosts[i];
        x->op.busy = 0; /* the group's, not the writer's: set by mon_store_sample */
        if (failed) {
            x->kind = MO_NONE;
            mon_submit(x, MO_SAMPLED, one_fn, sampled_done);
            continue;
        }
        x->op.status = g->items[i].status;
        sampled_done(&x->op);
    }
    free(g->items);
    free(g);
}

void mon_group_flush(struct monitor *m)
{
    struct mon_group *g = m->group;
    if (g == NULL)
        return;
    m->group = NULL;
    m->group_due_us = INT64_MAX;
    g->op = (struct job_op){.fn = group_fn, .arg = g, .tx = 1, .done = group_done, .ctx = g};
    job_writer_submit(m->w->writer, &g->op);
}

void mon_group_tick(struct monitor *m, int64_t now)
{
    if (m->group != NULL && now >= m->group_due_us)
        mon_group_flush(m);
}

/* A new open group of cap samples, or NULL when out of memory. */
static struct mon_group *group_new(struct monitor *m, int cap)
{
    struct mon_group *g = calloc(1, sizeof *g + (size_t)cap * sizeof g->hosts[0]);
    if (g == NULL)
        return NULL;
    g->items = calloc((size_t)cap, sizeof *g->items);
    if (g->items == NULL) {
        free(g);
        return NULL;
    }
    g->m = m;
    g->cap = cap;
    return g;
}

void mon_store_sample(struct mon_host *x)
{
    struct monitor *m = x->m;
    const struct prov_worker_config *cfg = m->w->cfg;
    int max = cfg->monitor_group_max;
    if (max <= 0) {
        mon_submit(x, MO_SAMPLED, legacy_fn, sampled_done);
        return;
    }
    if (m->stopping)
        return;
    if (m->group == NULL && (m->group = group_new(m, max)) == NULL) {
        mon_submit(x, MO_SAMPLED, one_fn, sampled_done); /* out of memory: alone */
        return;
    }
    struct mon_group *g = m->group;
    x->kind = MO_SAMPLED;
    x->op = (struct job_op){.done = sampled_done, .ctx = x};
    x->op.busy = 1; /* in the group: cleared by group_done */
    g->hosts[g->n++] = x;
    if (g->n == 1)
        m->group_due_us = util_mono_us() + (int64_t)cfg->monitor_group_ms * 1000;
    if (g->n >= g->cap || cfg->monitor_group_ms <= 0)
        mon_group_flush(m);
}

void mon_group_discard(struct monitor *m)
{
    if (m->group == NULL)
        return;
    free(m->group->items);
    free(m->group);
    m->group = NULL;
    m->group_due_us = INT64_MAX;
}
