/* baseline.h — a throughput baseline as db/ reads it and planner/baseline.h matches it
 * (docs/rollouts.md §1, migrations/0020_baselines.sql): its conditions, their names and
 * types, and its value. Pure data: which baselines match, and the comparison, are the
 * planner's. */
#ifndef GPUFLEET_BASELINE_H
#define GPUFLEET_BASELINE_H

enum baseline_cond {
    BL_FRAMEWORK,
    BL_MODEL_REVISION,
    BL_GPU_MODEL,
    BL_GPU_COUNT,
    BL_WORKLOAD_HASH,
    BL_METRIC,
    BL_INPUT,
    BL_CONCURRENCY,
    BL_CACHE,
    BL__COUNT
};
/* The conditions' names, as in the table and in the comparison document. */
extern const char *const baseline_cond_names[BL__COUNT];
/* 1 when the condition is an integer one (gpu_count, concurrency), 0 for text. */
int baseline_cond_is_int(enum baseline_cond c);

/* One condition's value: a string (text conditions) or an integer (gpu_count,
 * concurrency); is_null when the baseline has none. */
struct baseline_value {
    int is_null;
    const char *s; /* text conditions (borrowed) */
    long i;        /* gpu_count, concurrency */
};

/* A baseline: its id, its conditions and its value. */
struct baseline {
    const char *id; /* borrowed */
    struct baseline_value cond[BL__COUNT];
    double value;
};

#endif
