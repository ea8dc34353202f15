/* libFuzzer target: the acceptance gate's judges on fuzzed host output.  Run by
 * tests/fuzz/run (from the repository root: the healthy 8× H100 baseline comes from the
 * fixtures).
 *
 * Input: byte 0 picks the check (and which of its commands is fuzzed), byte 1 how the
 * fuzzed bytes arrive (as the output, spliced into the healthy output, as the error of a
 * failed command, or as the output with the catalog's N/A list), the rest is the text.
 * Whatever it is: prov_check_eval's message is valid UTF-8, prov_check_entry returns an
 * entry that json_dumps serialises, and a check passes (so can the gate accept) only on
 * output that holds what the check needs. A broken invariant aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/utf8.h"
#include "planner/gate.h"
#include "provisioner/jobs/gate_checks.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NGPU 8
#define PIN  "550.127.05"
#define NAME "NVIDIA H100 80GB HBM3"
#define SUM  "080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b719643e"

static struct prov_gate gate;
static const char *good[PROV_CHECK__COUNT][GATE_MAX_CMDS];
static struct plan_check_outcome healthy[PROV_CHECK__COUNT];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_gate: cannot read %s (run from the repository root)\n", path);
        abort();
    }
    static char bufs[4][65536];
    static int next;
    char *b = bufs[next++];
    size_t n = fread(b, 1, sizeof bufs[0] - 1, f);
    fclose(f);
    b[n] = '\0';
    return b;
}

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_gate: broken invariant: %s\n", what);
        abort();
    }
}

static struct plan_check_outcome judge(enum prov_check c, const struct prov_cmd_result *r)
{
    struct prov_check_out o;
    prov_check_eval(&gate, c, r, prov_check_ncmds(&gate, c), &o);
    check(utf8_valid(o.message, strlen(o.message)), "message is valid UTF-8");
    const char *ev = r[0].out ? r[0].out : "";
    json_t *e = prov_check_entry(prov_check_names[c], &o, ev, strlen(ev), 1.0, 0.5);
    check(e != NULL, "the entry is built");
    char *dump = json_dumps(e, JSON_COMPACT);
    check(dump != NULL, "the entry serialises");
    free(dump);
    json_decref(e);
    json_decref(o.values);
    return (struct plan_check_outcome){prov_check_names[c], o.status, o.hardware_evidence, 1};
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char query[NGPU * 128], list[NGPU * 64];
    size_t q = 0, l = 0;
    for (int i = 0; i < NGPU; i++) {
        q += (size_t)snprintf(
            query + q, sizeof query - q,
            "%d, " NAME ", GPU-%d, 81559, " PIN ", 00000000:1%d:00.0, 0, No, No\n", i, i, i);
        l += (size_t)snprintf(list + l, sizeof list - l, "GPU %d: " NAME " (UUID: GPU-%d)\n", i, i);
    }
    static json_t *cmd;
    cmd = json_pack("[s]", "bench");
    gate = (struct prov_gate){.image_ref = "vllm/vllm-openai@sha256:0123",
                              .driver_version = PIN,
                              .expected_gpus = NGPU,
                              .expected_gpu_name = NAME,
                              .expected_memory_mib = 81559,
                              .link_class = "NV*",
                              .storage_min_mbps = 100,
                              .durable_path = "/data",
                              .scratch_path = "/scratch",
                              .workload_command = cmd,
                              .workload_metric = "tokens_per_second",
                              .workload_min = 1000,
                              .observability_url = "http://127.0.0.1:9400/metrics",
                              .diag_level = 2,
                              .bw = {.tool = PROV_BW_NCCL,
                                     .timeout_s = 60,
                                     .gpu_model = "h100_sxm",
                                     .interconnect = "nvlink"},
                              .storage = {1, 1024, 256, NULL, "auto", 100, 50, 0, 0}};
    static const char dd[] = "16777216 bytes (17 MB, 16 MiB) copied, 0.05 s, 336 MB/s\n" SUM
                             "  -\n16777216 bytes (17 MB, 16 MiB) copied, 0.01 s, 1.7 GB/s\n";
    good[PROV_CHECK_GPU_INVENTORY][0] = query;
    good[PROV_CHECK_GPU_INVENTORY][1] =
        slurp("tests/fixtures/nvidia/default__H100-80GB-HBM3__8gpu.txt");
    good[PROV_CHECK_CONTAINER_GPU][0] = list;
    good[PROV_CHECK_WORKLOAD][0] = "tokens_per_second=2400\n";
    good[PROV_CHECK_TOPOLOGY][0] = slurp("tests/fixtures/nvidia/topo_m__H100-80GB-HBM3__8gpu.txt");
    good[PROV_CHECK_TOPOLOGY][1] = "";
    good[PROV_CHECK_STORAGE][0] = good[PROV_CHECK_STORAGE][1] = dd;
    good[PROV_CHECK_OBSERVABILITY][0] = "204";
    good[PROV_CHECK_BANDWIDTH][0] = good[PROV_CHECK_TOPOLOGY][0];
    good[PROV_CHECK_BANDWIDTH][1] =
        "available: 2 nodes (0-1)\nnode 0 cpus: 0-47\nnode 1 cpus: 48-95\n";
    good[PROV_CHECK_BANDWIDTH][2] = slurp(
        "tests/fixtures/perf/nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt");
    good[PROV_CHECK_STORAGE_THROUGHPUT][0] =
        "gpufleet-storage: tool=dd direct=1\n1024+0 records in\n1024+0 records out\n"
        "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.5 s, 2.1 GB/s\n";
    good[PROV_CHECK_STORAGE_THROUGHPUT][1] =
        "gpufleet-storage: tool=dd direct=1\n268435456 bytes (268 MB, 256 MiB) copied, 0.5 s, "
        "537 MB/s\n";
    good[PROV_CHECK_DIAGNOSTICS][0] =
        slurp("tests/fixtures/nvidia/dcgmi_diag_r2_pass__H100-80GB-HBM3__1gpu.txt");
    for (int c = 0; c < PROV_CHECK__COUNT; c++) {
        struct prov_cmd_result r[GATE_MAX_CMDS];
        for (int i = 0; i < GATE_MAX_CMDS; i++)
            r[i] = (struct prov_cmd_result){1, 0, good[c][i] ? good[c][i] : "", ""};
        healthy[c] = judge((enum prov_check)c, r);
        check(healthy[c].status == PLAN_CHECK_PASS, "the healthy baseline passes");
    }
    return 0;
}

static int has(const char *s, const char *needle)
{
    return s != NULL && strstr(s, needle) != NULL;
}

/* A dcgmi table row ("| name | Fail - All |") whose result says Fail. */
static int diag_row_fails(const char *s)
{
    for (const char *l = s; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        if (*l != '|')
            continue;
        const char *bar = memchr(l + 1, '|', strcspn(l + 1, "\n"));
        if (bar != NULL && strncasecmp(bar + 1 + strspn(bar + 1, " \t"), "fail", 4) == 0)
            return 1;
    }
    return 0;
}

/* What a pass of check c needs to have seen in its outputs (a coarse, independent view). */
static int holds_what_a_pass_needs(enum prov_check c, const struct prov_cmd_result *r)
{
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY: {
        int rows = 0;
        for (const char *p = r[0].out; (p = strstr(p, NAME)) != NULL; p++)
            rows++;
        int na_ok = gate.na_fields != NULL || !has(r[0].out, "N/A");
        return r[0].ran && r[0].exit_status == 0 && r[1].ran && r[1].exit_status == 0 &&
               rows >= NGPU && has(r[0].out, PIN) && na_ok && !has(r[0].out, "[Not Supp") &&
               !has(r[0].out, "Unknown Error") && !has(r[0].out, "ERR!") &&
               !has(r[1].out, "ERR!") && has(r[1].out, "Driver Version");
    }
    case PROV_CHECK_CONTAINER_GPU: return r[0].exit_status == 0 && has(r[0].out, "(UUID: ");
    case PROV_CHECK_WORKLOAD: return r[0].exit_status == 0 && has(r[0].out, "tokens_per_second");
    case PROV_CHECK_TOPOLOGY: return r[0].exit_status == 0 && has(r[0].out, "NV");
    case PROV_CHECK_STORAGE:
        return r[0].exit_status == 0 && r[1].exit_status == 0 && has(r[0].out, SUM) &&
               has(r[1].out, SUM) && has(r[0].out, "copied, ") && has(r[1].out, "copied, ");
    case PROV_CHECK_OBSERVABILITY: return r[0].exit_status == 0 && r[0].out[0] == '2';
    case PROV_CHECK_STORAGE_THROUGHPUT: /* a write measured; a read measured, or not measurable */
        return r[1].exit_status == 0 && has(r[1].out, "copied, ") &&
               (has(r[0].out, "gpufleet-storage: missing=") ||
                (r[0].exit_status == 0 &&
                 (has(r[0].out, "copied, ") || has(r[0].out, "\"jobs\""))));
    case PROV_CHECK_DIAGNOSTICS:
        return r[0].exit_status == 0 && has(r[0].out, "Pass") && !diag_row_fails(r[0].out);
    case PROV_CHECK_BANDWIDTH: /* read to its trailer, not failed; or the tool is missing (skip) */
        return (r[2].exit_status >= 125 && r[2].exit_status <= 127) ||
               (r[2].exit_status == 0 && has(r[2].out, "Avg bus bandwidth") &&
                !has(r[2].out, "FAILED"));
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    enum prov_check c = (enum prov_check)(data[0] % PROV_CHECK__COUNT);
    int k = (data[0] / PROV_CHECK__COUNT) % prov_check_ncmds(&gate, c);
    int mode = data[1] % 4;
    size_t n = size - 2;
    char *text = malloc(n + 1), *spliced = NULL;
    if (text == NULL)
        return 0;
    memcpy(text, data + 2, n);
    text[n] = '\0';
    struct prov_cmd_result r[GATE_MAX_CMDS];
    for (int i = 0; i < GATE_MAX_CMDS; i++)
        r[i] = (struct prov_cmd_result){1, 0, good[c][i] ? good[c][i] : "", ""};
    gate.na_fields = mode == 3 ? "retired_pages.pending,remapped_rows.pending" : NULL;
    if (mode == 0 || mode == 3) {
        r[k].out = text;
    } else if (mode == 1) { /* the healthy output cut where the text says, then the text */
        const char *g = r[k].out;
        size_t cut = n >= 2 ? ((size_t)(uint8_t)text[0] << 8 | (uint8_t)text[1]) % (strlen(g) + 1)
                            : strlen(g);
        spliced = malloc(cut + n + 1);
        if (spliced == NULL) {
            free(text);
            return 0;
        }
        memcpy(spliced, g, cut);
        memcpy(spliced + cut, text, n + 1);
        r[k].out = spliced;
    } else {
        r[k].err = text;
        r[k].exit_status = 1 + data[1] / 4 % 200;
    }
    struct plan_check_outcome oc[PROV_CHECK__COUNT], *mine = &oc[0];
    int nout = 0;
    if (c == PROV_CHECK_DIAGNOSTICS) {
        oc[nout++] = judge(c, r);
    } else {
        for (int i = 0; i < PROV_CHECK__COUNT; i++) {
            if (i == PROV_CHECK_DIAGNOSTICS)
                continue;
            if (i == (int)c)
                mine = &oc[nout];
            oc[nout++] = i == (int)c ? judge(c, r) : healthy[i];
        }
    }
    check(mine->status <= PLAN_CHECK_TIMEOUT, "a known status");
    char why[400];
    enum plan_verdict v = plan_gate_verdict(oc, nout, why, sizeof why);
    check(v != PLAN_ACCEPT || holds_what_a_pass_needs(c, r),
          "accepted only on output that holds what the check needs");
    check(utf8_valid(why, strlen(why)), "the reason is valid UTF-8");
    free(text);
    free(spliced);
    return 0;
}
