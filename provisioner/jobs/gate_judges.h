/* gate_judges.h — one judge per check: gpu_inventory (gate_inventory.c) and the others
 * (gate_judges.c). prov_check_eval (gate_checks.c) calls them; they build on gate_eval.h
 * only. Each sets o's status, hardware evidence, message and values. */
#ifndef GPUFLEET_GATE_JUDGES_H
#define GPUFLEET_GATE_JUDGES_H

#include "provisioner/jobs/gate_eval.h"

void gate_eval_inventory(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o);
void gate_eval_container(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o);
void gate_eval_workload(const struct prov_gate *g, const struct prov_cmd_result *r,
                        struct prov_check_out *o);
void gate_eval_topology(const struct prov_gate *g, const struct prov_cmd_result *r,
                        struct prov_check_out *o);
void gate_eval_storage(const struct prov_gate *g, const struct prov_cmd_result *r,
                       struct prov_check_out *o);
void gate_eval_observability(const struct prov_gate *g, const struct prov_cmd_result *r,
                             struct prov_check_out *o);
void gate_eval_diagnostics(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o);

#endif
