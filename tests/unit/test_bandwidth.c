/* test_bandwidth.c — the bandwidth reference (issue 26): the nccl-tests, nvbandwidth and
 * NUMA parsers over every real capture in tests/fixtures/perf (quirks: SOURCES.md there),
 * the topology parser over the NIC/affinity captures, the catalog, the commands and the
 * check's judgement. */
#include <stdio.h>
#include <stdlib.h>

#include "planner/bw_reference.h"
#include "planner/gate.h"
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/parse/parse.h"
#include "provisioner/parse/parse_perf.h"
#include "tests/unit/unit.h"

#define PERF "tests/fixtures/perf/"

static char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, PERF "%s", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int near(double a, double b)
{
    return a > b - 0.005 && a < b + 0.005;
}

struct nccl_case {
    const char *file;
    int rc, nranks;
    double busbw_at_max, peak;
    int has_avg;
    double avg;
    long wrong;
    int oob_failed, errors, unsorted;
};

static const struct nccl_case nccl_cases[] = {
    {"nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, 8, 479.93, 479.93, 1,
     145.47, 0, 0, 0, 0},
    {"nccl_all_reduce_perf__H100-SXM__16gpu_2node_RoCE_healthy.txt", 0, 16, -1, -1, 1, 458.452, 0,
     0, 0, 0},
    {"nccl_all_reduce_perf__H100-SXM-A3Mega__16gpu_2node_GCP-TCPXO.txt", 0, 16, 338.82, 338.82, 1,
     70.742, 0, 0, 0, 0},
    {"nccl_all_reduce_perf__H100-SXM__16gpu_2node_IB_mpi_warnings.txt", 0, 16, 469.21, -1, 1,
     139.56, 0, 0, 0, 0},
    {"nccl_all_reduce_perf__H100-SXM__64gpu_8node_IB_degraded.txt", 0, 64, -1, -1, 1, 183.055, 0, 0,
     0, 0},
    {"nccl_all_reduce_perf__H100-SXM__16gpu_2node_IB_srun_label_degraded.txt", 0, 16, 155.57, -1, 1,
     142.735, 0, 0, 0, 0},
    {"nccl_all_reduce_perf__H100-SXM__16proc_nonMPI_build_avgbw0_partial.txt", 0, 0, 0, 0, 1, 0, 0,
     0, 0, 1},
    {"nccl_all_reduce_perf__GH200__2gpu_2node_Slingshot_wrong_FAILED.txt", 0, 2, 22.87, 22.87, 1,
     4.79995, 128, 1, 2, 0},
    {"nccl_all_reduce_perf__GH200__8gpu_2node_cuda_busy_error.txt", -1, 8, 0, 0, 0, 0, 0, 0, 12, 0},
    {"nccl_all_reduce_perf__RTX-4090-PCIe__8gpu_1node_noP2P.txt", 0, 8, 14.45, 15.04, 1, 4.85265, 0,
     0, 0, 0},
    {"nccl_all_reduce_perf__RTX-4090-PCIe__8gpu_1node_P2Ppatched.txt", 0, 8, 20.64, 20.64, 1,
     6.11168, 0, 0, 0, 0},
    {"nccl_all_gather_perf__RTX-2080Ti-PCIe3__2gpu_1node_noP2P.txt", 0, 2, -1, 3.79, 1, 1.6651, 0,
     0, 0, 0},
    {"nccl_alltoall_perf__RTX-2080Ti-PCIe3__2gpu_1node_noP2P_inplaceNA.txt", 0, 2, -1, 4.61, 1,
     2.06935, 0, 0, 0, 0},
    {"nccl_alltoall_perf__RTX-5090__1gpu_avgbw0.txt", 0, 1, 0, 0, 1, 0, 0, 0, 0, 0},
    {"nccl_all_reduce_perf_mpi__RTX-5090__2rank_1gpu_ompi_tag_output.txt", 0, 2, -1, -1, 1, 1.57614,
     0, 0, 0, 0},
};

static void nccl_fixtures(void)
{
    for (size_t i = 0; i < sizeof nccl_cases / sizeof nccl_cases[0]; i++) {
        const struct nccl_case *c = &nccl_cases[i];
        size_t len;
        char *text = slurp(c->file, &len);
        if (text == NULL)
            printf("    # cannot read %s\n", c->file);
        CHECK(text != NULL);
        prov_nccl_t n;
        int rc = prov_nccl_parse(text, len, &n);
        free(text);
        printf("    # %s: rc %d ranks %d rows %d busbw@max %.2f peak %.2f avg %g wrong %ld "
               "errors %d unsorted %d\n",
               c->file, rc, n.nranks, n.nrows, n.busbw_at_max, n.peak_busbw, n.avg_busbw, n.wrong,
               n.errors, n.unsorted_rows);
        CHECK(rc == c->rc);
        CHECK(n.nranks == c->nranks);
        CHECK(c->busbw_at_max < 0 || near(n.busbw_at_max, c->busbw_at_max));
        CHECK(c->peak < 0 || near(n.peak_busbw, c->peak));
        CHECK(n.has_avg == (c->has_avg != 0));
        CHECK(!c->has_avg || near(n.avg_busbw, c->avg));
        CHECK(n.wrong == c->wrong);
        CHECK(n.oob_failed == (c->oob_failed != 0));
        CHECK(n.errors == c->errors);
        CHECK((n.unsorted_rows > 0) == (c->unsorted != 0));
    }
}

/* srun labels keep every row; N/A #wrong is counted, not taken for 0 or a failure */
static void nccl_quirks(void)
{
    size_t len;
    char *text =
        slurp("nccl_all_reduce_perf__H100-SXM__16gpu_2node_IB_srun_label_degraded.txt", &len);
    CHECK(text != NULL);
    prov_nccl_t n;
    CHECK(prov_nccl_parse(text, len, &n) == 0);
    free(text);
    CHECK(n.wrong == 0 && n.wrong_na > 0 && n.ngpus_header == 1);
    /* a comma-decimal locale row, and the 2018 trailer without '#' */
    const char comma[] = "#  Rank  0 Group  0 Pid 1 on h device  0 [0x04] X\n"
                         "#  Rank  1 Group  0 Pid 1 on h device  1 [0x05] X\n"
                         "  1048576  262144  float  sum  -1  39,70  26,41  46,22  0  40,27  26,04  "
                         "45,57  0\n"
                         " Out of bounds values : 248 FAILED\n";
    CHECK(prov_nccl_parse(comma, sizeof comma - 1, &n) == 0);
    CHECK(near(n.busbw_at_max, 46.22) && n.oob_failed && n.oob_values == 248 && !n.has_avg);
    /* cut output: the healthy run without its trailer */
    text = slurp("nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", &len);
    CHECK(text != NULL);
    CHECK(prov_nccl_parse(text, len * 2 / 3, &n) == 0);
    free(text);
    CHECK(!n.has_avg && n.nrows > 0);
    CHECK(prov_nccl_parse(NULL, 0, &n) == -1 && prov_nccl_parse("", 0, &n) == -1);
}

static void nvbw_fixtures(void)
{
    size_t len;
    prov_nvbw_t *b = malloc(sizeof *b);
    CHECK(b != NULL);
    char *t = slurp("nvbandwidth_all_v0.2__H800-NVSwitch__8gpu_healthy.txt", &len);
    CHECK(t != NULL);
    int rc = prov_nvbw_parse(t, len, b);
    free(t);
    const prov_nvbw_test_t *d = prov_nvbw_find(b, "device_to_device_memcpy_read_ce");
    const prov_nvbw_test_t *h = prov_nvbw_find(b, "host_to_device_memcpy_ce");
    printf("    # all: rc %d tests %d devices %d failures %d d2d %.2f..%.2f h2d %.2f\n", rc,
           b->ntests, b->ndevices, b->failures, d ? d->min : -1, d ? d->max : -1, h ? h->min : -1);
    CHECK(rc == 0 && b->ndevices == 8 && b->failures == 0 && b->ntests >= 20);
    CHECK(d != NULL && d->has_sum && near(d->sum, 9643.22) && d->ncells == 56);
    CHECK(d->min > 171 && d->max < 173);
    CHECK(h != NULL && h->has_sum && near(h->sum, 442.52) && h->ncells == 8 && h->min > 50);

    t = slurp("nvbandwidth_t_d2d_read_ce_v0.8__RTX-A6000-PCIe__6gpu_partial.txt", &len);
    CHECK(t != NULL && prov_nvbw_parse(t, len, b) == 0);
    free(t);
    d = prov_nvbw_find(b, "device_to_device_memcpy_read_ce");
    CHECK(d != NULL && d->ncells == 30 && near(d->min, 21.80) && near(d->max, 26.35));

    t = slurp("nvbandwidth_t_h2d_sm_v0.8__A100-SXM4-40GB__1gpu.txt", &len);
    CHECK(t != NULL && prov_nvbw_parse(t, len, b) == 0);
    free(t);
    h = prov_nvbw_find(b, "host_to_device_memcpy_sm");
    CHECK(h != NULL && h->ncells == 1 && near(h->min, 25.13) && b->failures == 0);

    t = slurp("nvbandwidth_t_d2d_read_ce_v0.7__A100-SXM4-80GB__8gpu_assert_fail.txt", &len);
    CHECK(t != NULL);
    (void)prov_nvbw_parse(t, len, b);
    free(t);
    d = prov_nvbw_find(b, "device_to_device_memcpy_read_ce");
    CHECK(b->failures >= 1 && d != NULL && !d->has_sum);

    t = slurp("nvbandwidth_t_one_to_all_read_sm_v0.4__L40S-PCIe__8gpu_abort.txt", &len);
    CHECK(t != NULL);
    (void)prov_nvbw_parse(t, len, b);
    free(t);
    CHECK(b->failures >= 1 && strstr(b->first_failure, "Invalid value") != NULL);

    t = slurp("nvbandwidth_t_d2d_write_ce_v0.2__RTX-2080Ti-PCIe__2gpu_waived.txt", &len);
    CHECK(t != NULL && prov_nvbw_parse(t, len, b) == 0);
    free(t);
    d = prov_nvbw_find(b, "device_to_device_memcpy_write_ce");
    CHECK(d != NULL && d->waived && !d->has_sum && b->failures == 0);

    t = slurp("nvbandwidth_t_d2d_read_ce_v0.2__H800-NVSwitch__8gpu_healthy.txt", &len);
    CHECK(t != NULL);
    CHECK(prov_nvbw_parse(t, len - 30, b) == 0); /* cut before SUM */
    free(t);
    d = prov_nvbw_find(b, "device_to_device_memcpy_read_ce");
    CHECK(d != NULL && !d->has_sum);
    free(b);
}

static void numa_fixtures(void)
{
    size_t len;
    prov_numa_t n;
    char *t = slurp("numactl_H_cpu-compress__2xEPYC9135-RTX4090__2node.txt", &len);
    CHECK(t != NULL && prov_numa_parse(t, len, &n) == 0);
    free(t);
    CHECK(n.from_numactl && n.nnodes == 2 && n.nodes_with_cpus == 2);
    CHECK_STR(n.cpus[0], "0-15");
    CHECK_STR(n.cpus[1], "16-31");
    t = slurp("lscpu__8xH100-SXM5-KVM-Xeon8480+__collect_env.txt", &len);
    CHECK(t != NULL && prov_numa_parse(t, len, &n) == 0);
    free(t);
    CHECK(n.from_lscpu && n.nnodes == 2 && n.nodes_with_cpus == 2);
    CHECK_STR(n.cpus[1], "104-207");
    t = slurp("lscpu_NUMA_section_partial__GH200-Grace__9node.txt", &len);
    CHECK(t != NULL && prov_numa_parse(t, len, &n) == 0);
    free(t);
    CHECK(n.nnodes == 9 && n.nodes_with_cpus == 1);
    CHECK_STR(n.cpus[0], "0-71");
    const char plain[] = "available: 1 nodes (0)\nnode 0 cpus: 0 1 2 3\nnode 0 size: 100 MB\n";
    CHECK(prov_numa_parse(plain, sizeof plain - 1, &n) == 0 && n.nodes_with_cpus == 1);
    CHECK_STR(n.cpus[0], "0 1 2 3");
    CHECK(prov_numa_parse("garbage\n", 8, &n) == -1);
}

static void topo_fixtures(void)
{
    static const struct {
        const char *file;
        size_t gpus, nics;
        int cpu;
    } c[] = {
        {"nvsmi_topo_m_nic8_spaces__H20-NVSwitch__8gpu.txt", 8, 8, 1},
        {"nvsmi_topo_m_nic1_tabs__H100-SXM5-NVSwitch-KVM__8gpu_collect_env.txt", 8, 1, 1},
        {"nvsmi_topo_m_legacy_mlx5_named_cols_tabs__A100-NV12__2gpu_8nic.txt", 2, 8, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t len;
        char *t = slurp(c[i].file, &len);
        CHECK(t != NULL);
        prov_topo_t tp;
        prov_err_t err;
        int rc = prov_topo_parse(t, len, &tp, &err);
        free(t);
        printf("    # %s: rc %d (%s) gpus %zu nics %zu cpu %d\n", c[i].file, rc, err.msg,
               rc == 0 ? tp.ngpus : 0, rc == 0 ? tp.nnics : 0, rc == 0 && tp.has_cpu_affinity);
        CHECK(rc == 0);
        CHECK(tp.ngpus == c[i].gpus && tp.nnics == c[i].nics);
        CHECK(tp.has_cpu_affinity == (c[i].cpu != 0));
        prov_topo_free(&tp);
    }
}

static void catalog(void)
{
    const struct plan_bw_reference *r = plan_bw_reference_find("h100_sxm", "nvlink", 8);
    CHECK(r != NULL && r->min_allreduce_busbw_gbps == 296 &&
          r->reference_allreduce_busbw_gbps == 480);
    CHECK(plan_bw_reference_find("h100_sxm", "any", 8) == r);
    CHECK(plan_bw_reference_find("h100_sxm", "pcie", 8) == NULL);
    CHECK(plan_bw_reference_find("h100_sxm", "nvlink", 4) == NULL);
    CHECK(plan_bw_reference_find("rtx_4090", "pcie", 8) != NULL);
    CHECK(plan_bw_reference_find(NULL, "pcie", 8) == NULL);
}

/* ---- the check */

static void bw_gate(struct prov_gate *g)
{
    memset(g, 0, sizeof *g);
    g->image_ref = "nvcr.io/nvidia/pytorch@sha256:"
                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    g->expected_gpus = 8;
    g->bw.tool = PROV_BW_NCCL;
    g->bw.min_mib = 8;
    g->bw.max_mib = 1024;
    g->bw.iters = 20;
    g->bw.timeout_s = 120;
    g->bw.gpu_model = "h100_sxm";
    g->bw.interconnect = "nvlink";
}

static const char *topo8 = NULL;

static void judge(const struct prov_gate *g, const char *tool_file, int rc, const char *err,
                  struct prov_check_out *o)
{
    size_t len;
    char *out = tool_file ? slurp(tool_file, &len) : NULL;
    char *topo = slurp("nvsmi_topo_m_nic8_spaces__H20-NVSwitch__8gpu.txt", &len);
    char *numa = slurp("numactl_H_cpu-compress__2xEPYC9135-RTX4090__2node.txt", &len);
    struct prov_cmd_result r[4] = {{1, 0, topo ? topo : "", ""},
                                   {1, 0, numa ? numa : "", ""},
                                   {1, rc, out ? out : "", err},
                                   {1, 0, "", ""}};
    (void)topo8;
    prov_check_eval(g, PROV_CHECK_BANDWIDTH, r, prov_check_ncmds(g, PROV_CHECK_BANDWIDTH), o);
    printf("    # %s -> %s: %s\n", tool_file ? tool_file : "(none)",
           plan_check_status_names[o->status], o->message);
    free(out);
    free(topo);
    free(numa);
}

static void check_healthy_and_degraded(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    bw_gate(&g);
    CHECK(prov_check_ncmds(&g, PROV_CHECK_BANDWIDTH) == 3);
    judge(&g, "nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_PASS && !o.hardware_evidence);
    CHECK(json_real_value(json_object_get(o.values, "allreduce_busbw_gbps")) > 479.9);
    json_t *exp = json_object_get(o.values, "expected");
    CHECK_STR(json_string_value(json_object_get(exp, "source")), "catalog");
    json_t *aff = json_object_get(o.values, "affinity");
    CHECK(json_integer_value(json_object_get(aff, "numa_nodes")) == 2);
    json_t *g0 = json_array_get(json_object_get(aff, "gpus"), 0);
    CHECK_STR(json_string_value(json_object_get(g0, "nic_link")), "PIX");
    CHECK_STR(json_string_value(json_object_get(g0, "cpu_affinity")), "0-47,96-143");
    json_decref(o.values);

    judge(&g, "nccl_all_reduce_perf__H100-SXM__16gpu_2node_IB_srun_label_degraded.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && !o.hardware_evidence);
    CHECK(strstr(o.message, "155.57") && strstr(o.message, "296"));
    json_decref(o.values);

    /* the pool's minimum replaces the catalog's */
    g.bw.min_allreduce = 500;
    judge(&g, "nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(o.values, "expected"), "source")),
              "pool");
    json_decref(o.values);

    /* no minimum known: measured, warned */
    bw_gate(&g);
    g.bw.gpu_model = "a100_sxm4_80gb";
    judge(&g, "nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_WARN);
    CHECK(json_object_get(json_object_get(o.values, "expected"), "source") == NULL);
    json_decref(o.values);
}

static void check_failures(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    bw_gate(&g);
    g.expected_gpus = 2;
    g.bw.gpu_model = "gh200_96gb";
    judge(&g, "nccl_all_reduce_perf__GH200__2gpu_2node_Slingshot_wrong_FAILED.txt", 1, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "Test failure") != NULL);
    json_decref(o.values);
    g.expected_gpus = 8;
    judge(&g, "nccl_all_reduce_perf__GH200__8gpu_2node_cuda_busy_error.txt", 1, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "busy or unavailable") != NULL);
    json_decref(o.values);
    judge(&g, "nccl_all_reduce_perf__H100-SXM__16proc_nonMPI_build_avgbw0_partial.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "out of order") != NULL);
    json_decref(o.values);
    /* #wrong without error lines still fails */
    const char wrong[] =
        "#  Rank  0 Group  0 Pid 1 on h device  0 [0x04] X\n"
        "#  Rank  1 Group  0 Pid 1 on h device  1 [0x05] X\n"
        "  1048576  262144  float  sum  -1  39.70  26.41  46.22  3  40.27  26.04  "
        "45.57  0\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 1\n";
    struct prov_cmd_result r[3] = {{1, 1, "", "no"}, {1, 1, "", "no"}, {1, 0, wrong, ""}};
    g.expected_gpus = 2;
    prov_check_eval(&g, PROV_CHECK_BANDWIDTH, r, 3, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "#wrong 3") != NULL);
    json_decref(o.values);
    /* a cut output (no trailer) is not read to the end */
    g.expected_gpus = 8;
    size_t len;
    char *t = slurp("nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", &len);
    CHECK(t != NULL);
    t[len * 3 / 4] = '\0';
    r[2].out = t;
    prov_check_eval(&g, PROV_CHECK_BANDWIDTH, r, 3, &o);
    free(t);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "trailer") != NULL);
    json_decref(o.values);
}

static void check_missing_tool(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    bw_gate(&g);
    const char *nf =
        "docker: Error response from daemon: ... exec: \"all_reduce_perf\": executable "
        "file not found in $PATH: unknown.";
    judge(&g, NULL, 127, nf, &o);
    CHECK(o.status == PLAN_CHECK_SKIP && strstr(o.message, "not found") != NULL);
    CHECK(json_object_get(o.values, "affinity") != NULL);
    json_decref(o.values);
    g.bw.require = 1;
    judge(&g, NULL, 127, nf, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "required") != NULL);
    struct plan_check_outcome oc = {"bandwidth", o.status, o.hardware_evidence, 1};
    char why[200];
    CHECK(plan_gate_verdict(&oc, 1, why, sizeof why) == PLAN_INVESTIGATE);
    json_decref(o.values);
}

static void check_nvbandwidth(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    bw_gate(&g);
    g.bw.tool = PROV_BW_NVBW;
    g.bw.min_d2d = 150;
    judge(&g, "nvbandwidth_all_v0.2__H800-NVSwitch__8gpu_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    CHECK(json_real_value(json_object_get(o.values, "d2d_min_gbps")) > 171);
    json_decref(o.values);
    g.expected_gpus = 2;
    judge(&g, "nvbandwidth_t_d2d_write_ce_v0.2__RTX-2080Ti-PCIe__2gpu_waived.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL); /* the read test is not in it: not read */
    json_decref(o.values);
    g.expected_gpus = 8;
    judge(&g, "nvbandwidth_t_d2d_read_ce_v0.7__A100-SXM4-80GB__8gpu_assert_fail.txt", 1, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "Invalid value") != NULL);
    json_decref(o.values);
    judge(&g, "nvbandwidth_t_one_to_all_read_sm_v0.4__L40S-PCIe__8gpu_abort.txt", 134,
          "Aborted (core dumped)", &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    /* waived read test: no P2P */
    const char waived[] = "nvbandwidth Version: v0.2\n\nDevice 0: X\nDevice 1: X\n\n"
                          "Waiving device_to_device_memcpy_read_ce.\n";
    struct prov_cmd_result r[3] = {{1, 1, "", ""}, {1, 1, "", ""}, {1, 0, waived, ""}};
    g.expected_gpus = 2;
    prov_check_eval(&g, PROV_CHECK_BANDWIDTH, r, 3, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "peer-to-peer") != NULL);
    CHECK(json_is_false(json_object_get(o.values, "p2p")));
    json_decref(o.values);
    g.bw.min_d2d = 0;
    prov_check_eval(&g, PROV_CHECK_BANDWIDTH, r, 3, &o);
    CHECK(o.status == PLAN_CHECK_WARN);
    json_decref(o.values);
}

static void check_commands(void)
{
    struct prov_gate g;
    char why[200];
    bw_gate(&g);
    char *c = prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 2);
    CHECK(c != NULL);
    CHECK(strstr(c, "docker run --rm --gpus all --ipc host -- 'nvcr.io/nvidia/pytorch@sha256:") ==
          c);
    CHECK(strstr(c, "'all_reduce_perf' '-b' '8M' '-e' '1024M' '-f' '2' '-g' '8' '-n' '20'") !=
          NULL);
    free(c);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_BANDWIDTH, 2) == PROV_CMD_WORKLOAD);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_BANDWIDTH, 0) == PROV_CMD_QUERY);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_BANDWIDTH, 1) == PROV_CMD_QUERY);
    CHECK(prov_check_timeout(&g, PROV_CHECK_BANDWIDTH, 2) == 120);
    CHECK(prov_check_timeout(&g, PROV_CHECK_BANDWIDTH, 0) == 0);
    CHECK(prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 3) == NULL);
    c = prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 0);
    CHECK_STR(c, "nvidia-smi topo -m");
    free(c);
    g.bw.path = "/opt/nccl-tests/build";
    g.bw.tool = PROV_BW_NCCL | PROV_BW_NVBW;
    CHECK(prov_check_ncmds(&g, PROV_CHECK_BANDWIDTH) == 4);
    c = prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 3);
    CHECK(c != NULL &&
          strstr(c, "t='/opt/nccl-tests/build/nvbandwidth'; if [ -x \"$t\" ]; then "
                    "exec \"$t\" '-i' '20' '-t' 'device_to_device_memcpy_read_ce'") == c);
    CHECK(strstr(c, "exit 127") != NULL);
    free(c);
    g.bw.path = "/opt/x'; rm -rf /";
    CHECK(prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 2) == NULL);
    /* one GPU: not applicable unless host_to_device */
    bw_gate(&g);
    g.expected_gpus = 1;
    g.checks = 0;
    CHECK(!prov_check_applies(&g, PROV_CHECK_BANDWIDTH, why, sizeof why));
    g.bw.host_to_device = 1;
    CHECK(prov_check_applies(&g, PROV_CHECK_BANDWIDTH, why, sizeof why));
    c = prov_check_cmd(&g, PROV_CHECK_BANDWIDTH, 2);
    CHECK(c != NULL &&
          strstr(c, "'nvbandwidth' '-i' '20' '-t' 'host_to_device_memcpy_ce'") != NULL);
    free(c);
}

static void check_numa_expectation(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    bw_gate(&g);
    g.bw.expect_numa_nodes = 2;
    judge(&g, "nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_PASS);
    json_decref(o.values);
    g.bw.expect_numa_nodes = 4;
    judge(&g, "nccl_all_reduce_perf__H100-SXM-NVSwitch__8gpu_1node_healthy.txt", 0, "", &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "NUMA") != NULL);
    json_decref(o.values);
}

UNIT_SUITE(bandwidth_tests) = {
    {"bandwidth: nccl-tests captures", nccl_fixtures},
    {"bandwidth: nccl-tests quirks (srun, N/A, comma, 2018 trailer, cut)", nccl_quirks},
    {"bandwidth: nvbandwidth captures", nvbw_fixtures},
    {"bandwidth: numactl -H / lscpu captures", numa_fixtures},
    {"bandwidth: topo -m NIC/affinity captures", topo_fixtures},
    {"bandwidth: catalog references", catalog},
    {"bandwidth: healthy passes, degraded fails (catalog/pool minimum)",
     check_healthy_and_degraded},
    {"bandwidth: wrong results, errors, duplicated rows, cut output fail", check_failures},
    {"bandwidth: missing tool skip / required investigate", check_missing_tool},
    {"bandwidth: nvbandwidth judged (healthy, assert, abort, waived)", check_nvbandwidth},
    {"bandwidth: commands quoted, classes, timeouts", check_commands},
    {"bandwidth: NUMA expectation", check_numa_expectation},
    UNIT_END,
};
