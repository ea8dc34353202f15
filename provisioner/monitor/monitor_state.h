/* monitor_state.h — what the health monitor's readings do to a host, in the write's
 * transaction: db/ stores the reading (fenced by the monitor's lease) and reads the host's
 * state, planner/monitor_policy.h decides, and the one host-command path applies
 * (provisioner/host_port.h) as the monitor's owner, audited on the host's health. */
#ifndef GPUFLEET_PROV_MONITOR_STATE_H
#define GPUFLEET_PROV_MONITOR_STATE_H

#include "db/db.h"

/* Each: DB_NO_RESULTS when the lease is gone (nothing written); *state gets the host's
 * state afterwards. */

/* A sample could not be taken (missed in a row): unreachable_after misses make a serving
 * host unreachable. */
enum db_status mon_missed_tx(struct db_conn *c, const char *owner, const char *host_id, int missed,
                             int unreachable_after, const char *reason, char state[24]);

/* A sample was taken: stored (*result: monitor_store's answer, caller frees); an
 * unreachable host comes back; an isolating reading (isolate_reason not NULL) quarantines
 * it. */
enum db_status mon_sampled_tx(struct db_conn *c, const char *owner, const char *host_id,
                              const char *doc, const char *isolate_reason, char state[24],
                              char **result);

/* One sample of a group (mon_sampled_group_tx). */
struct mon_group_item {
    const char *host_id, *doc;
    const char *isolate;   /* why the reading isolates the host, or NULL */
    char *state;           /* [24]: the host's state afterwards ("" when fenced out) */
    char **result;         /* monitor_store's answer (replaced; the caller frees) */
    enum db_status status; /* DB_ONE_RESULT stored, DB_NO_RESULTS fenced out */
};

/* The samples of many hosts in the caller's transaction: one statement stores them, each
 * fenced by its own lease (a host this worker lost is not stored and not acted on; the
 * others are), then each stored one is acted on as mon_sampled_tx does. Any error fails
 * the whole group (the transaction keeps nothing; the caller retries each sample alone). */
enum db_status mon_sampled_group_tx(struct db_conn *c, const char *owner, struct mon_group_item *it,
                                    int n);

/* The host presented another key than its pin: a watched host not quarantined yet is. */
enum db_status mon_key_mismatch_tx(struct db_conn *c, const char *owner, const char *host_id,
                                   const char *reason, char state[24]);

#endif
