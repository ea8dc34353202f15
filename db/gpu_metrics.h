/* gpu_metrics.h — what /metrics shows of the health monitor (api/metrics.c renders it):
 * the latest readings of every GPU, the health events recorded per GPU, each host's last
 * sample, and the watched hosts by state.
 *
 * Only watched hosts appear (the states the monitor samples, db/monitor_lease.h, in a pool
 * that did not turn the monitor off): a stopped, deleted or re-provisioned host, and its
 * GPUs, leave the output at once. A reading is given only while it is current: the GPU
 * was listed by its host's newest sample, and that sample is at most two of its pool's
 * monitor intervals old; otherwise it is NAN (never a made-up 0). */
#ifndef GPUFLEET_DB_GPU_METRICS_H
#define GPUFLEET_DB_GPU_METRICS_H

#include <stddef.h>

#include "db/db.h"

/* The readings of a GPU, in the order of db_gpu_metric.reading. */
enum db_gpu_reading {
    DB_GPU_UTIL_GPU,      /* utilization.gpu, percent */
    DB_GPU_UTIL_MEM,      /* utilization.memory, percent */
    DB_GPU_MEM_USED_MIB,  /* memory.used, MiB */
    DB_GPU_MEM_TOTAL_MIB, /* memory.total, MiB */
    DB_GPU_TEMP_C,        /* temperature.gpu, degrees Celsius */
    DB_GPU_POWER_W,       /* power.draw, watts */
    DB_GPU_ECC_UNCORR,    /* ecc.errors.uncorrected.volatile.total */
    DB_GPU_RETIRED_PEND,  /* retired_pages.pending, 0 or 1 */
    DB_GPU_REMAP_PEND,    /* remapped_rows.pending, 0 or 1 */
    DB_GPU_REMAP_FAILURE, /* remapped_rows.failure, 0 or 1 */
    DB_GPU_NREADINGS
};

/* Strings are borrowed from the result (valid until db_gpu_metrics_free). */
struct db_gpu_metric {
    const char *host, *pool, *uuid;
    const char *model;                /* product name as nvidia-smi prints it, or NULL */
    const char *pci_bus_id;           /* or NULL */
    long index;                       /* nvidia-smi's index, or -1 when unknown */
    double last_seen;                 /* Unix time of the newest sample that listed it */
    int missing;                      /* the newest sample of its host did not list it */
    double reading[DB_GPU_NREADINGS]; /* NAN: not read, or not current */
};

struct db_gpu_event_count {
    const char *host, *pool;
    const char *gpu_uuid; /* NULL: the host as a whole, or a GPU not identified */
    const char *kind;
    const char *category; /* or NULL */
    long code;            /* the Xid or SXid number, or -1 */
    long long total;      /* occurrences recorded (gpu_event_counts): never decreases */
};

struct db_gpu_metrics_host {
    const char *host, *pool;
    double last_sample_at; /* Unix time of its newest stored sample; NAN: never sampled */
};

struct db_gpu_metrics_state {
    const char *state, *monitor_state;
    long hosts;
};

struct db_gpu_metrics {
    struct db_gpu_metric *gpus; /* ordered by host, GPU index, UUID */
    size_t ngpus;
    struct db_gpu_event_count *events; /* ordered by host, GPU, kind, code, category */
    size_t nevents;
    struct db_gpu_metrics_host *hosts; /* ordered by name */
    size_t nhosts;
    struct db_gpu_metrics_state *states; /* watched hosts by host and monitor state */
    size_t nstates;
    void *res[4]; /* the results the strings point into (opaque) */
};

/* Reads everything above on a pooled connection, four statements. On success (>= 0)
 * *m holds the rows (db_gpu_metrics_free it); on failure it is empty. */
enum db_status db_gpu_metrics_read(struct db_gpu_metrics *m);
void db_gpu_metrics_free(struct db_gpu_metrics *m);

#endif
