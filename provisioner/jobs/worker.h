/* worker.h — job workers: each thread runs one libssh2 event loop that drives every job
 * it holds, claims work with FOR UPDATE SKIP LOCKED when woken by LISTEN/NOTIFY (or every
 * second), renews leases, and fences every completing write with the attempt number.
 * Each worker's database work (claims, heartbeats, step records, loads, finishing writes)
 * runs on db_writers threads of its own, each borrowing a connection from the shared pool
 * per write: size the pool for threads × (db_writers + 1) beyond what the API uses. */
#ifndef GPUFLEET_WORKER_H
#define GPUFLEET_WORKER_H

#define PROV_DB_WRITERS 4 /* writer threads per worker thread, by default */

struct prov_worker_config {
    const char *database_url; /* for the LISTEN connections */
    int threads;              /* worker threads (GPUFLEET_WORKERS) */
    int concurrency;          /* jobs held at once per thread */
    int lease_s;              /* lease length; renewed every lease_s / 3 */
    int command_timeout_s;    /* upper bound on every remote command */
    int query_timeout_s;      /* class query: nvidia-smi, docker version/inspect, files */
    int pull_timeout_s;       /* class pull: docker pull */
    int stop_timeout_s;       /* the pool's stop command */
    int container_timeout_s;  /* docker run of the pinned image (container_gpu) */
    int connect_timeout_s;
    const char *allow_cidrs;   /* GPUFLEET_SSH_ALLOW_CIDRS */
    int diag_timeout_s[3];     /* dcgmi diag -r 1, 2, 3 */
    int db_writers;            /* database writer threads per worker (0: PROV_DB_WRITERS) */
    int monitor;               /* run the health monitor (monitor.h) beside the jobs */
    long monitor_keep_s[4];    /* retention of raw samples, 5-minute and 1-hour rollups, GPU rows */
    long monitor_kmsg_page;    /* kernel log entries a sample reads at most (0: the default) */
    long monitor_kmsg_backlog; /* entries behind that are read later; more are skipped */
    int monitor_group_max;     /* samples committed in one transaction (0: the per-sample path
                                * of five round trips, kept for bench/monitor) */
    int monitor_group_ms;      /* a group collects samples this long at most */
};

/* Starts the worker threads (uses the shared db pool). Returns 0. */
int prov_workers_start(const struct prov_worker_config *cfg);
/* Asks them to stop and joins them. Jobs they hold are left to their leases. */
void prov_workers_stop(void);

#endif
