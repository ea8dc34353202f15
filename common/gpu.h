/* gpu.h — the GPU vocabulary that db/ reads into and planner/ decides on: the numeric
 * precisions and their names, and a catalog model as sizing sees it. Pure data: no
 * arithmetic, no decisions (those are planner/sizing.h's). */
#ifndef GPUFLEET_GPU_H
#define GPUFLEET_GPU_H

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

#endif
