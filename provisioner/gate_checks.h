/* gate_checks.h — the acceptance gate's checks (PRODUCT.md §5) and active diagnostics,
 * as pure logic over command results: each check names its commands (fixed templates,
 * quoted values) and judges their output with the parsers. The worker runs them. */
#ifndef GPUFLEET_GATE_CHECKS_H
#define GPUFLEET_GATE_CHECKS_H

#include <jansson.h>

#include "planner/gate.h"
#include "provisioner/steps.h" /* struct prov_cmd_result */

#define GATE_MAX_CMDS 4
#define GATE_EVIDENCE_MAX 8192

/* What the gate checks against: the pool's expectations and gate definition, the
 * catalog entry of the pool's GPU model, and the host's current stack. */
struct prov_gate {
    const char *image_ref;          /* repository@sha256:… of the current stack */
    const char *driver_version;     /* the stack's pin */
    int expected_gpus;
    const char *expected_gpu_name;  /* catalog nvidia_smi_name (may be NULL: not checked) */
    long expected_memory_mib;       /* catalog nvidia_smi_memory_total_mib (0: not checked) */
    const char *link_class;         /* every GPU pair must match ("any", "NV*", "PIX,PXB" …) */
    double storage_min_mbps;
    const char *durable_path, *scratch_path;
    const json_t *workload_command; /* array of strings, or NULL: the check is skipped */
    const char *workload_metric;
    double workload_min;
    int workload_timeout_s;
    const char *observability_url;  /* or NULL: skipped */
    unsigned checks;                /* bit per enum prov_check; 0 = all */
    int diag_level;                 /* diagnostics jobs: 1..3 */
};

enum prov_check {
    PROV_CHECK_GPU_INVENTORY,
    PROV_CHECK_CONTAINER_GPU,
    PROV_CHECK_WORKLOAD,
    PROV_CHECK_TOPOLOGY,
    PROV_CHECK_STORAGE,
    PROV_CHECK_OBSERVABILITY,
    PROV_CHECK_DIAGNOSTICS, /* dcgmi diag (diagnostics jobs only) */
    PROV_CHECK__COUNT,
};
extern const char *const prov_check_names[]; /* gpu_inventory, container_gpu, … */

struct prov_check_out {
    enum plan_check_status status;
    int hardware_evidence;
    char message[512];
    json_t *values; /* parsed values (owned; may be NULL) */
};

/* Whether the check runs at all for this gate (a skip is still recorded). */
int prov_check_applies(const struct prov_gate *g, enum prov_check c, char *why, size_t n);
/* Number of commands, and each command (caller frees; NULL on a validation failure). */
int prov_check_ncmds(const struct prov_gate *g, enum prov_check c);
char *prov_check_cmd(const struct prov_gate *g, enum prov_check c, int i);
/* Timeout for command i, seconds (0: the worker's default). */
int prov_check_timeout(const struct prov_gate *g, enum prov_check c, int i);
/* Judges the results of all the check's commands. */
void prov_check_eval(const struct prov_gate *g, enum prov_check c,
                     const struct prov_cmd_result *results, int n, struct prov_check_out *out);

#endif
