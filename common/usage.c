/* usage.c — see usage.h. */
#include "common/usage.h"

const char *const usage_unit_names[] = {"tokens", "requests", "items", "samples", "vectors", NULL};

const char *const usage_phase_names[] = {"queue",         "load",  "preprocess", "compute",
                                         "communication", "write", NULL};

const char *const usage_failure_names[] = {"oom",       "timeout", "data", "hardware",
                                           "preempted", "other",   NULL};
