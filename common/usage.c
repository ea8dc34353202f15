/* usage.c — see usage.h. */
#include "common/usage.h"

const char *const usage_unit_names[] = {"tokens", "requests", "items", "samples", "vectors", NULL};
