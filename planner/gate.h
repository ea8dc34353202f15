/* gate.h — the acceptance gate's verdict (PRODUCT.md §5). Pure logic.
 *   accept       every check passed (or warned, or was skipped)
 *   isolate      hardware evidence: a missing GPU, ERR!, uncorrectable ECC errors, pending
 *                row remaps or retired pages, a degraded link
 *   investigate  anything else: a timeout, a configuration mismatch, a slow workload … */
#ifndef GPUFLEET_GATE_H
#define GPUFLEET_GATE_H

enum plan_check_status { PLAN_CHECK_PASS, PLAN_CHECK_FAIL, PLAN_CHECK_WARN, PLAN_CHECK_SKIP,
                         PLAN_CHECK_TIMEOUT };
enum plan_verdict { PLAN_ACCEPT, PLAN_ISOLATE, PLAN_INVESTIGATE };

struct plan_check_outcome {
    const char *name;
    enum plan_check_status status;
    int hardware_evidence; /* the failure points at the hardware */
};

extern const char *const plan_check_status_names[]; /* "pass", "fail", "warn", "skip", "timeout" */
extern const char *const plan_verdict_names[];      /* "accept", "isolate", "investigate" */

/* The verdict over n checks; *reason names the deciding check(s) (static or in buf). */
enum plan_verdict plan_gate_verdict(const struct plan_check_outcome *checks, int n, char *reason,
                                    unsigned long reasonlen);

#endif
