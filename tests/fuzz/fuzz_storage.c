/* libFuzzer target: dd's summary line, fio's JSON and the storage_throughput judge over
 * them (tests/fixtures/perf seeds).  Run by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/jobs/gate_checks.h"
#include "provisioner/jobs/gate_storage.h"
#include "provisioner/parse/parse_storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct prov_dd_summary dd;
    struct prov_fio_summary fio;
    char why[200];
    (void)prov_parse_dd(text, size, &dd);
    (void)prov_parse_fio(text, size, "read", &fio, why, sizeof why);
    (void)prov_parse_fio(text, size, "write", &fio, why, sizeof why);
    /* the judge reads NUL-terminated command output: both commands print the input after
     * one of the markers the commands print */
    char *buf = malloc(size + 64);
    if (buf == NULL)
        return 0;
    const char *mark =
        size % 2 ? "gpufleet-storage: tool=fio direct=1\n" : "gpufleet-storage: tool=dd direct=0\n";
    size_t m = strlen(mark);
    memcpy(buf, mark, m);
    memcpy(buf + m, data, size);
    buf[m + size] = '\0';
    struct prov_gate g;
    memset(&g, 0, sizeof g);
    g.durable_path = "/data";
    g.scratch_path = "/scratch";
    prov_storage_ref_load(&g.storage, NULL, 1);
    g.storage.min_read_mbps = 100;
    struct prov_cmd_result r[2] = {{1, 0, buf, ""}, {1, (int)(size % 3), buf, ""}};
    struct prov_check_out o;
    prov_check_eval(&g, PROV_CHECK_STORAGE_THROUGHPUT, r, 2, &o);
    json_t *e = prov_check_entry("storage_throughput", &o, buf, m + size, 1, 1);
    char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
    free(s);
    json_decref(e);
    json_decref(o.values);
    free(buf);
    return 0;
}
