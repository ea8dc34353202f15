/* baseline.c — see baseline.h. */
#include "common/baseline.h"

const char *const baseline_cond_names[BL__COUNT] = {
    [BL_FRAMEWORK] = "framework",
    [BL_MODEL_REVISION] = "model_revision",
    [BL_GPU_MODEL] = "gpu_model",
    [BL_GPU_COUNT] = "gpu_count",
    [BL_WORKLOAD_HASH] = "workload_hash",
    [BL_METRIC] = "metric",
    [BL_INPUT] = "input",
    [BL_CONCURRENCY] = "concurrency",
    [BL_CACHE] = "cache",
};

int baseline_cond_is_int(enum baseline_cond c)
{
    return c == BL_GPU_COUNT || c == BL_CONCURRENCY;
}
