/* gpu.c — see gpu.h. */
#include "common/gpu.h"

#include <stddef.h>

const char *const gpu_precision_names[] = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", NULL};
