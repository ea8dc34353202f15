/* gate_targeted.h — targeted diagnostics (POST /v1/hosts/{id}/diagnostics with "tests"):
 * which gate checks the tests run, and each one's comparison with the host's newest
 * accepted gate that recorded the same check ("same workload, one parameter changed":
 * docs/hosts-and-gates.md, "Targeted diagnostics"). Pure: no I/O. */
#ifndef GPUFLEET_GATE_TARGETED_H
#define GPUFLEET_GATE_TARGETED_H

#include <jansson.h>

#define PROV_TARGETED_MAX 3

struct prov_targeted {
    int n;
    const char *test[PROV_TARGETED_MAX];  /* "storage", "bandwidth", "workload" */
    const char *check[PROV_TARGETED_MAX]; /* the gate check's name */
    int id[PROV_TARGETED_MAX];            /* its enum prov_check, -1 when this build has none */
};

/* Reads the job's tests (a JSON array text of known test names): 0, or -1 when it does
 * not read or names an unknown test (the job then fails: the API let nothing else in). */
int prov_targeted_parse(const char *tests_json, struct prov_targeted *t);

/* The comparison of one targeted check with the previous accepted gate's entry for it:
 *   {test, check, against, previous: {gate_run_id, finished_at, stack_id} | null,
 *    conditions: {…now}, differing: [{condition, now, previous}], changed: name | null,
 *    comparable: bool, values: {key: {now, previous, delta_pct}}, pool: {…}, summary}
 * and for the workload, when the pool has baselines of the same workload (pool_baselines:
 * {matched, reference, metric, baselines}), baselines: {matched, reference, now,
 * delta_pct, baselines: [ids]}.
 * comparable: a previous run exists, both have values, and at most one condition
 * differs (the one parameter changed, named by `changed`). previous_all is the context's
 * {check: {gate_run_id, finished_at, stack_id, values}} (may be NULL); stack_id the stack
 * the check ran on now. A new reference (NULL when out of memory). */
json_t *prov_targeted_compare(const char *test, const char *check, const json_t *values,
                              const json_t *previous_all, const char *stack_id,
                              const json_t *pool_baselines);

#endif
