/* test_gate.c — gate verdicts, the checks' judgements over recorded output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/utf8.h"
#include "planner/gate.h"
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/parse/parse.h"
#include "tests/unit/unit.h"

/* ---- a healthy 2× H100 host, shared with test_gate_property.c ---- */

const char unit_h100_table[] =
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n"
    "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:10:00.0 Off |                    0 |\n"
    "| N/A   30C    P0            100W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
    "|                                         |                        |             Disabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   1  NVIDIA H100 80GB HBM3          On  |   00000000:11:00.0 Off |                    0 |\n"
    "| N/A   30C    P0             82W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
    "|                                         |                        |             Disabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "\n"
    "+-----------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                              |\n"
    "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n"
    "|        ID   ID                                                               Usage      |\n"
    "|=========================================================================================|\n"
    "|  No running processes found                                                             |\n"
    "+-----------------------------------------------------------------------------------------+\n";
const char unit_h100_list[] = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n"
                              "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n";
const char unit_h100_topo[] = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                              "GPU0\t X \tNV18\t0-47\t0\n"
                              "GPU1\tNV18\t X \t0-47\t0\n\nLegend:\n\n  X    = Self\n";
const char unit_dd[] =
    "16+0 records in\n16+0 records out\n16777216 bytes (17 MB, 16 MiB) copied, "
    "0.05 s, 336 MB/s\n080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b71"
    "9643e  -\n16+0 records in\n16+0 records out\n16777216 bytes (17 MB, 16 MiB) "
    "copied, 0.01 s, 1.7 GB/s\n";

void unit_h100_gate(struct prov_gate *g)
{
    memset(g, 0, sizeof *g);
    g->image_ref =
        "vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    g->driver_version = "550.127.05";
    g->expected_gpus = 2;
    g->expected_gpu_name = "NVIDIA H100 80GB HBM3";
    g->expected_memory_mib = 81559;
    g->link_class = "NV*";
    g->storage_min_mbps = 100;
    g->durable_path = "/data";
    g->scratch_path = "/scratch";
}

static void verdicts(void)
{
    char why[256];
    struct plan_check_outcome ok[] = {{"gpu_inventory", PLAN_CHECK_PASS, 0, 1},
                                      {"topology", PLAN_CHECK_SKIP, 0, 1},
                                      {"observability", PLAN_CHECK_WARN, 0, 1}};
    CHECK(plan_gate_verdict(ok, 3, why, sizeof why) == PLAN_ACCEPT);
    struct plan_check_outcome hw[] = {{"gpu_inventory", PLAN_CHECK_FAIL, 1, 1},
                                      {"workload", PLAN_CHECK_TIMEOUT, 0, 1}};
    CHECK(plan_gate_verdict(hw, 2, why, sizeof why) == PLAN_ISOLATE);
    CHECK(strstr(why, "gpu_inventory") != NULL && strstr(why, "workload") != NULL);
    struct plan_check_outcome slow[] = {{"workload", PLAN_CHECK_TIMEOUT, 0, 1}};
    CHECK(plan_gate_verdict(slow, 1, why, sizeof why) == PLAN_INVESTIGATE);
    struct plan_check_outcome cfg[] = {{"storage", PLAN_CHECK_FAIL, 0, 1}};
    CHECK(plan_gate_verdict(cfg, 1, why, sizeof why) == PLAN_INVESTIGATE);
}

static void verdicts_fail_closed(void)
{
    char why[256];
    /* a check whose entry was lost never accepts, and says so */
    struct plan_check_outcome lost[] = {{"gpu_inventory", PLAN_CHECK_PASS, 0, 0},
                                        {"storage", PLAN_CHECK_PASS, 0, 1}};
    CHECK(plan_gate_verdict(lost, 2, why, sizeof why) == PLAN_INVESTIGATE);
    CHECK(strstr(why, "gpu_inventory ran but could not be recorded") != NULL);
    /* its own (unrecorded) hardware evidence does not isolate; another check's does */
    struct plan_check_outcome lost_hw[] = {{"gpu_inventory", PLAN_CHECK_FAIL, 1, 0}};
    CHECK(plan_gate_verdict(lost_hw, 1, why, sizeof why) == PLAN_INVESTIGATE);
    struct plan_check_outcome iso[] = {{"gpu_inventory", PLAN_CHECK_PASS, 0, 0},
                                       {"topology", PLAN_CHECK_FAIL, 1, 1},
                                       {"storage", PLAN_CHECK_FAIL, 0, 1}};
    CHECK(plan_gate_verdict(iso, 3, why, sizeof why) == PLAN_ISOLATE);
    CHECK(strstr(why, "topology") && strstr(why, "storage") && strstr(why, "recorded"));
    /* nothing recorded, no check at all, a status outside the enum */
    CHECK(plan_gate_verdict(lost, 0, why, sizeof why) == PLAN_INVESTIGATE);
    CHECK(plan_gate_verdict(NULL, 3, why, sizeof why) == PLAN_INVESTIGATE);
    struct plan_check_outcome odd[] = {{"storage", (enum plan_check_status)17, 1, 1}};
    CHECK(plan_gate_verdict(odd, 1, why, sizeof why) == PLAN_INVESTIGATE);
    CHECK(strstr(why, "unknown status") != NULL);
    /* an unnamed check still gets a reason */
    struct plan_check_outcome anon[] = {{NULL, PLAN_CHECK_FAIL, 0, 1}};
    CHECK(plan_gate_verdict(anon, 1, why, sizeof why) == PLAN_INVESTIGATE && why[0] != '\0');
}

static struct prov_gate h100_gate(void)
{
    struct prov_gate g;
    unit_h100_gate(&g);
    return g;
}

#define ROW(i, ecc, retired)                                                              \
    i ", NVIDIA H100 80GB HBM3, GPU-" i ", 81559, 550.127.05, 00000000:1" i ":00.0, " ecc \
      ", " retired ", No\n"

static void inventory(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    struct prov_cmd_result r[2] = {{1, 0, ROW("0", "0", "No") ROW("1", "0", "No"), ""},
                                   {1, 0, unit_h100_table, ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS && !o.hardware_evidence);
    CHECK(json_integer_value(json_object_get(o.values, "gpu_count")) == 2);
    json_decref(o.values);
    /* one GPU missing: hardware */
    struct prov_cmd_result one[2] = {{1, 0, ROW("0", "0", "No"), ""}, {1, 0, unit_h100_table, ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, one, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    CHECK(strstr(o.message, "missing GPU") != NULL);
    json_decref(o.values);
    /* uncorrectable ECC: hardware; [Unknown Error] readings (not read): investigate */
    struct prov_cmd_result ecc[2] = {{1, 0, ROW("0", "3", "No") ROW("1", "0", "No"), ""},
                                     {1, 0, unit_h100_table, ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, ecc, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence);
    json_decref(o.values);
    struct prov_cmd_result unk[2] = {
        {1, 0, ROW("0", "[Unknown Error]", "[Unknown Error]") ROW("1", "0", "No"), ""},
        {1, 0, unit_h100_table, ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, unk, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "[Unknown Error]") != NULL);
    json_decref(o.values);
    /* another driver: a configuration mismatch, not hardware */
    g.driver_version = "535.309.01";
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "535.309.01") != NULL);
    json_decref(o.values);
    /* no driver loaded: fails without blaming the hardware */
    struct prov_cmd_result nodrv[2] = {
        {1, 9, "",
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
    const char *nv = unit_h100_topo;
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
    /* -- ends docker's options before the image: neither it nor the workload is a flag */
    CHECK(c != NULL && strncmp(c, "docker run --rm --gpus all -- 'vllm/vllm-openai@", 48) == 0);
    free(c);
    c = prov_check_cmd(&g, PROV_CHECK_CONTAINER_GPU, 0);
    CHECK(c != NULL && strncmp(c, "docker run --rm --gpus all -- 'vllm/vllm-openai@", 48) == 0);
    free(c);
    /* curl: -g (no globbing of [] {}), -- before the URL */
    g.observability_url = "http://[::1]:9400/m{a,b}";
    c = prov_check_cmd(&g, PROV_CHECK_OBSERVABILITY, 0);
    CHECK_STR(c, "curl -g -fsS -m 5 -o /dev/null -w '%{http_code}' -- 'http://[::1]:9400/m{a,b}'");
    free(c);
    g.observability_url = NULL;
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

    const char *dd = unit_dd;
    struct prov_cmd_result st[2] = {{1, 0, dd, ""}, {1, 0, dd, ""}};
    prov_check_eval(&g, PROV_CHECK_STORAGE, st, 2, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    CHECK(fabs(json_real_value(
                   json_object_get(json_object_get(o.values, "durable"), "write_fsync_mbps")) -
               335.54432) < 0.01);
    json_decref(o.values);
    g.storage_min_mbps = 500;
    prov_check_eval(&g, PROV_CHECK_STORAGE, st, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    struct prov_cmd_result ro[2] = {
        {1, 1, "", "dd: failed to open '/data/.gpufleet-gate-probe': Read-only file system\n"},
        {1, 0, dd, ""}};
    prov_check_eval(&g, PROV_CHECK_STORAGE, ro, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "Read-only") != NULL);
    json_decref(o.values);
}

/* ---- fail closed: values the gate needs but could not read ---- */

static int valid_text(const char *s)
{
    return s != NULL && utf8_valid(s, strlen(s));
}

static const char *const inv_good[] = {"1",          "NVIDIA H100 80GB HBM3", "GPU-1", "81559",
                                       "550.127.05", "00000000:11:00.0",      "0",     "No",
                                       "No"};

/* The healthy two rows, with GPU 1's field f read as `cell`. */
static void inv_rows(char *buf, size_t n, int f, const char *cell)
{
    int used = snprintf(buf, n, "%s", ROW("0", "0", "No"));
    for (int k = 0; k < 9; k++)
        used += snprintf(buf + used, n - (size_t)used, "%s%s", k ? ", " : "",
                         k == f ? cell : inv_good[k]);
    snprintf(buf + used, n - (size_t)used, "\n");
}

static void eval_inv(const struct prov_gate *g, const char *rows, struct prov_check_out *o)
{
    struct prov_cmd_result r[2] = {{1, 0, rows, ""}, {1, 0, unit_h100_table, ""}};
    prov_check_eval(g, PROV_CHECK_GPU_INVENTORY, r, 2, o);
}

static void inventory_unread(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    char rows[600], want[160];
    static const char *const cells[] = {"[N/A]",
                                        "[Not Supported]",
                                        "[Unknown Error]",
                                        "",
                                        "[Requested functionality has been deprecated]",
                                        "x?"};
    for (int f = 0; f < 9; f++) {
        for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
            inv_rows(rows, sizeof rows, f, cells[c]);
            eval_inv(&g, rows, &o);
            json_decref(o.values);
            CHECK(valid_text(o.message));
            if (f == 5) { /* pci.bus_id: no rule needs it */
                CHECK(o.status == PLAN_CHECK_PASS);
                continue;
            }
            CHECK(o.status == PLAN_CHECK_FAIL);
            CHECK(!o.hardware_evidence); /* not read is never hardware evidence */
            /* the message names the GPU, the field and what was read */
            if (f == 0)
                snprintf(want, sizeof want, "the GPU in row 2: index read %s",
                         cells[c][0] ? cells[c] : "nothing");
            else if ((f == 1 || f == 4) && c == 5)
                snprintf(want, sizeof want, "%s", f == 1 ? "GPU 1 is x?" : "GPU 1 runs driver x?");
            else
                snprintf(want, sizeof want, "GPU 1: %s read %s", prov_inv_fields[f],
                         cells[c][0] ? cells[c] : "nothing");
            if (strstr(o.message, want) == NULL)
                printf("    # want \"%s\" in \"%s\"\n", want, o.message);
            CHECK(strstr(o.message, want) != NULL);
        }
    }
    /* "GPU 2: memory.total read [N/A]" names the row's own index */
    inv_rows(rows, sizeof rows, 3, "[N/A]");
    rows[strlen(ROW("0", "0", "No"))] = '2';
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "GPU 2: memory.total read [N/A]") != NULL);
    CHECK(strstr(o.message, "as expected") == NULL);
    json_t *u = json_array_get(json_object_get(o.values, "unread"), 0);
    CHECK_STR(json_string_value(json_object_get(u, "field")), "memory.total");
    CHECK_STR(json_string_value(json_object_get(u, "read")), "[N/A]");
    json_decref(o.values);
    /* a duplicated index or uuid is not two GPUs */
    inv_rows(rows, sizeof rows, 0, "0");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "appears twice") != NULL);
    json_decref(o.values);
    /* nothing listed at all */
    eval_inv(&g, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    json_decref(o.values);
}

static void inventory_not_applicable(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    char rows[600];
    /* the catalog says this model reports N/A for retired pages: pass, and say so */
    g.na_fields = "ecc.errors.uncorrected.volatile.total, retired_pages.pending";
    for (int c = 0; c < 2; c++) {
        inv_rows(rows, sizeof rows, 7, c ? "[Not Supported]" : "[N/A]");
        eval_inv(&g, rows, &o);
        CHECK(o.status == PLAN_CHECK_PASS);
        json_t *na = json_object_get(o.values, "not_applicable");
        CHECK(json_array_size(na) == 1);
        CHECK_STR(json_string_value(json_array_get(na, 0)), "retired_pages.pending");
        CHECK(strstr(o.message, "retired_pages.pending") != NULL);
        json_decref(o.values);
    }
    /* … but an error reading still fails (investigate), and a field not on the list still
     * must read */
    inv_rows(rows, sizeof rows, 7, "[Unknown Error]");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    json_decref(o.values);
    inv_rows(rows, sizeof rows, 8, "[N/A]");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "remapped_rows.pending read [N/A]"));
    json_decref(o.values);
    /* a prefix of a listed name is not the name */
    g.na_fields = "retired_pages";
    inv_rows(rows, sizeof rows, 7, "[N/A]");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    /* unified memory: memory.total N/A */
    g.na_fields = "memory.total";
    inv_rows(rows, sizeof rows, 3, "[N/A]");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    /* only what was compared is claimed */
    g.na_fields = NULL;
    g.expected_gpu_name = NULL;
    g.expected_memory_mib = 0;
    inv_rows(rows, sizeof rows, 1, "[N/A]");
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    CHECK(strstr(o.message, "model") == NULL && strstr(o.message, "memory") == NULL &&
          strstr(o.message, "driver as expected") != NULL);
    json_decref(o.values);
}

/* The real H100 capture reports retired_pages.pending as [N/A]. */
static void inventory_real_h100(void)
{
    FILE *f = fopen("tests/fixtures/nvidia/query_csv_allfields__H100-80GB-HBM3__1gpu.txt", "rb");
    CHECK(f != NULL);
    static char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    prov_qgpu_t q;
    prov_err_t err;
    CHECK(prov_qgpu_parse(text, len, NULL, 0, &q, &err) == 0 && q.nrows == 1);
    char rows[1200] = "";
    for (int gpu = 0; gpu < 2; gpu++) {
        for (int k = 0; k < 9; k++) {
            const char *cell = prov_qgpu_cell(&q, 0, prov_inv_fields[k]);
            char uuid[16];
            snprintf(uuid, sizeof uuid, "GPU-%d", gpu);
            size_t used = strlen(rows);
            snprintf(rows + used, sizeof rows - used, "%s%s", k ? ", " : "",
                     k == 0   ? (gpu ? "1" : "0")
                     : k == 2 ? uuid
                     : cell   ? cell
                              : "?");
        }
        strcat(rows, "\n");
    }
    prov_qgpu_free(&q);
    struct prov_gate g = h100_gate();
    g.driver_version = "590.48.01";
    struct prov_check_out o;
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "GPU 1: retired_pages.pending read [N/A]") != NULL);
    json_decref(o.values);
    g.na_fields = "retired_pages.pending";
    eval_inv(&g, rows, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    CHECK(strstr(o.message, "2 of 2 expected GPU(s), model, memory and driver as expected") !=
          NULL);
    json_decref(o.values);
}

static void inventory_table(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    const char *rows = ROW("0", "0", "No") ROW("1", "0", "No");
    /* unread, failed, or garbage: investigate, naming the table */
    struct prov_cmd_result bad[][2] = {
        {{1, 0, rows, ""}, {1, 0, "", ""}},
        {{1, 0, rows, ""}, {1, 0, "\xff\xfe garbage\n", ""}},
        {{1, 0, rows, ""}, {1, 15, "", "Unable to determine the device handle for GPU 1\n"}},
        {{1, 0, rows, ""}, {0, -1, "", "not run"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, bad[i], 2, &o);
        CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
        CHECK(strstr(o.message, "nvidia-smi table") != NULL && valid_text(o.message));
        json_decref(o.values);
    }
    /* cut inside GPU 1's block: its ERR! could be in the part that is missing */
    char cut[4096];
    snprintf(cut, sizeof cut, "%.*s",
             (int)(strstr(unit_h100_table, "|   1 ") - unit_h100_table + 90), unit_h100_table);
    struct prov_cmd_result r[2] = {{1, 0, rows, ""}, {1, 0, cut, ""}};
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "cut off after 1 of 2") != NULL);
    json_decref(o.values);
    /* ERR! in the table: hardware */
    snprintf(cut, sizeof cut, "%s", unit_h100_table);
    char *p = strstr(cut, "00000000:11:00.0 Off |                    0 |");
    CHECK(p != NULL);
    memcpy(p + strlen("00000000:11:00.0 Off |                 "), "ERR!", 4);
    r[1].out = cut;
    prov_check_eval(&g, PROV_CHECK_GPU_INVENTORY, r, 2, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && o.hardware_evidence && strstr(o.message, "ERR!"));
    CHECK(json_array_size(json_object_get(o.values, "err_gpus")) == 1);
    json_decref(o.values);
}

static void container_topology_unread(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    struct prov_cmd_result r = {1, 0, unit_h100_list, ""};
    prov_check_eval(&g, PROV_CHECK_CONTAINER_GPU, &r, 1, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    static const char *const unread[] = {
        "", "garbage\n", "\xc3\n", "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\nGPU 1: NVIDIA H1"};
    for (size_t i = 0; i < sizeof unread / sizeof unread[0]; i++) {
        r.out = unread[i];
        prov_check_eval(&g, PROV_CHECK_CONTAINER_GPU, &r, 1, &o);
        CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence && valid_text(o.message));
        CHECK(strstr(o.message, "sees") == NULL); /* claims no count it did not read */
        json_decref(o.values);
    }
    /* topology: a cell that is no link class, or that disagrees with its mirror */
    static const char *const cells[] = {"GPU0\t X \tN?\t0-47\t0\nGPU1\tN?\t X \t0-47\t0\n",
                                        "GPU0\t X \tNV18\t0-47\t0\nGPU1\tNV1\t X \t0-47\t0\n"};
    for (size_t i = 0; i < 2; i++) {
        char topo[300];
        snprintf(topo, sizeof topo, "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n%s", cells[i]);
        struct prov_cmd_result t[2] = {{1, 0, topo, ""}, {1, 0, "", ""}};
        g.link_class = i ? "NV*" : "any";
        prov_check_eval(&g, PROV_CHECK_TOPOLOGY, t, 2, &o);
        CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
        CHECK(strstr(o.message, "without a readable link class") != NULL);
        json_decref(o.values);
    }
}

static void storage_observability_diag_unread(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    g.storage_min_mbps = 0;
    /* no rates (or no seconds): never a pass, even with no minimum */
    char norate[600];
    snprintf(norate, sizeof norate, "%s", unit_dd);
    *strstr(strstr(norate, "copied, 0.01") + 8, "0.01") = 'x';
    const char *outs[] = {"080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b719643e  -\n",
                          norate};
    for (int i = 0; i < 2; i++) {
        struct prov_cmd_result st[2] = {{1, 0, unit_dd, ""}, {1, 0, outs[i], ""}};
        prov_check_eval(&g, PROV_CHECK_STORAGE, st, 2, &o);
        CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "did not report both") != NULL);
        CHECK(json_is_null(json_object_get(json_object_get(o.values, "scratch"), "read_mbps")));
        json_decref(o.values);
    }
    g.observability_url = "http://127.0.0.1:9400/metrics";
    static const struct {
        const char *out;
        int exit_status;
        enum plan_check_status want;
    } obs[] = {{"204", 0, PLAN_CHECK_PASS}, {"200\n", 0, PLAN_CHECK_PASS},
               {"301", 0, PLAN_CHECK_FAIL}, {"", 0, PLAN_CHECK_FAIL},
               {"2", 0, PLAN_CHECK_FAIL},   {"2xx", 0, PLAN_CHECK_FAIL},
               {"200", 7, PLAN_CHECK_FAIL}};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++) {
        struct prov_cmd_result r = {1, obs[i].exit_status, obs[i].out, "curl: (7) refused"};
        prov_check_eval(&g, PROV_CHECK_OBSERVABILITY, &r, 1, &o);
        CHECK(o.status == obs[i].want);
        json_decref(o.values);
    }
    /* dcgmi: a table cut between tests is no pass */
    FILE *f = fopen("tests/fixtures/nvidia/dcgmi_diag_r2_pass__H100-80GB-HBM3__1gpu.txt", "rb");
    CHECK(f != NULL);
    char diag[8192];
    size_t len = fread(diag, 1, sizeof diag - 1, f);
    fclose(f);
    diag[len] = '\0';
    struct prov_cmd_result d = {1, 0, diag, ""};
    prov_check_eval(&g, PROV_CHECK_DIAGNOSTICS, &d, 1, &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    *strstr(diag, "| GPU Memory") = '\0';
    prov_check_eval(&g, PROV_CHECK_DIAGNOSTICS, &d, 1, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    json_decref(o.values);
    /* fewer results than commands */
    prov_check_eval(&g, PROV_CHECK_STORAGE, &d, 1, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
}

/* ---- host bytes in messages and entries ---- */

static void messages_are_utf8(void)
{
    struct prov_gate g = h100_gate();
    struct prov_check_out o;
    /* a failing workload whose first line is 300 × "é": first_line's cut falls mid-char */
    char err[700];
    for (int i = 0; i < 300; i++)
        memcpy(err + 2 * i, "\xc3\xa9", 2);
    err[600] = '\0';
    json_t *cmd = json_pack("[s]", "bench");
    g.workload_command = cmd;
    struct prov_cmd_result r = {1, 1, "", err};
    prov_check_eval(&g, PROV_CHECK_WORKLOAD, &r, 1, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && valid_text(o.message));
    CHECK(strstr(o.message, "\xc3\xa9\xc3\xa9") != NULL);
    /* raw bytes from a workload, and a NUL-free invalid mix */
    r.err = "\xff\xfe\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 ok";
    prov_check_eval(&g, PROV_CHECK_WORKLOAD, &r, 1, &o);
    CHECK(valid_text(o.message) && strstr(o.message, " ok") != NULL);
    json_t *e = prov_check_entry("workload", &o, "\xff\x00\xc3", 3, 12.5, 0.25);
    CHECK(e != NULL);
    char *dump = json_dumps(e, JSON_COMPACT);
    CHECK(dump != NULL);
    free(dump);
    CHECK_STR(json_string_value(json_object_get(e, "status")), "fail");
    CHECK_STR(json_string_value(json_object_get(e, "evidence")),
              "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(fabs(json_real_value(json_object_get(e, "duration_ms")) - 12.75) < 1e-9);
    CHECK(fabs(json_real_value(json_object_get(json_object_get(e, "phases"), "parse_ms")) - 0.25) <
          1e-9);
    json_decref(e);
    json_decref(cmd);
    /* evidence: the last GATE_EVIDENCE_MAX bytes, starting at a character */
    static char big[GATE_EVIDENCE_MAX * 2 + 1];
    for (size_t i = 0; i + 3 <= sizeof big - 1; i += 3)
        memcpy(big + i, "\xe2\x82\xac", 3); /* € */
    o.values = json_pack("{s:i}", "x", 1);
    o.message[0] = '\xff'; /* even a message not built by prov_check_eval */
    o.message[1] = '\0';
    o.status = (enum plan_check_status)42;
    e = prov_check_entry("gpu_inventory", &o, big, sizeof big - 1, NAN, INFINITY);
    CHECK(e != NULL);
    const char *ev = json_string_value(json_object_get(e, "evidence"));
    CHECK(ev && strlen(ev) <= GATE_EVIDENCE_MAX && strlen(ev) >= GATE_EVIDENCE_MAX - 3);
    CHECK(strncmp(ev, "\xe2\x82\xac", 3) == 0);
    CHECK_STR(json_string_value(json_object_get(e, "status")), "fail");
    CHECK(json_integer_value(json_object_get(json_object_get(e, "values"), "x")) == 1);
    CHECK(json_real_value(json_object_get(e, "duration_ms")) == 0);
    json_decref(e);
    json_decref(o.values);
    /* skipped check: no values, no evidence */
    struct prov_check_out skip = {PLAN_CHECK_SKIP, 0, "the pool's gate defines no workload", NULL};
    e = prov_check_entry("workload", &skip, NULL, 0, 0, 0);
    CHECK(e != NULL && json_is_null(json_object_get(e, "values")));
    CHECK_STR(json_string_value(json_object_get(e, "evidence")), "");
    json_decref(e);
}

static void timeouts_and_classes(void)
{
    struct prov_gate g = h100_gate();
    char m[200];
    prov_timeout_message(m, sizeof m, "nvidia-smi topo -m", 30);
    CHECK_STR(m, "nvidia-smi did not answer in 30 s: the GPU may have fallen off the bus");
    prov_timeout_message(m, sizeof m, "docker run --rm --gpus all 'x' nvidia-smi -L", 30);
    CHECK_STR(m, "docker did not answer in 30 s: the container runtime may be hung");
    prov_timeout_message(m, sizeof m, "dd if=/dev/zero of='/data/x' bs=1M", 45);
    CHECK_STR(m, "`dd` did not answer in 45 s");
    prov_timeout_message(m, sizeof m, "  /usr/bin/nvidia-smi", 5);
    CHECK(strncmp(m, "nvidia-smi did not answer in 5 s", 32) == 0);
    prov_timeout_message(m, sizeof m, "\xff`x\x01;y", 5);
    CHECK(valid_text(m) && strstr(m, "?x?") != NULL && strchr(m + 1, '`') == strrchr(m, '`'));
    prov_timeout_message(m, sizeof m, NULL, 5);
    CHECK_STR(m, "the command did not answer in 5 s");
    char longw[300];
    memset(longw, 'a', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    prov_timeout_message(m, 20, longw, 5);
    CHECK(strlen(m) == 19 && valid_text(m));
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_GPU_INVENTORY, 1) == PROV_CMD_QUERY);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_TOPOLOGY, 0) == PROV_CMD_QUERY);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_STORAGE, 1) == PROV_CMD_QUERY);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_OBSERVABILITY, 0) == PROV_CMD_QUERY);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_CONTAINER_GPU, 0) == PROV_CMD_WORKLOAD);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_WORKLOAD, 0) == PROV_CMD_WORKLOAD);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_DIAGNOSTICS, 0) == PROV_CMD_DIAG);
    CHECK_STR(prov_cmd_class_name(PROV_CMD_DIAG), "diag");
    CHECK_STR(prov_cmd_class_name((enum prov_cmd_class)99), "unknown");
    g.workload_timeout_s = 0;
    CHECK(prov_check_timeout(&g, PROV_CHECK_WORKLOAD, 0) == 300);
    CHECK(prov_check_timeout(&g, PROV_CHECK_GPU_INVENTORY, 0) == 0);
}

UNIT_SUITE(gate_tests) = {
    {"gate: accept, isolate on hardware evidence, investigate otherwise", verdicts},
    {"gate: no check, an unrecorded check or an unknown status never accepts",
     verdicts_fail_closed},
    {"gate: inventory — missing GPU, ECC, unknown-error readings, driver, no driver", inventory},
    {"gate: topology against the expected link class; single GPU skips", topology},
    {"gate: workload metric and quoting; storage throughput, checksum, read-only",
     workload_and_storage},
    {"gate: inventory fails closed on every field read as N/A, Not Supported, Unknown Error, "
     "empty, deprecated or garbage, naming GPU, field and reading",
     inventory_unread},
    {"gate: inventory passes the catalog's not-applicable fields and says so",
     inventory_not_applicable},
    {"gate: the real H100 capture (retired_pages.pending [N/A]) needs the catalog's exception",
     inventory_real_h100},
    {"gate: inventory — default table unread, cut off, or with ERR!", inventory_table},
    {"gate: container list and topology cells that do not read", container_topology_unread},
    {"gate: storage without rates, observability status codes, a cut dcgmi table",
     storage_observability_diag_unread},
    {"gate: messages and recorded entries are valid UTF-8 whatever the host printed",
     messages_are_utf8},
    {"gate: timeout messages by command, command classes", timeouts_and_classes},
    UNIT_END,
};
