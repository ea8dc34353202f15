/* gate_eval.h — internal to the gate's judges (gate_checks.c, gate_inventory.c,
 * gate_judges.c): the helpers they share and one judge per check. Every message a judge
 * sets is valid UTF-8 (gate_set cleans it) and claims only what was read. */
#ifndef GPUFLEET_GATE_EVAL_H
#define GPUFLEET_GATE_EVAL_H

#include "provisioner/jobs/gate_checks.h"

/* Indexes into prov_inv_fields. */
enum { F_INDEX, F_NAME, F_UUID, F_MEMORY, F_DRIVER, F_BUS, F_ECC, F_RETIRED, F_REMAPPED };

/* What a command said: stderr when it has any, else stdout (never NULL). */
const char *gate_text_of(const struct prov_cmd_result *r);
/* stdout, never NULL. */
const char *gate_out_of(const struct prov_cmd_result *r);
/* Sets status, hardware evidence and the message (formatted, then cleaned). */
void gate_set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends one part to a "; "-separated text in buf[cap] (a part that does not fit is left
 * out, marked once by "…"). */
void gate_addf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Host text as a JSON string (cleaned), or null for NULL. */
json_t *gate_jtext(const char *s);
/* Host text bounded to a short cleaned quote; "nothing" when empty. */
const char *gate_quote(const char *s, char *buf, size_t n);

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
