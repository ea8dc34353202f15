/* monitor_hosts.c — the hosts this worker's monitor watches: the poke list, closing a
 * host's connection, the periodic claim (db/monitor_lease.h), hosts new to the worker, rows
 * adopted. monitor.c drives them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "provisioner/monitor/monitor.h"
#include "provisioner/monitor/monitor_internal.h"

void mon_poke(struct mon_host *x)
{
    if (x->poked)
        return;
    x->poked = 1;
    x->poke_next = x->m->poke_head;
    x->m->poke_head = x;
}

void mon_conn_close(struct mon_host *x)
{
    if (x->conn != NULL) {
        struct prov_ssh_conn *c = x->conn;
        x->conn = NULL;
        prov_ssh_close(c);
    }
    if (x->cs != MC_NONE)
        x->m->nconn--;
    x->cs = MC_NONE;
}

/* ---- claims ---- */

static enum db_status claim_fn(struct db_conn *c, void *arg)
{
    struct monitor *m = arg;
    db_mon_claim_clear(&m->claim);
    m->claim = (struct db_mon_claim){.owner = m->w->owner,
                                     .period_s = MON_CLAIM_PERIOD_S,
                                     .max = MON_MAX_HOSTS,
                                     .full = m->claim_full};
    return db_mon_claim(c, &m->claim);
}

static struct mon_host *find(struct monitor *m, const char *id)
{
    return idmap_get(&m->byid, id);
}

/* Takes the claim's row i into x (the strings move). */
void mon_adopt(struct mon_host *x, struct db_mon_host *row)
{
    int key_changed = x->h.host_key_sha256 == NULL || row->host_key_sha256 == NULL ||
                      strcmp(x->h.host_key_sha256, row->host_key_sha256) != 0 ||
                      strcmp(x->h.address, row->address) != 0 || x->h.port != row->port;
    int cred_changed = x->h.credential_id == NULL || row->credential_id == NULL ||
                       strcmp(x->h.credential_id, row->credential_id) != 0;
    db_mon_host_clear(&x->h);
    x->h = *row;
    memset(row, 0, sizeof *row);
    if (x->h.interval_s < 1)
        x->h.interval_s = 60;
    if (x->h.unreachable_after < 1)
        x->h.unreachable_after = 3;
    x->pol.nvswitch = x->h.nvswitch;
    x->pol.gpu_count = x->h.gpu_count;
    const struct prov_worker_config *cfg = x->m->w->cfg;
    x->pol.kmsg_page = cfg->monitor_kmsg_page;
    x->pol.kmsg_backlog = cfg->monitor_kmsg_backlog;
    /* journalctl and dmesg end within the sample's own timeout, with time to spare */
    x->pol.kmsg_timeout_s = cfg->query_timeout_s - 3 > 20 ? 20 : cfg->query_timeout_s - 3;
    if (x->pol.kmsg_timeout_s < 1)
        x->pol.kmsg_timeout_s = 1;
    if (mon_policy_overrides(&x->pol, x->h.xid_policy) != 0)
        x->pol.nov = 0; /* the API validates it; a bad stored one falls back to the catalog */
    if (key_changed)
        mon_conn_close(x);
    if (cred_changed)
        x->key_ok = 0;
}

/* A host new to this worker: its first sample one interval after its last one (a host
 * taken over), or, never sampled, at once; several never-sampled hosts in one claim are
 * spread over one interval (k of n), so that a fleet taken at once does not sample in
 * lockstep. It connects shortly before its first sample. */
static struct mon_host *host_new(struct monitor *m, const struct db_mon_host *row, int64_t now,
                                 int k, int n)
{
    struct mon_host *x = calloc(1, sizeof *x);
    if (x == NULL || idmap_put(&m->byid, row->id, x) != 0) {
        free(x);
        return NULL;
    }
    x->m = m;
    x->due = (struct dheap_node)DHEAP_NODE_INIT;
    x->missed = row->missed;
    x->mem.mono = row->kmsg_mono;
    if (row->kmsg_cursor != NULL)
        snprintf(x->mem.cursor, sizeof x->mem.cursor, "%s", row->kmsg_cursor);
    /* the ECC baseline is the last stored reading, not an empty one (a takeover) */
    if (mon_memory_seed_ecc(&x->mem, row->ecc_baseline) != 0)
        log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s}", "msg",
                                           "monitor: the stored ECC baseline was not read",
                                           "host_id", row->id, "host", row->name));
    int64_t interval_ms = (int64_t)(row->interval_s > 0 ? row->interval_s : 60) * 1000;
    int64_t wait_ms = row->since_sample_ms >= 0 ? interval_ms - row->since_sample_ms
                                                : (n > 1 ? interval_ms * k / n : 0);
    x->next_sample_us = now + (wait_ms > 0 ? wait_ms * 1000 : 0);
    int64_t lead_us = (int64_t)MON_CONNECT_LEAD_S * 1000000;
    x->next_connect_us = x->next_sample_us - lead_us > now ? x->next_sample_us - lead_us : now;
    x->next = m->hosts;
    m->hosts = x;
    log_json_steal(LOG_INFO,
                   json_pack("{s:s, s:s, s:s, s:s}", "msg", "monitor: host taken", "host_id",
                             row->id, "host", row->name, "worker", m->w->owner));
    return x;
}

static void claim_done(struct job_op *op)
{
    struct monitor *m = op->ctx;
    if (op->status < 0) {
        log_msg(LOG_WARN, "monitor %s: the claim failed; hosts keep their leases until then",
                m->w->owner);
        m->claim_full = 1; /* what it changed in the database may not have been seen */
        return;
    }
    int64_t now = util_mono_us();
    if (m->claim.full) {
        for (struct mon_host *x = m->hosts; x != NULL; x = x->next) {
            x->claimed = 0;
            mon_poke(x);
        }
    } else {
        for (int i = 0; i < m->claim.ndropped; i++) {
            struct mon_host *x = find(m, m->claim.dropped[i]);
            if (x != NULL) {
                x->claimed = 0;
                mon_poke(x);
            }
        }
    }
    int nnew = 0, k = 0;
    for (int i = 0; i < m->claim.nhosts; i++)
        if (m->claim.hosts[i].since_sample_ms < 0 && find(m, m->claim.hosts[i].id) == NULL)
            nnew++;
    for (int i = 0; i < m->claim.nhosts; i++) {
        struct db_mon_host *row = &m->claim.hosts[i];
        struct mon_host *x = find(m, row->id);
        if (x == NULL) {
            x = host_new(m, row, now, row->since_sample_ms < 0 ? k++ : 0, nnew);
            if (x == NULL)
                continue;
        }
        if (x->op.busy) { /* its fn may be reading x->h right now */
            if (x->has_pend)
                db_mon_host_clear(&x->pend);
            x->pend = *row;
            memset(row, 0, sizeof *row);
            x->has_pend = 1;
        } else {
            mon_adopt(x, row);
        }
        x->claimed = 1;
        mon_poke(x);
    }
    /* The hosts held must be the ones the database says: a host lost another way (deleted,
     * or taken over while this worker's lease had lapsed) shows as a count that differs.
     * Then the next claim, at once, reads every host back. */
    int held = 0;
    for (struct mon_host *x = m->hosts; x != NULL; x = x->next)
        held += x->claimed;
    int was_full = m->claim.full;
    m->claim_full = held != m->claim.owned;
    if (m->claim_full && !was_full)
        m->next_claim_us = now;
}

void mon_claim(struct monitor *m, int64_t now)
{
    if (m->stopping || m->claim_op.busy || now < m->next_claim_us)
        return;
    m->next_claim_us = now + (int64_t)MON_CLAIM_PERIOD_S * 1000000;
    m->claim_op = (struct job_op){.fn = claim_fn, .arg = m, .tx = 1, .done = claim_done, .ctx = m};
    job_writer_submit(m->w->writer, &m->claim_op);
}

/* Every op's done ends here: the host is free for the next op and takes a claim row
 * that waited for it. */
void mon_op_finished(struct mon_host *x)
{
    mon_poke(x);
    x->kind = MO_NONE;
    if (x->has_pend) {
        x->has_pend = 0;
        mon_adopt(x, &x->pend);
    }
}

void mon_submit(struct mon_host *x, enum mon_op kind, db_tx_fn fn, job_op_done_fn done)
{
    if (x->m->stopping)
        return;
    x->kind = kind;
    x->op = (struct job_op){.fn = fn, .arg = x, .tx = 1, .done = done, .ctx = x};
    job_writer_submit(x->m->w->writer, &x->op);
}
