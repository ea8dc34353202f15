/* gpu.h — the GPU vocabulary that db/ reads into and planner/ decides on: the numeric
 * precisions and their names, a catalog model as sizing sees it, and what the health
 * monitor's records say of a host (utilization over a window, isolating events). Pure
 * data: no arithmetic, no decisions (those are planner/sizing.h's and
 * planner/recommend.h's). */
#ifndef GPUFLEET_GPU_H
#define GPUFLEET_GPU_H

#include <stddef.h>

enum gpu_precision { GPU_FP32, GPU_BF16, GPU_FP16, GPU_FP8, GPU_INT8, GPU_INT4 };
/* "fp32", "bf16", … in enum order, NULL-terminated (look one up with util_lookup). */
extern const char *const gpu_precision_names[];

/* A catalog GPU model (db/gpu_models.h reads them, planner/sizing.h fits briefs on them). */
struct gpu_model {
    const char *key, *display_name;
    double memory_gib;   /* marketed GB */
    long smi_memory_mib; /* 0 when unknown */
    unsigned formats;    /* bit (1 << enum gpu_precision) for each supported precision */
};

/* The GPU utilization samples of a host over a window (its pool's idle window). */
struct gpu_util_window {
    long samples;      /* samples (rollup buckets: their sample count) whose GPUs all read */
    long unread;       /* samples with a GPU whose utilization was not read (not counted) */
    int has_util;      /* some reading: max_pct and mean_pct hold */
    double max_pct;    /* the highest utilization.gpu reading */
    double mean_pct;   /* the mean of the readings */
    double interval_s; /* the pool's monitor.interval_seconds (0: the default) */
    int has_last;      /* a sample lies in the window: last_age_s holds */
    double last_age_s; /* seconds from the newest sample in the window to the window's end */
};

/* An open isolating GPU event (gpu_events) of a host quarantined by the monitor. The
 * strings borrow from the caller; raw and message are untrusted host output (cleaned to
 * UTF-8 when written). */
struct gpu_event {
    const char *kind, *category, *gpu_uuid, *pci_bus_id, *raw, *message;
    const char *first_seen, *last_seen; /* RFC 3339 */
    int has_code;
    long code, count;
};

/* A host quarantined by the health monitor (monitor_isolated). */
struct gpu_isolation {
    const char *reason;             /* the quarantine reason, or NULL */
    const char *quarantined_at;     /* RFC 3339, or NULL */
    long open_events;               /* its open isolating events, all of them */
    const struct gpu_event *events; /* the oldest of them, as many as were read */
    size_t nevents;
};

#endif
