/* test_gate.c — gate verdicts, the checks' judgements over recorded output, readiness. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "planner/gate.h"
#include "planner/readiness.h"
#include "provisioner/gate_checks.h"
#include "tests/unit/unit.h"

static void verdicts(void)
{
    char why[256];
    struct plan_check_outcome ok[] = {{"gpu_inventory", PLAN_CHECK_PASS, 0},
                                      {"topology", PLAN_CHECK_SKIP, 0},
                                      {"observability", PLAN_CHECK_WARN, 0}};
    CHECK(plan_gate_verdict(ok, 3, why, sizeof why) == PLAN_ACCEPT);
    struct plan_check_outcome hw[] = {{"gpu_inventory", PLAN_CHECK_FAIL, 1},
                                      {"workload", PLAN_CHECK_TIMEOUT, 0}};
    CHECK(plan_gate_verdict(hw, 2, why, sizeof why) == PLAN_ISOLATE);
    CHECK(strstr(why, "gpu_inventory") != NULL && strstr(why, "workload") != NULL);
    struct plan_check_outcome slow[] = {{"workload", PLAN_CHECK_TIMEOUT, 0}};
    CHECK(plan_gate_verdict(slow, 1, why, sizeof why) == PLAN_INVESTIGATE);
    struct plan_check_outcome cfg[] = {{"storage", PLAN_CHECK_FAIL, 0}};
    CHECK(plan_gate_verdict(cfg, 1, why, sizeof why) == PLAN_INVESTIGATE);
}

static struct prov_gate h100_gate(void)
{
    struct prov_gate g = {0};
    g.image_ref = "vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    g.driver_version = "550.127.05";
    g.expected_gpus = 2;
    g.expected_gpu_name = "NVIDIA H100 80GB HBM3";
    g.expected_memory_mib = 81559;
    g.link_class = "NV*";
    g.storage_min_mbps = 100;
    g.durable_path = "/data";
    g.scratch_path = "/scratch";
    return g;
}

#define ROW(i, ecc, retired) \
    i ", NVIDIA H100 80GB HBM3, GPU-" i ", 81559, 550.127.05, 00000000:1" i ":00.0, " ecc ", " retired ", No\n"

static void inventory(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    struct prov_cmd_result r[2] = {{1, 0, ROW("0", "0", "No") ROW("1", "0", "No"), ""},
                                   {1, 0, "", ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS && !o.hardware_evidence);
    CHECK(json_integer_value(json_object_get(o.values, "gpu_count")) == 2);
    json_decref(o.values);
    /* one GPU missing: hardware */
    struct prov_cmd_result one[2] = {{1, 0, ROW("0", "0", "No"), ""}, {1, 0, "", ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, one, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    CHECK(strstr(o.message, "missing GPU") != NULL);
    json_decref(o.values);
    /* uncorrectable ECC and [Unknown Error] readings: hardware */
    struct prov_cmd_result ecc[2] = {{1, 0, ROW("0", "3", "No") ROW("1", "0", "No"), ""},
                                     {1, 0, "", ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, ecc, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    json_decref(o.values);
    struct prov_cmd_result unk[2] = {{1, 0, ROW("0", "[Unknown Error]", "[Unknown Error]") ROW("1", "0", "No"), ""},
                                     {1, 0, "", ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, unk, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    json_decref(o.values);
    /* another driver: a configuration mismatch, not hardware */
    g.driver_version = "535.309.01";
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "535.309.01") != NULL);
    json_decref(o.values);
    /* no driver loaded: fails without blaming the hardware */
    struct prov_cmd_result nodrv[2] = {{1, 9, "",
                                        "NVIDIA-SMI has failed because it couldn't communicate with "
                                        "the NVIDIA driver. Make sure that the latest NVIDIA driver "
                                        "is installed and running.\n"},
                                       {1, 9, "", ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, nodrv, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    json_decref(o.values);
}

static void topology(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    const char *nv = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                     "GPU0\t X \tNV18\t0-47\t0\n"
                     "GPU1\tNV18\t X \t0-47\t0\n\nLegend:\n\n  X    = Self\n";
    const char *sys = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                      "GPU0\t X \tSYS\t0-47\t0\n"
                      "GPU1\tSYS\t X \t0-47\t0\n\nLegend:\n\n  X    = Self\n";
    struct prov_cmd_result r[2] = {{1, 0, nv, ""}, {1, 0, "", ""}};
    prov_check_eval(&g, PROV_CHECK_TOPOLOGY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    r[0].out = sys;
    prov_check_eval(&g, PROV_CHECK_TOPOLOGY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    CHECK(strstr(o.message, "SYS") != NULL);
    json_decref(o.values);
    g.link_class = "any";
    prov_check_eval(&g, PROV_CHECK_TOPOLOGY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    char why[128];
    g.expected_gpus = 1;
    CHECK(!prov_check_applies(&g, PROV_CHECK_TOPOLOGY, why, sizeof why));
}

static void workload_and_storage(void)
{
    struct prov_gate g = h100_gate();
    json_t *cmd = json_pack("[s, s]", "python3", "bench.py; rm -rf /");
    g.workload_command = cmd;
    g.workload_metric = "tokens_per_second";
    g.workload_min = 1000;
    struct prov_check_out o;
    char *c = prov_check_cmd(&g, PROV_CHECK_WORKLOAD, 0);
    CHECK(c != NULL && strstr(c, "'bench.py; rm -rf /'") != NULL);
    free(c);
    struct prov_cmd_result good = {1, 0, "tokens_per_second=2400\n", ""};
    prov_check_eval(&g, PROV_CHECK_WORKLOAD, &good, 1, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    struct prov_cmd_result low = {1, 0, "tokens_per_second: 310\n", ""};
    prov_check_eval(&g, PROV_CHECK_WORKLOAD, &low, 1, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    json_decref(o.values);
    struct prov_cmd_result none = {1, 0, "done\n", ""};
    prov_check_eval(&g, PROV_CHECK_WORKLOAD, &none, 1, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    json_decref(cmd);

    const char *dd = "16+0 records in\n16+0 records out\n16777216 bytes (17 MB, 16 MiB) copied, "
                     "0.05 s, 336 MB/s\n080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b71"
                     "9643e  -\n16+0 records in\n16+0 records out\n16777216 bytes (17 MB, 16 MiB) "
                     "copied, 0.01 s, 1.7 GB/s\n";
    struct prov_cmd_result st[2] = {{1, 0, dd, ""}, {1, 0, dd, ""}};
    prov_check_eval(&g, PROV_CHECK_STORAGE, st, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    CHECK(fabs(json_real_value(json_object_get(json_object_get(o.values, "durable"),
                                               "write_fsync_mbps")) - 335.54432) < 0.01);
    json_decref(o.values);
    g.storage_min_mbps = 500;
    prov_check_eval(&g, PROV_CHECK_STORAGE, st, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    struct prov_cmd_result ro[2] = {{1, 1, "", "dd: failed to open '/data/.gpufleet-gate-probe': Read-only file system\n"},
                                    {1, 0, dd, ""}};
    prov_check_eval(&g, PROV_CHECK_STORAGE, ro, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "Read-only") != NULL);
    json_decref(o.values);
}

static void readiness(void)
{
    json_t *f = json_loads(
        "{\"host\":{\"id\":\"h\",\"state\":\"ready\",\"host_key_sha256\":\"SHA256:x\","
        "\"current_stack_id\":\"s\",\"facts\":{\"filesystems\":\"Filesystem 1024-blocks Used "
        "Available Capacity Mounted on\\n/dev/vda 100 1 99 1% /data\\ntmpfs 100 0 100 0% "
        "/scratch\"}},\"credential\":{\"id\":\"c\",\"key_type\":\"ssh-ed25519\"},"
        "\"pool\":{\"id\":\"p\",\"spec\":{\"durable_path\":\"/data/models\",\"scratch_path\":"
        "\"/scratch\",\"auto_stop\":true,\"stop_command\":\"shutdown -h now\"}},"
        "\"stack\":{\"id\":\"s\",\"image_digest\":\"sha256:ab\",\"spec\":{\"driver_version\":"
        "\"550.127.05\",\"cuda_version\":\"12.4\"}},\"accepted_gate\":{\"id\":\"g\",\"checks\":"
        "[{\"name\":\"topology\",\"status\":\"pass\"},{\"name\":\"workload\",\"status\":\"pass\"}]},"
        "\"last_gate\":{\"id\":\"g\",\"checks\":[{\"name\":\"observability\",\"status\":\"skip\"}]},"
        "\"accepted_gates\":1,\"provisionings\":1}",
        0, NULL);
    CHECK(f != NULL);
    json_t *r = plan_readiness(f);
    json_t *qs = json_object_get(r, "questions");
    CHECK(json_array_size(qs) == 9);
    static const char *const want[] = {"unknown", "yes", "yes", "yes", "yes",
                                       "yes",     "unknown", "no", "yes"};
    for (size_t i = 0; i < 9; i++)
        CHECK_STR(json_string_value(json_object_get(json_array_get(qs, i), "answer")), want[i]);
    CHECK(json_integer_value(json_object_get(json_object_get(r, "summary"), "yes")) == 6);
    json_decref(r);
    json_decref(f);
}

UNIT_SUITE(gate_tests) = {
    {"gate: accept, isolate on hardware evidence, investigate otherwise", verdicts},
    {"gate: inventory — missing GPU, ECC, unknown-error readings, driver, no driver", inventory},
    {"gate: topology against the expected link class; single GPU skips", topology},
    {"gate: workload metric and quoting; storage throughput, checksum, read-only", workload_and_storage},
    {"readiness: nine answers from recorded evidence", readiness},
    UNIT_END,
};
