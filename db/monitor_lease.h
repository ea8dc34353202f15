/* monitor_lease.h — the health monitor's ownership of hosts and its state changes
 * (provisioner/monitor/monitor.c). Each worker thread claims a fair share of the watched hosts
 * (ready, draining, drained, quarantined, unreachable) with a lease per host in
 * host_monitor; every write it makes about a host is fenced by that lease, so a host is
 * sampled and acted on by one worker at a time, and a dead worker's hosts are taken over
 * once their leases lapse. */
#ifndef GPUFLEET_DB_MONITOR_LEASE_H
#define GPUFLEET_DB_MONITOR_LEASE_H

#include "db/db.h"

/* The states the monitor watches, as an SQL list. */
#define DB_MON_WATCHED "('ready', 'draining', 'drained', 'quarantined', 'unreachable')"
/* The condition on a host h joined with its pool p under which the monitor watches it: a
 * watched state, in a pool that did not turn the monitor off (the one definition, shared
 * by the claim and by /metrics, db/gpu_metrics.c). */
#define DB_MON_POOL_ON       "coalesce((p.spec->'monitor'->>'enabled')::boolean, true)"
#define DB_MON_WATCHED_WHERE " h.state IN " DB_MON_WATCHED " AND " DB_MON_POOL_ON
/* The same condition for the claim's statements, which run every claim period over every
 * watched host: the pools' settings as a CTE mp, read once per pool instead of once per host
 * (pools.spec is json, parsed again at every ->: at 1,000 hosts that was most of a claim's
 * cost). mp carries what the claim's fingerprint reads of the pool and its GPU model. */
#define DB_MON_POOLS                                                                   \
    " mp AS MATERIALIZED (SELECT p.id, p.gpu_model, p.spec->'gpu_count' AS gpu_count," \
    " p.spec->'monitor' AS monitor, " DB_MON_POOL_ON " AS enabled, g.nvswitch"         \
    " FROM pools p JOIN gpu_models g ON g.key = p.gpu_model)"
#define DB_MON_WATCHED_MP " h.state IN " DB_MON_WATCHED " AND mp.enabled"

/* One host a worker holds, with what sampling it needs. Strings owned (db_mon_hosts_free). */
struct db_mon_host {
    char *id, *name, *address, *user, *credential_id, *host_key_sha256, *state, *pool_id;
    char *xid_policy;  /* the pool's monitor.xid_policy object as JSON text, or NULL */
    char *kmsg_cursor; /* where the last sample's kernel log read ended, or NULL */
    /* {"GPU-…": n}: the uncorrectable ECC counts stored for the host's present GPUs (the
     * baseline a worker taking the host over compares with), or NULL when none */
    char *ecc_baseline;
    double kmsg_mono; /* the dmesg mark (seconds since boot), or -1 */
    int port, held, gpu_count, nvswitch, enabled;
    int interval_s, unreachable_after, missed;
    long since_sample_ms; /* since the last stored sample, or -1 when never */
};

struct db_mon_claim {
    const char *owner;
    int period_s; /* how often each worker claims: its lease lasts 3 periods */
    int max;      /* the most hosts this worker holds */
    int full;     /* read back every host held, not only those whose configuration changed */
    /* out */
    struct db_mon_host *hosts; /* full: every host held; else the new and changed ones */
    int nhosts;
    char **dropped; /* ids of the hosts given up by this claim (NULL-terminated, or NULL) */
    int ndropped;
    int owned; /* how many hosts the worker holds after the claim */
    int live_workers, share;
};

/* In one transaction: renews this worker's lease (which covers every host it owns),
 * gives up its hosts no longer watched and those above its fair share, frees the hosts of
 * workers whose lease lapsed, takes free hosts up to the share, and reads back the hosts
 * it holds: all of them with full, else only those new to it or whose configuration
 * (host_monitor.seen_config) changed. A worker that holds other hosts than hosts[] and
 * its earlier claims say (owned differs from its count) claims again with full. */
enum db_status db_mon_claim(struct db_conn *c, struct db_mon_claim *cl);
/* Frees what a claim returned (hosts and dropped) and zeroes them. */
void db_mon_claim_clear(struct db_mon_claim *cl);
void db_mon_hosts_free(struct db_mon_host *h, int n);
/* Frees the strings of one row (the row itself is the caller's). */
void db_mon_host_clear(struct db_mon_host *h);

/* Gives every host of owner back (a worker that stops); the leases stay until they lapse,
 * so no other worker samples them sooner. */
enum db_status db_mon_release_all(struct db_conn *c, const char *owner);

/* The host's state as the monitor's policy reads it (planner/monitor_policy.h): its
 * state, its quarantine hold, and when unreachable the state it had before ("" unknown).
 * db/ stores and reads; the policy decides and the service applies (provisioner/monitor/). */
struct db_mon_state {
    char state[24], back[24];
    int held;
};

/* A sample could not be taken (missed counts the misses in a row): recorded, fenced by the
 * lease; *st read after. DB_NO_RESULTS when the lease is gone (nothing written). */
enum db_status db_mon_store_missed(struct db_conn *c, const char *owner, const char *host_id,
                                   int missed, const char *reason, struct db_mon_state *st);

/* A sample was taken: stored (monitor_store, fenced), *st read after. *result gets
 * monitor_store's answer (caller frees). DB_NO_RESULTS when the lease is gone. */
enum db_status db_mon_store_sample(struct db_conn *c, const char *owner, const char *host_id,
                                   const char *doc, char **result, struct db_mon_state *st);

/* One sample of a group (db_mon_store_group): stored, or fenced out (its host's lease is
 * not this worker's any more: nothing stored). */
struct db_mon_stored {
    int seen;     /* its row came back */
    int stored;   /* 0: fenced out */
    char *result; /* monitor_store's answer (owned; db_mon_stored_clear) */
    struct db_mon_state st;
};

/* Stores the samples docs[i] (JSON texts) of hosts host_ids[i] in one statement
 * (monitor_store_fenced, migrations/0037), each fenced by its own lease, *out[i] its
 * outcome; the caller's transaction holds the leases' rows until it ends. Any error
 * (an invalid document among them too) fails the whole call: nothing is kept by the
 * transaction, and the caller stores the samples one at a time. */
enum db_status db_mon_store_group(struct db_conn *c, const char *owner, int n,
                                  const char *const *host_ids, const char *const *docs,
                                  struct db_mon_stored *out);
/* Frees the results of n outcomes. */
void db_mon_stored_clear(struct db_mon_stored *out, int n);

/* The lease checked and *st read (the host presented another key than its pin).
 * DB_NO_RESULTS when the lease is gone. */
enum db_status db_mon_fenced_state(struct db_conn *c, const char *owner, const char *host_id,
                                   struct db_mon_state *st);

/* The samples' housekeeping, by one worker at a time (an advisory lock; the others skip):
 * rolls up complete buckets, then applies retention (seconds: raw samples, 5-minute and
 * 1-hour rollups, and the gpus rows not seen for keep_s[3], at most 10,000 a call).
 * *ran = 0 when another worker holds the lock. */
enum db_status db_mon_housekeeping(struct db_conn *c, const long keep_s[4], int *ran);

#endif
