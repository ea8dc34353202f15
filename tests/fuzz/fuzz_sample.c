/* libFuzzer target: one monitor sample (--query-gpu CSV, with the monitor's field list
 * and with a header) and the Fabric section of nvidia-smi -q.  Aborts when a value
 * marked OK is out of its field's range or a verdict disagrees with its counts.  Run
 * by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (j && !s)
        abort();
    free(s);
    json_decref(j);
}

static void in_range(prov_num_t n, double lo, double hi)
{
    if (n.st == PROV_V_OK && (n.v < lo || n.v > hi))
        abort();
    if (n.st != PROV_V_OK && n.v != 0)
        abort(); /* an unread value carries no number */
}

static void check_sample(const prov_sample_t *s)
{
    for (size_t i = 0; i < s->ngpus; i++) {
        const prov_sample_gpu_t *g = &s->gpus[i];
        in_range(g->util_gpu_pct, 0, 100);
        in_range(g->util_mem_pct, 0, 100);
        in_range(g->mem_used_mib, 0, 1e9);
        in_range(g->mem_total_mib, 0, 1e9);
        in_range(g->ecc_uncorr_volatile, 0, 1e15);
        if ((g->pci_st == PROV_V_OK) != (strlen(g->pci) == 16))
            abort();
        if ((g->uuid_st == PROV_V_OK) != (g->uuid[0] != '\0'))
            abort();
        if (g->clk_st != PROV_V_OK && g->clk_reasons != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    prov_err_t err;
    prov_sample_t s;
    if (prov_sample_parse(text, size, prov_sample_fields, prov_sample_nfields, &s, &err) == 0) {
        check_sample(&s);
        render(prov_sample_to_json(&s));
        prov_sample_free(&s);
    }
    if (prov_sample_parse(text, size, NULL, 0, &s, &err) == 0) {
        check_sample(&s);
        render(prov_sample_to_json(&s));
        prov_sample_free(&s);
    }
    prov_fabric_t f;
    if (prov_fabric_parse(text, size, &f, &err) == 0) {
        if (f.n_ok + f.n_not_ok + f.n_unread != f.ngpus)
            abort();
        if ((f.verdict == PROV_FABRIC_OK) != (f.ngpus > 0 && f.n_ok == f.ngpus))
            abort();
        render(prov_fabric_to_json(&f));
        prov_fabric_free(&f);
    }
    return 0;
}
