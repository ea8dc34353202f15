/* gate_checks.h — the acceptance gate's checks (docs/product.md §5) and active diagnostics,
 * as pure logic over command results: each check names its commands (fixed templates,
 * quoted values) and judges their output with the parsers. The worker runs them. */
#ifndef GPUFLEET_GATE_CHECKS_H
#define GPUFLEET_GATE_CHECKS_H

#include <jansson.h>

#include "planner/gate.h"
#include "provisioner/jobs/steps.h" /* struct prov_cmd_result */

#define GATE_MAX_CMDS     4
#define GATE_EVIDENCE_MAX 8192

/* What the gate checks against: the pool's expectations and gate definition, the
 * catalog entry of the pool's GPU model, and the host's current stack. */
struct prov_gate {
    const char *image_ref;      /* repository@sha256:… of the current stack */
    const char *driver_version; /* the stack's pin */
    int expected_gpus;
    const char *expected_gpu_name; /* catalog nvidia_smi_name (may be NULL: not checked) */
    long expected_memory_mib;      /* catalog nvidia_smi_memory_total_mib (0: not checked) */
    const char *link_class;        /* every GPU pair must match ("any", "NV*", "PIX,PXB" …) */
    double storage_min_mbps;
    const char *durable_path, *scratch_path;
    const json_t *workload_command; /* array of strings, or NULL: the check is skipped */
    const char *workload_metric;
    double workload_min;
    int workload_timeout_s;
    const char *observability_url; /* or NULL: skipped */
    unsigned checks;               /* bit per enum prov_check; 0 = all */
    int diag_level;                /* diagnostics jobs: 1..3 */
    /* Query fields this GPU model legitimately reports as [N/A] or [Not Supported]
     * (catalog; comma-separated, e.g. "retired_pages.pending" on H100/A100): those pass and
     * are listed in values.not_applicable. NULL: every field the gate needs must read. */
    const char *na_fields;
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
/* The fields gpu_inventory queries (nvidia-smi --query-gpu=…), in order. */
#define PROV_INV_NFIELDS 9
extern const char *const prov_inv_fields[PROV_INV_NFIELDS];

/* A judged check. message is always valid UTF-8 (host output in it is cleaned and cut
 * at a character boundary), and so is every string in values. A value a rule needs that
 * could not be read fails the check (investigate) and the message names it. */
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
/* Timeout for command i, seconds (0: the worker's default for its class): the workload's
 * own timeout_s (default 300). */
int prov_check_timeout(const struct prov_gate *g, enum prov_check c, int i);
/* Class of command i: QUERY for nvidia-smi, dd, curl; WORKLOAD for the commands that start a
 * container of the pinned image (container_gpu, workload); DIAG for dcgmi. */
enum prov_cmd_class prov_check_cmd_class(const struct prov_gate *g, enum prov_check c, int i);
/* Judges the results of all the check's commands (n results, one per command; fewer fails
 * the check). */
void prov_check_eval(const struct prov_gate *g, enum prov_check c,
                     const struct prov_cmd_result *results, int n, struct prov_check_out *out);

/* The recorded JSON entry of a check (new reference, caller owns):
 *   {name, status, hardware_evidence, message, evidence, values, duration_ms,
 *    phases: {command_ms, parse_ms}}
 * evidence keeps the last GATE_EVIDENCE_MAX bytes of evidence[0..evidence_len) (the
 * commands' outputs), cleaned; o->values is referenced (not stolen). Never fails on the
 * bytes of evidence or message, nor on a status outside the enum (recorded "fail") or
 * non-finite times (recorded 0): NULL only when out of memory. */
json_t *prov_check_entry(const char *check_name, const struct prov_check_out *o,
                         const char *evidence, size_t evidence_len, double command_ms,
                         double parse_ms);

/* What to say when a command did not answer within its timeout, by its first word:
 *   "nvidia-smi did not answer in 30 s: the GPU may have fallen off the bus"
 *   "docker did not answer in 30 s: the container runtime may be hung"
 *   "`dd` did not answer in 30 s" (the word cleaned and bounded) */
void prov_timeout_message(char *buf, size_t n, const char *cmd, int seconds);

#endif
