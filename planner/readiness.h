/* readiness.h — the guides' nine-question production-readiness checklist (docs/product.md §7),
 * answered from recorded facts only. Pure logic over typed facts (api/gates.c fills them
 * from db_readiness_facts). Each answer is yes, no or unknown, with its evidence. */
#ifndef GPUFLEET_READINESS_H
#define GPUFLEET_READINESS_H

#include <jansson.h>

/* One check of a recorded gate run (gate_runs.checks), NULL members when the run has no
 * such check. status decides; values and message are evidence only, shown as they are. */
struct plan_readiness_check {
    const char *status;      /* pass, fail, warn, skip, timeout */
    const char *values_json; /* the check's values as JSON text (embedded as is) */
    const char *message;
};

/* What the checklist is answered from. Every string is borrowed (the caller keeps it
 * alive through plan_readiness) and NULL when there is no such fact; an id is NULL when
 * there is no such row (no current stack, no accepted gate, no gate run yet). */
struct plan_readiness_facts {
    struct {
        const char *id, *state, *host_key_sha256, *current_stack_id;
        const char *filesystems; /* the df -P lines of the last provisioning's facts */
    } host;
    struct {
        const char *id, *key_type;
    } credential;
    struct {
        const char *id, *durable_path, *scratch_path, *stop_command;
        int auto_stop;
        int has_idle_stop_after; /* 0: the spec has no idle_stop_after_seconds */
        long idle_stop_after_seconds;
    } pool;
    struct { /* the host's current stack */
        const char *id, *image_digest, *driver_version, *cuda_version;
    } stack;
    struct { /* the host's accepted gate run */
        const char *id, *stack_id;
        struct plan_readiness_check topology, workload;
    } accepted_gate;
    struct { /* the host's newest run of kind gate, whatever its verdict */
        const char *id;
        struct plan_readiness_check observability;
    } last_gate;
    long accepted_gate_runs;       /* gate runs of the host with verdict accept */
    long successful_provisionings; /* provision jobs of the host that succeeded */
    struct {                       /* the newest restore drill of the host's pool (id NULL: none) */
        const char *id, *host_id, *verdict, *reason, *finished_at;
        double recovery_seconds, max_recovery_seconds; /* < 0: not recorded */
        double age_seconds;
        long every_days; /* the pool's drill.every_days, 0: none */
    } drill;
};

/* Returns {"host_id", "state", "questions": [{id, question, answer, evidence}],
 * "summary": {"yes", "of": 9}}. Question 8 (recovery) answers from the newest restore drill
 * of the host's pool: yes when it passed (and, with drill.every_days, is not older than
 * that), no otherwise or without one. The accepted gate answers topology and baseline only when
 * it covers the current stack (plan_gate_covers_stack). New reference; NULL only when out
 * of memory. */
json_t *plan_readiness(const struct plan_readiness_facts *f);

#endif
