/* gate.h — the acceptance gate's verdict (docs/product.md §5). Pure logic.
 *   accept       at least one check, every one passed (or warned, or was skipped) and
 *                recorded
 *   isolate      hardware evidence: a missing GPU, ERR!, uncorrectable ECC errors, pending
 *                row remaps or retired pages, a degraded link
 *   investigate  anything else: a timeout, a configuration mismatch, a slow workload, a
 *                value that could not be read, a check whose entry could not be recorded … */
#ifndef GPUFLEET_GATE_H
#define GPUFLEET_GATE_H

enum plan_check_status {
    PLAN_CHECK_PASS,
    PLAN_CHECK_FAIL,
    PLAN_CHECK_WARN,
    PLAN_CHECK_SKIP,
    PLAN_CHECK_TIMEOUT
};
enum plan_verdict { PLAN_ACCEPT, PLAN_ISOLATE, PLAN_INVESTIGATE };

struct plan_check_outcome {
    const char *name;
    enum plan_check_status status;
    int hardware_evidence; /* the failure points at the hardware */
    int recorded;          /* 1 = the check's entry was recorded; 0 = it ran but its evidence
                              was lost: such a check never accepts, and its own hardware
                              evidence (unrecorded) does not isolate */
};

extern const char *const plan_check_status_names[]; /* "pass", "fail", "warn", "skip", "timeout" */
extern const char *const plan_verdict_names[];      /* "accept", "isolate", "investigate" */

/* The verdict over n checks; reason receives the deciding check(s). No checks (n ≤ 0), a
 * status outside the enum or an unrecorded check never accept. */
enum plan_verdict plan_gate_verdict(const struct plan_check_outcome *checks, int n, char *reason,
                                    unsigned long reasonlen);

#endif
