/* gate_bandwidth.h — the gate's bandwidth reference check (issue 26; docs/hosts-and-gates.md
 * "Bandwidth reference"): nccl-tests all_reduce_perf and/or nvbandwidth, run from the
 * pool's tool directory or inside the stack's pinned image, judged against the pool's
 * minimums or the catalog's (data/bandwidth_reference.csv), with the CPU/NUMA/NIC affinity
 * (nvidia-smi topo -m, numactl -H or lscpu) recorded as evidence.
 *
 * Commands, in order: `nvidia-smi topo -m`, `numactl -H || lscpu`, then the tools
 * (all_reduce_perf when the pool has more than one GPU and its tool is nccl or both;
 * nvbandwidth when the tool is nvbandwidth or both, or for host_to_device): the tools'
 * output is the tail of the check's evidence, the part that is kept. */
#ifndef GPUFLEET_GATE_BANDWIDTH_H
#define GPUFLEET_GATE_BANDWIDTH_H

#include <jansson.h>

#include "provisioner/jobs/gate_eval.h"

/* Fills g->bw from the stored pool document (gate.bandwidth, gpu_model, interconnect);
 * the strings point into pool. */
void gate_bw_config(struct prov_gate *g, const json_t *pool);
int gate_bw_applies(const struct prov_gate *g, char *why, size_t n);
int gate_bw_ncmds(const struct prov_gate *g);
char *gate_bw_cmd(const struct prov_gate *g, int i);
int gate_bw_timeout(const struct prov_gate *g, int i);
/* WORKLOAD for the tools (their own timeout; a hang is the check's timeout), QUERY for
 * the affinity commands. */
int gate_bw_is_tool(const struct prov_gate *g, int i);
void gate_eval_bandwidth(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o);

#endif
