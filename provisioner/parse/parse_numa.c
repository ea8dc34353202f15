/* parse_numa.c — the host's NUMA layout (parse_perf.h; tests/fixtures/perf/SOURCES.md §6):
 *   numactl -H:   "available: 2 nodes (0-1)", "node 0 cpus: 0 1 2 …" (or "0-15 (16)" with
 *                 --cpu-compress), "node 1 cpus:" (none);
 *   lscpu:        "NUMA node(s): 2", "NUMA node0 CPU(s): 0-103" (flat, or indented under a
 *                 "NUMA:" heading with trailing spaces on empty values).
 * Memory-only nodes (GH200's HBM nodes) have an empty CPU list: counted, not CPU nodes. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_internal.h"
#include "provisioner/parse/parse_perf.h"

static void set_cpus(prov_numa_t *o, long node, prov_span_t list)
{
    if (node < 0 || node >= PROV_NUMA_NODES)
        return;
    list = prov_trim(list);
    if (o->cpus[node][0] == '\0' && list.n > 0)
        o->nodes_with_cpus++;
    prov_span_copy(o->cpus[node], sizeof o->cpus[node], list);
    o->nlisted++;
}

static long leading_uint(prov_span_t s, size_t *used)
{
    size_t i = 0;
    long v = 0;
    while (i < s.n && isdigit((unsigned char)s.p[i]) && i < 6)
        v = v * 10 + (s.p[i++] - '0');
    *used = i;
    return i > 0 ? v : -1;
}

int prov_numa_parse(const char *text, size_t len, prov_numa_t *out)
{
    memset(out, 0, sizeof *out);
    if (text == NULL)
        return -1;
    prov_lines_t it;
    prov_lines_init(&it, text, len);
    prov_span_t line;
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        size_t used;
        if (prov_span_starts(t, "available:")) {
            long n = leading_uint(prov_trim(prov_span_from(t, 10)), &used);
            if (n >= 0 && n <= PROV_NUMA_NODES) {
                out->nnodes = (int)n;
                out->from_numactl = true;
            }
        } else if (prov_span_starts(t, "node ") && prov_span_find(t, " cpus:") > 0) {
            long node = leading_uint(prov_span_from(t, 5), &used);
            long c = prov_span_find(t, "cpus:");
            prov_span_t list = prov_span_from(t, (size_t)c + 5);
            long paren = prov_span_find(list, "(");
            if (paren >= 0) /* --cpu-compress: "0-15 (16)" */
                list.n = (size_t)paren;
            set_cpus(out, node, list);
            out->from_numactl = true;
        } else if (prov_span_starts(t, "NUMA node(s):")) {
            long n = leading_uint(prov_trim(prov_span_from(t, 13)), &used);
            if (n >= 0 && n <= PROV_NUMA_NODES) {
                out->nnodes = (int)n;
                out->from_lscpu = true;
            }
        } else if (prov_span_starts(t, "NUMA node") && prov_span_find(t, "CPU(s):") > 0) {
            long node = leading_uint(prov_span_from(t, 9), &used);
            long c = prov_span_find(t, "CPU(s):");
            if (used > 0 && (size_t)c == 9 + used + 1)
                set_cpus(out, node, prov_span_from(t, (size_t)c + 7));
            out->from_lscpu = true;
        }
    }
    if (out->nnodes == 0)
        out->nnodes = out->nlisted;
    return out->nnodes > 0 ? 0 : -1;
}
