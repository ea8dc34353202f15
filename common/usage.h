/* usage.h — the vocabulary of work usage that db/ reads into and planner/costs.h prices:
 * the units work is counted in, a pool's prices, and the rows a cost window is made of
 * (hosts with their prices and held time, work reports summed per host, brief and unit).
 * Pure data: the arithmetic and the grouping are planner/costs.h's. */
#ifndef GPUFLEET_USAGE_H
#define GPUFLEET_USAGE_H

#include <stddef.h>

enum usage_unit {
    USAGE_UNIT_TOKENS,
    USAGE_UNIT_REQUESTS,
    USAGE_UNIT_ITEMS,
    USAGE_UNIT_SAMPLES,
    USAGE_UNIT_VECTORS,
    USAGE_UNIT_COUNT
};
/* "tokens", "requests", … in enum order, NULL-terminated (look one up with util_lookup). */
extern const char *const usage_unit_names[];

/* The phases of a work report's time (docs/costs-and-recommendations.md): queue and
 * cold start, artifact download or model load, CPU preprocessing, GPU compute,
 * GPU-to-GPU or node-to-node communication, output or checkpoint write. */
enum usage_phase {
    USAGE_PHASE_QUEUE,
    USAGE_PHASE_LOAD,
    USAGE_PHASE_PREPROCESS,
    USAGE_PHASE_COMPUTE,
    USAGE_PHASE_COMMUNICATION,
    USAGE_PHASE_WRITE,
    USAGE_PHASE_COUNT
};
/* "queue", "load", … in enum order, NULL-terminated. */
extern const char *const usage_phase_names[];

/* Phases summed over some reports: Σ seconds per phase (0 for a phase none gave), how
 * many reports gave phases and Σ busy_seconds of those reports. Reports without phases
 * add nothing here. */
struct usage_phases {
    double seconds[USAGE_PHASE_COUNT];
    long reports;
    double busy_seconds;
};

/* The classes of failed and retried work (work reports' `failures`, migrations/0035):
 * out of memory, timeout, bad input data, hardware fault, preempted, anything else. */
enum usage_failure {
    USAGE_FAIL_OOM,
    USAGE_FAIL_TIMEOUT,
    USAGE_FAIL_DATA,
    USAGE_FAIL_HARDWARE,
    USAGE_FAIL_PREEMPTED,
    USAGE_FAIL_OTHER,
    USAGE_FAIL_COUNT
};
/* "oom", "timeout", … in enum order, NULL-terminated. */
extern const char *const usage_failure_names[];

/* Failure classes summed over some reports: Σ units per class (0 for a class none gave),
 * how many reports classified their failures and Σ failed + retried of those reports.
 * Reports without failures add nothing here. */
struct usage_failures {
    double units[USAGE_FAIL_COUNT];
    long reports;
    double of_units;
};

/* A pool's prices. */
struct usage_prices {
    double per_hour;
    double storage_per_gb_month;
    double egress_per_gb;
    double overhead_pct; /* 0..100 */
};

/* A host held or reporting in the window, with its pool's prices and its project. */
struct usage_host {
    const char *id, *name, *pool_id, *pool_name, *project_id, *project_name;
    struct usage_prices prices;
    double held_seconds;
};

/* The reports of one host, brief and unit in the window, summed. */
struct usage_row {
    size_t host;                       /* index into the hosts */
    const char *brief_id, *brief_name; /* NULL when the reports named no brief */
    int unit;                          /* enum usage_unit, or -1 when unknown */
    long reports;
    double completed, failed, retried, busy_seconds;
    double covered_seconds; /* Σ report window lengths */
    double storage_gb_seconds, storage_seconds, bytes_moved;
    struct usage_phases phases;     /* zero where the read does not ask for them */
    struct usage_failures failures; /* likewise */
};

#endif
