/* monitor_internal.h — the monitor's state, shared by monitor.c (connections, samples,
 * ticks) and monitor_hosts.c (the hosts this worker watches: claims, pokes). Worker thread
 * only, except the ops' fns (monitor.c's header comment). */
#ifndef GPUFLEET_MONITOR_INTERNAL_H
#define GPUFLEET_MONITOR_INTERNAL_H

#include <stdint.h>

#include "common/crypt.h"
#include "common/dheap.h"
#include "common/idmap.h"
#include "db/monitor_lease.h"
#include "provisioner/jobs/job.h"
#include "provisioner/monitor/monitor_sample.h"
#include "provisioner/ssh/ssh.h"

enum mon_conn { MC_NONE, MC_CONNECTING, MC_UP };
enum mon_op { MO_NONE, MO_CRED, MO_MISSED, MO_SAMPLED, MO_KEY };

struct mon_host {
    struct monitor *m;
    struct db_mon_host h; /* from the last claim (strings owned) */
    struct mon_policy pol;
    struct mon_memory mem;
    struct crypt_secret key;
    int key_ok;
    struct prov_ssh_conn *conn;
    enum mon_conn cs;
    int sampling;
    int sample_late;     /* the sample in flight was counted missed at the next due time */
    char started_at[32]; /* when the sample's command was sent: the sample's time */
    int64_t next_sample_us, next_connect_us;
    int backoff_s;
    int missed;
    char why[320];    /* why the host has no connection (the last attempt's failure) */
    int key_mismatch; /* the host presented another key: quarantine it (once) */
    int claimed;      /* in the latest claim */
    /* a claim row that arrived while an op was in flight: the op's fn reads x->h on a
     * writer thread, so the row is adopted when the op is done, never under it */
    struct db_mon_host pend;
    int has_pend;
    /* the op in flight */
    struct job_op op;
    enum mon_op kind;
    char reason[512];
    char *doc;
    char isolate[512];
    char state[24];
    char *result;
    int decrypt_failed;
    char err[256];
    struct mon_host *next;
    struct dheap_node due; /* its next action time, in the monitor's heap */
    int poked;             /* on the poke list */
    struct mon_host *poke_next;
};

struct monitor {
    struct job_worker *w;
    struct mon_host *hosts;
    struct idmap byid; /* host id -> its mon_host in hosts (a claim's rows find theirs) */
    struct job_op claim_op;
    struct db_mon_claim claim;
    int claim_full; /* the next claim reads back every host held (the first one too) */
    int64_t next_claim_us;
    int nconn;
    int stopping;        /* no new ops: the writer is being freed */
    struct job_op hk_op; /* the samples' housekeeping */
    int64_t next_hk_us;
    int hk_ran;
    /* mon_tick looks only at the hosts that may have something to do: those a callback
     * poked (an op, a sample or a connection ended; a claim row came), and those whose
     * next action time (connect, sample) has come, kept in a heap */
    struct dheap due;
    struct mon_host *poke_head;
    /* the samples collecting to be committed together (monitor_group.c), and when the
     * group is submitted at the latest (INT64_MAX: no group open) */
    struct mon_group *group;
    int64_t group_due_us;
};

/* Puts x on the poke list: the next mon_tick looks at it. */
void mon_poke(struct mon_host *x);
/* Closes x's connection (if any). */
void mon_conn_close(struct mon_host *x);
/* Takes the claim row into x (the strings move; row is zeroed). */
void mon_adopt(struct mon_host *x, struct db_mon_host *row);
/* Submits the next claim when one is due. */
void mon_claim(struct monitor *m, int64_t now);
/* Submits x's op (nothing once the monitor stops). */
void mon_submit(struct mon_host *x, enum mon_op kind, db_tx_fn fn, job_op_done_fn done);
/* Every op's done starts with it: x is free for its next op. */
void mon_op_finished(struct mon_host *x);

/* monitor_group.c: x's sample (x->doc, x->isolate) is stored: it joins the open group
 * (x->op busy until the group's done), or with GPUFLEET_MONITOR_GROUP_MAX=0 is its own
 * transaction as before issue 28. */
void mon_store_sample(struct mon_host *x);
/* Submits the open group when its window has passed. */
void mon_group_tick(struct monitor *m, int64_t now);
/* Submits the open group now (if any). */
void mon_group_flush(struct monitor *m);
/* Frees an open group never submitted (mon_free; its hosts are freed with the monitor). */
void mon_group_discard(struct monitor *m);

#endif
