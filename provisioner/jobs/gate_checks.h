/* gate_checks.h — the acceptance gate's checks (docs/product.md §5) and active diagnostics,
 * as pure logic over command results: each check names its commands (fixed templates,
 * quoted values) and judges their output with the parsers. The worker runs them. */
#ifndef GPUFLEET_GATE_CHECKS_H
#define GPUFLEET_GATE_CHECKS_H

#include <jansson.h>

/* The gate's types (struct prov_gate, enum prov_check, struct prov_check_out) */
#include "provisioner/jobs/gate_eval.h"

/* Whether the check runs at all for this gate (a skip is still recorded). */
int prov_check_applies(const struct prov_gate *g, enum prov_check c, char *why, size_t n);
/* Number of commands, and each command (caller frees; NULL on a validation failure). */
int prov_check_ncmds(const struct prov_gate *g, enum prov_check c);
char *prov_check_cmd(const struct prov_gate *g, enum prov_check c, int i);
/* Timeout for command i, seconds (0: the worker's default for its class): the workload's
 * own timeout_s (default 300); the bandwidth tools' gate.bandwidth.timeout_seconds. */
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
