/* libFuzzer target: the bandwidth references' parsers (nccl-tests, nvbandwidth, numactl -H /
 * lscpu; issue 26), and the bandwidth check's judgement over the same bytes as every one
 * of its command outputs.  Run by tests/fuzz/run (seeds: tests/fixtures/perf). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/gate.h"
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/parse/parse_perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    prov_nccl_t n;
    (void)prov_nccl_parse(text, size, &n);
    prov_nvbw_t *b = malloc(sizeof *b);
    if (b != NULL) {
        (void)prov_nvbw_parse(text, size, b);
        (void)prov_nvbw_find(b, "device_to_device_memcpy_read_ce");
        free(b);
    }
    prov_numa_t m;
    (void)prov_numa_parse(text, size, &m);

    /* the judge reads NUL-terminated outputs */
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct prov_gate g;
    memset(&g, 0, sizeof g);
    g.image_ref = "nvcr.io/nvidia/pytorch@sha256:"
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    g.expected_gpus = 8;
    g.bw.tool = PROV_BW_NCCL | PROV_BW_NVBW;
    g.bw.host_to_device = 1;
    g.bw.expect_numa_nodes = 2;
    g.bw.min_d2d = 100;
    g.bw.gpu_model = "h100_sxm";
    g.bw.interconnect = "nvlink";
    struct prov_cmd_result r[4] = {{1, 0, s, ""}, {1, 0, s, ""}, {1, 0, s, s}, {1, 1, s, ""}};
    struct prov_check_out o;
    prov_check_eval(&g, PROV_CHECK_BANDWIDTH, r, 4, &o);
    if (o.values != NULL) {
        char *j = json_dumps(o.values, JSON_COMPACT);
        free(j);
        json_decref(o.values);
    }
    free(s);
    return 0;
}
