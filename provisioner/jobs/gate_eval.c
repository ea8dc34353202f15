/* gate_eval.c — see gate_eval.h: the gate's shared tables and the helpers every judge
 * uses. */
#include "provisioner/jobs/gate_eval.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

const char *const prov_check_names[] = {"gpu_inventory", "container_gpu", "workload",
                                        "topology",      "storage",       "observability",
                                        "bandwidth",     "diagnostics",   "storage_throughput"};

const char *const prov_inv_fields[] = {"index",
                                       "name",
                                       "uuid",
                                       "memory.total",
                                       "driver_version",
                                       "pci.bus_id",
                                       "ecc.errors.uncorrected.volatile.total",
                                       "retired_pages.pending",
                                       "remapped_rows.pending"};

const char *gate_text_of(const struct prov_cmd_result *r)
{
    return r->err && *r->err ? r->err : r->out ? r->out : "";
}

const char *gate_out_of(const struct prov_cmd_result *r)
{
    return r->out ? r->out : "";
}

/* The message is formatted, then cleaned: valid UTF-8 whatever went into it. */
void gate_set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt, ...)
{
    char buf[2 * sizeof o->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->status = st;
    o->hardware_evidence = hw;
    utf8_clean(buf, strlen(buf), o->message, sizeof o->message);
}

/* Appends one part to the "; "-separated text in buf[cap]; a part that does not fit is
 * left out, marked once by "…" (room for which is always kept). Parts are never cut. */
void gate_addf(char *buf, size_t cap, const char *fmt, ...)
{
    static const char more[] = "…";
    char part[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof part, fmt, ap);
    va_end(ap);
    size_t used = strlen(buf), len = strlen(part);
    int marked = used >= sizeof more - 1 && strcmp(buf + used - (sizeof more - 1), more) == 0;
    if (used + 2 + len + sizeof more <= cap)
        snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", part);
    else if (!marked && used + 2 + sizeof more <= cap)
        snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", more);
}

/* Host text as a JSON string (cleaned), or null for NULL. */
json_t *gate_jtext(const char *s)
{
    return s ? utf8_json(s, strlen(s)) : json_null();
}

/* Host text bounded to a short cleaned quote; "nothing" when empty. */
const char *gate_quote(const char *s, char *buf, size_t n)
{
    utf8_first_line(s, buf, n);
    return buf[0] ? buf : "nothing";
}
