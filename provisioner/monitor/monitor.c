/* monitor.c — see monitor.h. All of it runs on the worker thread except the ops' fns,
 * which run on the writer's threads and touch only their host's op fields. A host has at
 * most one database op in flight; it samples and connects only between ops. */
#include "provisioner/monitor/monitor.h"
#include "provisioner/monitor/monitor_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/dheap.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/netpolicy.h"
#include "common/utf8.h"
#include "common/util.h"
#include "db/credentials.h"
#include "db/monitor_lease.h"
#include "planner/monitor_policy.h"
#include "provisioner/monitor/monitor_sample.h"
#include "provisioner/monitor/monitor_state.h"

static void host_free_fields(struct mon_host *x)
{
    db_mon_host_clear(&x->h);
    memset(&x->h, 0, sizeof x->h);
}

struct monitor *mon_new(struct job_worker *w)
{
    struct monitor *m = calloc(1, sizeof *m);
    if (m != NULL) {
        m->w = w;
        m->claim_full = 1;
        m->group_due_us = INT64_MAX;
    }
    return m;
}

int mon_active(const struct monitor *m)
{
    return m->nconn;
}

/* ---- missed samples ---- */

static enum db_status missed_fn(struct db_conn *c, void *arg)
{
    struct mon_host *x = arg;
    return mon_missed_tx(c, x->m->w->owner, x->h.id, x->missed, x->h.unreachable_after, x->reason,
                         x->state);
}

static void missed_done(struct job_op *op)
{
    struct mon_host *x = op->ctx;
    mon_op_finished(x);
    if (op->status > 0 && !strcmp(x->state, "unreachable") && x->missed == x->h.unreachable_after)
        log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s, s:i, s:s}", "msg",
                                           "monitor: host unreachable", "host_id", x->h.id, "host",
                                           x->h.name, "missed", x->missed, "reason", x->reason));
}

static void missed(struct mon_host *x, const char *why)
{
    x->missed++;
    if (x->op.busy) /* its fn may be reading x->reason: the count is carried to the next */
        return;
    utf8_clean(why, strlen(why), x->reason, sizeof x->reason);
    mon_submit(x, MO_MISSED, missed_fn, missed_done);
}

/* ---- a host key that is not the pin ---- */

static enum db_status key_fn(struct db_conn *c, void *arg)
{
    struct mon_host *x = arg;
    return mon_key_mismatch_tx(c, x->m->w->owner, x->h.id, x->reason, x->state);
}

static void key_done(struct job_op *op)
{
    struct mon_host *x = op->ctx;
    mon_op_finished(x);
    x->key_mismatch = 0;
    if (op->status > 0 && !strcmp(x->state, "quarantined"))
        log_json_steal(LOG_WARN,
                       json_pack("{s:s, s:s, s:s, s:s}", "msg", "monitor: host quarantined",
                                 "host_id", x->h.id, "host", x->h.name, "reason", x->reason));
}

/* ---- samples ---- */

static void on_sample(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct mon_host *x = ctx;
    int late = x->sample_late;
    x->sampling = x->sample_late = 0;
    mon_poke(x);
    if (r->err != PROV_SSH_OK) {
        char why[320];
        snprintf(why, sizeof why, "the sample failed: %s%s%s", prov_ssh_err_name(r->err),
                 r->message[0] ? ": " : "", r->message);
        if (!r->timed_out || r->err == PROV_SSH_DISCONNECT)
            mon_conn_close(x);
        snprintf(x->why, sizeof x->why, "%s", why);
        if (!late) /* else counted when the next sample fell due (host_tick) */
            missed(x, why);
        return;
    }
    struct mon_outcome o;
    size_t n = r->out_total < 8192 ? r->out_total : 8192;
    char *text = utf8_dup(r->out_tail, n, 8192);
    if (text == NULL || mon_sample_read(&x->mem, &x->pol, text, r->out_total, &o) != 0) {
        free(text);
        missed(x, "out of memory reading the sample");
        return;
    }
    free(text);
    /* the sample is dated when it was asked for, not when its output was read (a slow
     * host or a busy worker would otherwise bunch two samples of a host together) */
    if (json_object_set_new(o.doc, "at", json_string(x->started_at)) != 0) {
        mon_outcome_clear(&o);
        missed(x, "out of memory reading the sample");
        return;
    }
    x->missed = 0;
    utf8_clean(o.isolate, strlen(o.isolate), x->isolate, sizeof x->isolate);
    free(x->doc);
    x->doc = json_dumps(o.doc, JSON_COMPACT);
    mon_outcome_clear(&o);
    if (x->doc == NULL) {
        missed(x, "out of memory rendering the sample");
        return;
    }
    if (!x->op.busy)
        mon_store_sample(x); /* monitor_group.c */
}

static void sample(struct mon_host *x, int64_t now)
{
    const struct prov_worker_config *cfg = x->m->w->cfg;
    char *cmd = mon_sample_command(&x->mem, &x->pol);
    int64_t step = (int64_t)x->h.interval_s * 1000000;
    x->next_sample_us = plan_mon_next_due(x->next_sample_us, now, step);
    if (cmd == NULL) {
        missed(x, "out of memory building the sample");
        return;
    }
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(x->started_at, sizeof x->started_at, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(x->started_at + k, sizeof x->started_at - k, ".%03ldZ", ts.tv_nsec / 1000000);
    x->sampling = 1;
    if (prov_ssh_exec(x->conn, cmd, cfg->query_timeout_s * 1000, on_sample, x) != 0) {
        x->sampling = 0;
        mon_conn_close(x);
        missed(x, "the SSH session ended");
    }
    free(cmd);
}

/* ---- connections ---- */

static void on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct mon_host *x = ctx;
    mon_poke(x);
    if (st->err == PROV_SSH_OK) {
        x->cs = MC_UP;
        x->backoff_s = 0;
        x->why[0] = '\0';
        return;
    }
    snprintf(x->why, sizeof x->why, "could not connect: %s: %s", prov_ssh_err_name(st->err),
             st->message);
    mon_conn_close(x);
    if (st->err == PROV_SSH_HOSTKEY_MISMATCH && x->h.state != NULL &&
        strcmp(x->h.state, "quarantined") != 0) {
        /* never authenticated to it: quarantined as the jobs do, its health unknown */
        snprintf(x->reason, sizeof x->reason,
                 "host key mismatch seen by the health monitor: the host presented %s",
                 st->host_key_sha256[0] ? st->host_key_sha256 : "another key");
        x->key_mismatch = 1;
        x->backoff_s = x->h.interval_s;
        x->next_connect_us = util_mono_us() + (int64_t)x->backoff_s * 1000000;
        return;
    }
    x->backoff_s = x->backoff_s ? x->backoff_s * 2 : 1;
    if (x->backoff_s > x->h.interval_s)
        x->backoff_s = x->h.interval_s;
    x->next_connect_us = util_mono_us() + (int64_t)x->backoff_s * 1000000;
    /* every sample that falls due while the host waits to reconnect is missed at its due
     * time (host_tick), whatever the backoff; a host key mismatch is also just that here:
     * the jobs quarantine on it, the monitor never authenticates to a host it does not know */
}

static enum db_status cred_fn(struct db_conn *c, void *arg)
{
    struct mon_host *x = arg;
    crypt_secret_free(&x->key);
    x->decrypt_failed = 0;
    return db_credential_load(c, x->h.credential_id, &x->key, &x->decrypt_failed, x->err,
                              sizeof x->err);
}

static void cred_done(struct job_op *op)
{
    struct mon_host *x = op->ctx;
    mon_op_finished(x);
    x->key_ok = op->status > 0;
    if (!x->key_ok) {
        x->next_connect_us = util_mono_us() + (int64_t)x->h.interval_s * 1000000;
        snprintf(x->why, sizeof x->why, "%s",
                 x->decrypt_failed ? x->err : "could not load the host's credential");
    }
}

static void connect(struct mon_host *x)
{
    const struct prov_worker_config *cfg = x->m->w->cfg;
    enum net_target_verdict v = net_ssh_target(x->h.address, cfg->allow_cidrs);
    if (v != NET_TARGET_OK) {
        x->next_connect_us = util_mono_us() + (int64_t)x->h.interval_s * 1000000;
        snprintf(x->why, sizeof x->why, "%s", net_target_why(v));
        return;
    }
    struct prov_ssh_target t = {
        .address = x->h.address,
        .port = x->h.port,
        .user = x->h.user,
        .private_key = (const char *)x->key.data,
        .private_key_len = x->key.len,
        .pinned_host_key_sha256 = x->h.host_key_sha256,
        .connect_timeout_ms = cfg->connect_timeout_s * 1000,
        .handshake_timeout_ms = cfg->connect_timeout_s * 2000,
        .auth_timeout_ms = cfg->connect_timeout_s * 2000,
    };
    if (x->h.host_key_sha256 == NULL) { /* never pinned: the monitor does not pin */
        x->next_connect_us = util_mono_us() + (int64_t)x->h.interval_s * 1000000;
        snprintf(x->why, sizeof x->why, "the host has no pinned host key");
        return;
    }
    x->conn = prov_ssh_connect(x->m->w->loop, &t, on_connect, x);
    if (x->conn == NULL)
        return;
    x->cs = MC_CONNECTING;
    x->m->nconn++;
}

/* ---- housekeeping: rollups and retention, once a minute by one worker ---- */

static enum db_status hk_fn(struct db_conn *c, void *arg)
{
    struct monitor *m = arg;
    const struct prov_worker_config *cfg = m->w->cfg;
    return db_mon_housekeeping(c, cfg->monitor_keep_s, &m->hk_ran);
}

static void hk_done(struct job_op *op)
{
    struct monitor *m = op->ctx;
    if (op->status < 0)
        log_msg(LOG_WARN, "monitor %s: the samples' rollup or retention failed", m->w->owner);
}

static void housekeeping(struct monitor *m, int64_t now)
{
    if (m->stopping || m->hk_op.busy || now < m->next_hk_us)
        return;
    m->next_hk_us = now + (int64_t)60 * 1000000;
    m->hk_op = (struct job_op){.fn = hk_fn, .arg = m, .tx = 1, .done = hk_done, .ctx = m};
    job_writer_submit(m->w->writer, &m->hk_op);
}

static void host_free(struct mon_host *x)
{
    if (x->h.id != NULL && idmap_get(&x->m->byid, x->h.id) == x)
        idmap_del(&x->m->byid, x->h.id);
    dheap_remove(&x->m->due, &x->due);
    mon_conn_close(x);
    crypt_secret_free(&x->key);
    mon_memory_clear(&x->mem);
    host_free_fields(x);
    if (x->has_pend)
        db_mon_host_clear(&x->pend);
    free(x->doc);
    free(x->result);
    free(x);
}

/* One host's turn: what it does now, and when it next may act by itself (0: not before a
 * callback pokes it). */
/* A sample fell due and cannot be taken: the host waits to reconnect (backoff, or a
 * credential or address it could not use), or the previous sample has not answered within
 * an interval. It counts as missed now, at its due time (issue 25: counted only when a
 * reconnect failed, each miss landed about half an interval late). A connection attempt
 * in flight decides by itself: it fails (the next tick counts) or samples at once. */
static void overdue(struct mon_host *x, int64_t now)
{
    int64_t step = (int64_t)x->h.interval_s * 1000000;
    x->next_sample_us += step;
    if (x->next_sample_us <= now)
        x->next_sample_us = now + step; /* never a burst of misses to catch up */
    if (x->sampling) {
        x->sample_late = 1;
        missed(x, "the sample did not answer within an interval");
    } else {
        missed(x, x->why[0] ? x->why : "not connected to the host");
    }
}

static int64_t host_tick(struct mon_host *x, int64_t now)
{
    int waiting = x->cs == MC_NONE && now < x->next_connect_us;
    if ((waiting || x->sampling) && !x->key_mismatch && now >= x->next_sample_us)
        overdue(x, now);
    if (x->op.busy || x->sampling) /* its done or its sample's callback pokes; or a due */
        return x->next_sample_us > now ? x->next_sample_us : 0;
    if (x->key_mismatch) {
        mon_submit(x, MO_KEY, key_fn, key_done);
    } else if (x->cs == MC_NONE && now >= x->next_connect_us) {
        if (!x->key_ok)
            mon_submit(x, MO_CRED, cred_fn, cred_done);
        else
            connect(x);
    } else if (x->cs == MC_UP && now >= x->next_sample_us) {
        sample(x, now);
    }
    if (x->op.busy || x->sampling || x->cs == MC_CONNECTING)
        return x->next_sample_us > now ? x->next_sample_us : 0;
    if (x->key_mismatch)
        return now; /* stopping: submit was refused */
    int64_t t = x->next_sample_us;
    if (x->cs == MC_NONE && x->next_connect_us < t)
        t = x->next_connect_us;
    return t > 0 ? t : now;
}

/* Frees the hosts released or lost that are idle now (a walk, but only after a claim
 * dropped some). A host on the poke list waits for the next tick. */
static void sweep(struct monitor *m)
{
    struct mon_host **pp = &m->hosts;
    while (*pp != NULL) {
        struct mon_host *x = *pp;
        if (!x->claimed && !x->op.busy && !x->sampling && !x->poked) {
            *pp = x->next;
            host_free(x);
            continue;
        }
        pp = &x->next;
    }
}

void mon_tick(struct monitor *m)
{
    int64_t now = util_mono_us();
    mon_claim(m, now);
    housekeeping(m, now);
    mon_group_tick(m, now);
    struct dheap_node *top;
    while ((top = dheap_pop_due(&m->due, now)) != NULL)
        mon_poke(DHEAP_OWNER(top, struct mon_host, due));
    /* the hosts poked so far; those a callback pokes meanwhile wait for the next tick */
    struct mon_host *list = m->poke_head;
    m->poke_head = NULL;
    int sweep_now = 0;
    while (list != NULL) {
        struct mon_host *x = list;
        list = x->poke_next;
        x->poke_next = NULL;
        x->poked = 0;
        if (!x->claimed) { /* released or lost: stop at once, free once idle */
            dheap_remove(&m->due, &x->due);
            mon_conn_close(x);
            sweep_now |= !x->op.busy && !x->sampling;
            continue;
        }
        if (dheap_set(&m->due, &x->due, host_tick(x, now)) != 0)
            mon_poke(x); /* no room in the heap: looked at every tick instead */
    }
    if (sweep_now)
        sweep(m);
}

int64_t mon_next_due_us(const struct monitor *m)
{
    if (m->poke_head != NULL)
        return 0;
    const struct dheap_node *top = dheap_top(&m->due);
    int64_t d = top != NULL ? top->due : INT64_MAX;
    if (!m->stopping) {
        if (!m->claim_op.busy && m->next_claim_us < d)
            d = m->next_claim_us;
        if (!m->hk_op.busy && m->next_hk_us < d)
            d = m->next_hk_us;
        if (m->group_due_us < d)
            d = m->group_due_us;
    }
    return d;
}

void mon_close(struct monitor *m)
{
    if (m == NULL)
        return;
    mon_group_flush(m); /* the samples collected so far are stored (job_writer_free) */
    m->stopping = 1;
    for (struct mon_host *x = m->hosts; x != NULL; x = x->next)
        mon_conn_close(x);
}

void mon_free(struct monitor *m)
{
    if (m == NULL)
        return;
    while (m->hosts != NULL) {
        struct mon_host *x = m->hosts;
        m->hosts = x->next;
        host_free(x);
    }
    mon_group_discard(m);
    db_mon_claim_clear(&m->claim);
    dheap_free(&m->due);
    idmap_free(&m->byid);
    free(m);
}
