/* pk_run (every parser behind one call) and unit tests of the helpers. */
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

const char *pk_name(pkind_t k)
{
    static const char *const names[PK_COUNT] = {"query-gpu csv",
                                                "nvidia-smi table",
                                                "nvidia-smi -L",
                                                "topo -m",
                                                "nvlink -s",
                                                "dcgmi diag",
                                                "container errors",
                                                "container-cli info",
                                                "nvcc --version",
                                                "/proc/driver/nvidia/version",
                                                "nvidia-smi --version",
                                                "nvidia-smi errors",
                                                "-q -x xml",
                                                "kernel log",
                                                "monitor sample",
                                                "-q fabric"};
    return k < PK_COUNT ? names[k] : "?";
}

/* Checks a parser's return contract and renders JSON. */
static int finish(int rc, const prov_err_t *err, json_t *j, char *why, size_t cap)
{
    if (rc == 0) {
        if (!j) {
            snprintf(why, cap, "parsed but to_json returned NULL");
            return -1;
        }
        char *s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!s) {
            snprintf(why, cap, "to_json result not serialisable");
            return -1;
        }
        free(s);
        return 0;
    }
    json_decref(j);
    if (rc != -1) {
        snprintf(why, cap, "returned %d (expected 0 or -1)", rc);
        return -1;
    }
    if (!err->msg[0]) {
        snprintf(why, cap, "error without a message");
        return -1;
    }
    return 1;
}

/* query-gpu csv again, with a field list (the noheader path): a failure must still say
 * why. 0, or -1 with why set. */
static int qgpu_fields_contract(const char *text, size_t len, char *why, size_t cap)
{
    static const char *const f[] = {"index", "name", "memory.total", "uuid"};
    prov_qgpu_t q;
    prov_err_t e2;
    memset(&e2, 0, sizeof e2);
    int rc2 = prov_qgpu_parse(text, len, f, 4, &q, &e2);
    if (rc2 == 0)
        prov_qgpu_free(&q);
    else if (!e2.msg[0]) {
        snprintf(why, cap, "error without a message (field list)");
        return -1;
    }
    return 0;
}

/* The GPU tools' parsers (nvidia-smi's forms, topo, nvlink, dcgmi). */
static int run_gpu_tools(pkind_t k, const char *text, size_t len, prov_err_t *err, json_t **j)
{
    int rc = -1;
    switch (k) {
    case PK_QGPU: {
        prov_qgpu_t q;
        rc = prov_qgpu_parse(text, len, NULL, 0, &q, err);
        if (rc == 0) {
            *j = prov_qgpu_to_json(&q);
            prov_qgpu_free(&q);
        }
        break;
    }
    case PK_SMI: {
        prov_smi_t s;
        rc = prov_smi_parse(text, len, &s, err);
        if (rc == 0) {
            *j = prov_smi_to_json(&s);
            prov_smi_free(&s);
        }
        break;
    }
    case PK_LIST: {
        prov_list_t l;
        rc = prov_list_parse(text, len, &l, err);
        if (rc == 0) {
            *j = prov_list_to_json(&l);
            prov_list_free(&l);
        }
        break;
    }
    case PK_TOPO: {
        prov_topo_t t;
        rc = prov_topo_parse(text, len, &t, err);
        if (rc == 0) {
            (void)prov_topo_check_pairs(&t, "NV*,PIX", NULL, NULL);
            *j = prov_topo_to_json(&t);
            prov_topo_free(&t);
        }
        break;
    }
    case PK_NVLINK: {
        prov_nvlink_t n;
        rc = prov_nvlink_parse(text, len, &n, err);
        if (rc == 0) {
            *j = prov_nvlink_to_json(&n);
            prov_nvlink_free(&n);
        }
        break;
    }
    case PK_DIAG: {
        prov_diag_t d;
        rc = prov_diag_parse(text, len, &d, err);
        if (rc == 0) {
            *j = prov_diag_to_json(&d);
            prov_diag_free(&d);
        }
        break;
    }
    case PK_XML: {
        prov_xml_t x;
        rc = prov_xml_parse(text, len, &x, err);
        if (rc == 0) {
            *j = prov_xml_to_json(&x);
            prov_xml_free(&x);
        }
        break;
    }
    default: break;
    }
    return rc;
}

/* The stack's parsers and classifiers (container runtime, versions, nvidia-smi errors). */
static int run_stack_tools(pkind_t k, const char *text, size_t len, prov_err_t *err, json_t **j)
{
    int rc = -1;
    switch (k) {
    case PK_CTR: {
        prov_ctr_error_t e;
        prov_ctr_classify(text, len, 1, &e);
        rc = 0;
        *j = prov_ctr_error_to_json(&e);
        break;
    }
    case PK_CTR_INFO: {
        prov_ctr_info_t i;
        rc = prov_ctr_info_parse(text, len, &i, err);
        if (rc == 0) {
            *j = prov_ctr_info_to_json(&i);
            prov_ctr_info_free(&i);
        }
        break;
    }
    case PK_NVCC: {
        prov_nvcc_t n;
        rc = prov_nvcc_parse(text, len, &n, err);
        if (rc == 0)
            *j = prov_nvcc_to_json(&n);
        break;
    }
    case PK_KMOD: {
        prov_kmod_t m;
        rc = prov_kmod_parse(text, len, &m, err);
        if (rc == 0)
            *j = prov_kmod_to_json(&m);
        break;
    }
    case PK_SMI_VERSION: {
        prov_smi_version_t v;
        rc = prov_smi_version_parse(text, len, &v, err);
        if (rc == 0)
            *j = prov_smi_version_to_json(&v);
        break;
    }
    case PK_NVSMI_ERR: {
        prov_nvsmi_error_t e;
        prov_nvsmi_error_classify(text, len, 1, &e);
        rc = 0;
        *j = prov_nvsmi_error_to_json(&e);
        break;
    }
    default: break;
    }
    return rc;
}

int pk_run(pkind_t k, const char *text, size_t len, char *why, size_t cap)
{
    prov_err_t err;
    memset(&err, 0, sizeof err);
    json_t *j = NULL;
    int rc = -1;
    why[0] = '\0';
    switch (k) {
    case PK_QGPU:
    case PK_SMI:
    case PK_LIST:
    case PK_TOPO:
    case PK_NVLINK:
    case PK_DIAG:
    case PK_XML: rc = run_gpu_tools(k, text, len, &err, &j); break;
    case PK_CTR:
    case PK_CTR_INFO:
    case PK_NVCC:
    case PK_KMOD:
    case PK_SMI_VERSION:
    case PK_NVSMI_ERR: rc = run_stack_tools(k, text, len, &err, &j); break;
    case PK_KMSG:
    case PK_SAMPLE:
    case PK_FABRIC: rc = pk_run_monitor(k, text, len, &err, &j); break;
    case PK_COUNT: snprintf(why, cap, "bad kind"); return -1;
    }
    if (k == PK_QGPU && qgpu_fields_contract(text, len, why, cap) != 0) {
        json_decref(j);
        return -1;
    }
    int r = finish(rc, &err, j, why, cap);
    if (r == 1 && why[0] == '\0')
        snprintf(why, cap, "%s", err.msg);
    return r;
}

static void test_link_matches(th_t *t)
{
    th_begin(t);
    EXPECT(t, prov_link_matches("NV12", "NV*"));
    EXPECT(t, prov_link_matches("NV18", "nv*"));
    EXPECT(t, prov_link_matches("NV4", "NV#"));
    EXPECT(t, prov_link_matches("NV12", "NV12"));
    EXPECT(t, !prov_link_matches("NV12", "NV18"));
    EXPECT(t, !prov_link_matches("NODE", "NV*"));
    EXPECT(t, !prov_link_matches("NVX", "NV*"));
    EXPECT(t, prov_link_matches("PIX", "PIX"));
    EXPECT(t, !prov_link_matches("PXB", "PIX"));
    EXPECT(t, prov_link_matches("SYS", "any"));
    EXPECT(t, prov_link_matches("SYS", "ANY"));
    EXPECT(t, prov_link_matches("SYS", NULL));
    EXPECT(t, prov_link_matches("SYS", ""));
    EXPECT(t, prov_link_matches("PIX", "NV*,PIX"));
    EXPECT(t, prov_link_matches("NV6", "NV*, PIX"));
    EXPECT(t, prov_link_matches("PIX", " NV* , PIX "));
    EXPECT(t, !prov_link_matches("SYS", "NV*,PIX"));
    EXPECT(t, !prov_link_matches("", "NV*"));
    EXPECT(t, !prov_link_matches("PHB", ","));
    EXPECT(t, prov_link_matches("SOC", "SOC"));
    th_end(t, "prov_link_matches: NV*, NV#, exact, any, comma lists");
}

static void test_topo_helpers(th_t *t)
{
    th_begin(t);
    static const char nvl[] = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
                              "GPU0\t X \tNV12\tNV4\t0-7\n"
                              "GPU1\tNV12\t X \tSYS\t0-7\n"
                              "GPU2\tNV4\tSYS\t X \t8-15\n";
    prov_topo_t tp;
    prov_err_t err;
    if (prov_topo_parse(nvl, sizeof nvl - 1, &tp, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        size_t a = 99, b = 99;
        EXPECT_SZ(t, prov_topo_check_pairs(&tp, "NV*", &a, &b), 1);
        EXPECT(t, a == 1 && b == 2);
        EXPECT_SZ(t, prov_topo_check_pairs(&tp, "NV*,SYS", NULL, NULL), 0);
        EXPECT_SZ(t, prov_topo_check_pairs(&tp, "any", NULL, NULL), 0);
        EXPECT_SZ(t, prov_topo_check_pairs(&tp, "NV12", NULL, NULL), 2);
        EXPECT(t, prov_topo_min_nvlinks(&tp) == 0);
        EXPECT_STR(t, tp.cpu_affinity[2], "8-15");
        EXPECT(t, !tp.has_numa_affinity);
        prov_topo_free(&tp);
        prov_topo_free(&tp); /* idempotent */
    }
    static const char dup[] = "\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU0\tNV2\t X \n";
    EXPECT(t, prov_topo_parse(dup, sizeof dup - 1, &tp, &err) == -1);
    static const char diag[] = "\tGPU0\tGPU1\nGPU0\tNV2\tNV2\nGPU1\tNV2\t X \n";
    EXPECT(t, prov_topo_parse(diag, sizeof diag - 1, &tp, &err) == -1 &&
                  strstr(err.msg, "diagonal") != NULL);
    static const char missing[] = "\tGPU0\tGPU1\nGPU0\t X \tNV2\n";
    EXPECT(t, prov_topo_parse(missing, sizeof missing - 1, &tp, &err) == -1 &&
                  strstr(err.msg, "GPU1 missing") != NULL);
    static const char shortrow[] = "\tGPU0\tGPU1\nGPU0\t X\nGPU1\tNV2\t X \n";
    EXPECT(t, prov_topo_parse(shortrow, sizeof shortrow - 1, &tp, &err) == -1 && err.line == 2);
    /* a SOC (older driver) link class is kept as-is */
    static const char soc[] = "        GPU0    GPU1    CPU Affinity\n"
                              "GPU0     X      SOC     0-11\n"
                              "GPU1    SOC      X      0-11\n";
    if (prov_topo_parse(soc, sizeof soc - 1, &tp, &err) != 0) {
        th_fail(t, __LINE__, "soc parse: %s", err.msg);
    } else {
        EXPECT_STR(t, prov_topo_gpu_link(&tp, 0, 1), "SOC");
        EXPECT(t, prov_topo_min_nvlinks(&tp) == 0);
        prov_topo_free(&tp);
    }
    th_end(t, "topo helpers: check_pairs, min_nvlinks, malformed matrices rejected");
}

static void test_qgpu_extra(th_t *t)
{
    th_begin(t);
    prov_qgpu_t q;
    prov_err_t err;
    /* noheader with units, mixed models, markers, leading spaces */
    static const char csv[] =
        "0, NVIDIA H100 80GB HBM3, 81559 MiB, 35 %, 250.00 W, [N/A], No\n"
        "1, NVIDIA A100-SXM4-80GB, 81920 MiB, [Not Supported], [Unknown Error], 2, Yes\n"
        "2, Tesla T4, N/A, 0 %, [Requested functionality has been deprecated], 0, [N/A]\n";
    static const char *const f[] = {"index",
                                    "name",
                                    "memory.total",
                                    "utilization.gpu",
                                    "power.draw",
                                    "ecc.errors.uncorrected.volatile.total",
                                    "retired_pages.pending"};
    if (prov_qgpu_parse(csv, sizeof csv - 1, f, 7, &q, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_SZ(t, q.nrows, 3);
        EXPECT(t, !q.had_header);
        EXPECT_NUM(t, q.rows[0].mem_total_mib, 81559);
        EXPECT_NUM(t, q.rows[0].util_gpu_pct, 35);
        EXPECT_NUM(t, q.rows[0].power_draw_w, 250);
        EXPECT_ST(t, q.rows[0].ecc_uncorr_volatile, PROV_V_NA);
        EXPECT_FLAG(t, q.rows[0].retired_pending, false);
        EXPECT_STR(t, q.rows[1].name, "NVIDIA A100-SXM4-80GB");
        EXPECT_ST(t, q.rows[1].util_gpu_pct, PROV_V_NOT_SUPPORTED);
        EXPECT_ST(t, q.rows[1].power_draw_w, PROV_V_UNKNOWN_ERROR);
        EXPECT_NUM(t, q.rows[1].ecc_uncorr_volatile, 2);
        EXPECT_FLAG(t, q.rows[1].retired_pending, true);
        EXPECT_ST(t, q.rows[2].mem_total_mib, PROV_V_NA);
        EXPECT_ST(t, q.rows[2].power_draw_w, PROV_V_DEPRECATED);
        EXPECT_ST(t, q.rows[2].retired_pending, PROV_V_NA);
        EXPECT_ST(t, q.rows[2].temperature_c, PROV_V_ABSENT); /* not queried: absent, not 0 */
        EXPECT_SZ(t, q.n_deprecated, 1);
        prov_qgpu_free(&q);
    }
    /* wrong number of fields names the line */
    static const char bad[] = "0, a, 1 MiB\n1, b\n";
    EXPECT(t, prov_qgpu_parse(bad, sizeof bad - 1, f, 3, &q, &err) == -1 && err.line == 2);
    /* a header that does not match the requested fields */
    static const char hdr[] = "index, name, memory.used [MiB]\n0, x, 1 MiB\n";
    EXPECT(t, prov_qgpu_parse(hdr, sizeof hdr - 1, f, 3, &q, &err) == -1 &&
                  strstr(err.msg, "memory.total") != NULL);
    /* no field list and nothing to read */
    EXPECT(t, prov_qgpu_parse("", 0, NULL, 0, &q, &err) == -1);
    /* not NUL-terminated: parse only the first len bytes */
    static const char cut[] = "index, name\n0, GPU-A\n1, GPU-B";
    if (prov_qgpu_parse(cut, sizeof cut - 1 - 8, NULL, 0, &q, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_SZ(t, q.nrows, 1);
        EXPECT_STR(t, q.rows[0].name, "GPU-A");
        prov_qgpu_free(&q);
    }
    /* many rows (a -lms loop): more cells than PROV items, still parsed */
    size_t cap = 5000 * 24, used = 0;
    char *big = malloc(cap);
    if (big) {
        used += (size_t)snprintf(big, cap, "index, memory.used [MiB]");
        for (int i = 0; i < 5000 && used + 40 < cap; i++)
            used += (size_t)snprintf(big + used, cap - used, "\n%d, %d MiB", i % 8, i);
        if (prov_qgpu_parse(big, used, NULL, 0, &q, &err) != 0) {
            th_fail(t, __LINE__, "big parse: %s", err.msg);
        } else {
            EXPECT(t, q.nrows > 4096);
            EXPECT_NUM(t, q.rows[q.nrows - 1].mem_used_mib, q.nrows - 1);
            prov_qgpu_free(&q);
        }
        free(big);
    }
    th_end(t, "query-gpu: noheader+units, markers -> states, absent != 0, errors name the line");
}

static void test_smi_variants(th_t *t)
{
    th_begin(t);
    /* Pre-450 layout: two rows per GPU, no MIG row, old header, no GI/CI. */
    static const char old[] =
        "+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 465.19.01    Driver Version: 465.19.01    CUDA Version: 11.3     |\n"
        "|-------------------------------+----------------------+----------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
        "|===============================+======================+======================|\n"
        "|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |\n"
        "| N/A   34C    P0    41W / 300W |      0MiB / 16160MiB |      0%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n"
        "|   1  Tesla V100-SXM2...  On   | 00000000:00:1F.0 Off |                    2 |\n"
        "| N/A   35C    P0    42W / 300W |   1000MiB / 16160MiB |     10%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n"
        "\n"
        "+-----------------------------------------------------------------------------+\n"
        "| Processes:                                                                  |\n"
        "|  GPU       PID   Type   Process name                             Usage      |\n"
        "|=============================================================================|\n"
        "|    1     12345      C   python3                                    998MiB |\n"
        "+-----------------------------------------------------------------------------+\n";
    prov_smi_t s;
    prov_err_t err;
    if (prov_smi_parse(old, sizeof old - 1, &s, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_STR(t, s.driver_version, "465.19.01");
        EXPECT_STR(t, s.cuda_version, "11.3");
        EXPECT_SZ(t, s.ngpus, 2);
        EXPECT(t, s.gpus[0].name_truncated);
        EXPECT_NUM(t, s.gpus[1].ecc_uncorr, 2);
        EXPECT_NUM(t, s.gpus[1].mem_used_mib, 1000);
        EXPECT_ST(t, s.gpus[1].mig_enabled, PROV_V_ABSENT);
        EXPECT_SZ(t, s.nprocs, 1);
        if (s.nprocs == 1) {
            EXPECT_NUM(t, s.procs[0].pid, 12345);
            EXPECT_STR(t, s.procs[0].name, "python3");
            EXPECT_NUM(t, s.procs[0].mem_mib, 998);
        }
        prov_smi_free(&s);
    }
    /* TCC Windows variant and CUDA Version N/A */
    static const char tcc[] =
        "| NVIDIA-SMI 472.12       Driver Version: 472.12       CUDA Version: N/A      |\n"
        "| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "|===============================+======================+======================|\n"
        "|   0  Tesla T4            TCC  | 00000000:00:04.0 Off |                    0 |\n"
        "| N/A   40C    P8    10W /  70W |      0MiB / 15205MiB |      0%      Default |\n"
        "|                               |                      |                  N/A |\n"
        "+-------------------------------+----------------------+----------------------+\n";
    if (prov_smi_parse(tcc, sizeof tcc - 1, &s, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_STR(t, s.cuda_version, "");
        EXPECT_STR(t, s.gpus[0].mode, "TCC");
        EXPECT_STR(t, s.gpus[0].name, "Tesla T4");
        prov_smi_free(&s);
    }
    EXPECT(t, prov_smi_parse("No devices were found\n", 22, &s, &err) == -1);
    th_end(t, "nvidia-smi table: pre-450 2-row layout, TCC, CUDA N/A, no-table error");
}

static void test_diag_variants(th_t *t)
{
    th_begin(t);
    /* Per-GPU results on continuation rows (DCGM 3 and DCGM 4 styles). */
    static const char per_gpu[] =
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "+-----  Hardware  ----------+------------------------------------------------+\n"
        "| GPU Memory                | Pass - GPUs: 0, 1                              |\n"
        "|                           | Fail - GPU: 2                                  |\n"
        "| Warning                   | GPU 2 Memory errors                            |\n"
        "+-----  Stress  ------------+------------------------------------------------+\n"
        "| memory_bandwidth          | Pass                                           |\n"
        "|                           | GPU0: Pass                                     |\n"
        "|                           | GPU1: Warn                                     |\n"
        "+---------------------------+------------------------------------------------+\n";
    prov_diag_t d;
    prov_err_t err;
    if (prov_diag_parse(per_gpu, sizeof per_gpu - 1, &d, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        const prov_diag_test_t *m = prov_diag_find(&d, "GPU Memory");
        EXPECT(t, m && m->result == PROV_DIAG_FAIL && m->ngpu_results == 3);
        EXPECT(t, m && m->gpu_results[0].gpu == 0 && m->gpu_results[0].result == PROV_DIAG_PASS);
        EXPECT(t, m && m->gpu_results[1].gpu == 1 && m->gpu_results[1].result == PROV_DIAG_PASS);
        EXPECT(t, m && m->gpu_results[2].gpu == 2 && m->gpu_results[2].result == PROV_DIAG_FAIL);
        EXPECT(t, m && strcmp(m->message, "GPU 2 Memory errors") == 0);
        const prov_diag_test_t *bw = prov_diag_find(&d, "memory_bandwidth");
        EXPECT(t, bw && bw->result == PROV_DIAG_WARN && bw->ngpu_results == 3);
        EXPECT(t, bw && bw->gpu_results[2].gpu == 1);
        EXPECT(t, d.verdict == PROV_DIAG_FAIL);
        EXPECT(t, d.table_complete);
        prov_diag_free(&d);
    }
    EXPECT(t, prov_diag_parse("random text\n", 12, &d, &err) == -1);
    th_end(t, "dcgmi diag: per-GPU continuation results, Warning attaches to its test");
}

static void test_classifiers(th_t *t)
{
    th_begin(t);
    prov_ctr_error_t e;
    prov_ctr_classify("", 0, 0, &e);
    EXPECT(t, e.reason == PROV_CTR_OK);
    prov_ctr_classify("", 0, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_UNKNOWN);
    static const char daemon[] = "docker: Cannot connect to the Docker daemon at "
                                 "unix:///var/run/docker.sock. Is the docker daemon running?.\n";
    prov_ctr_classify(daemon, sizeof daemon - 1, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_DAEMON_DOWN);
    static const char rt[] =
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n";
    prov_ctr_classify(rt, sizeof rt - 1, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_NO_RUNTIME);
    static const char req[] = "nvidia-container-cli: requirement error: unsatisfied condition: "
                              "cuda>=12.4, please update your driver\n";
    prov_ctr_classify(req, sizeof req - 1, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_REQUIREMENT);
    static const char drv[] =
        "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n";
    prov_ctr_classify(drv, sizeof drv - 1, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_NO_GPU_DRIVER);
    static const char other[] = "hello\nsomething failed badly\n";
    prov_ctr_classify(other, sizeof other - 1, 1, &e);
    EXPECT(t, e.reason == PROV_CTR_UNKNOWN && e.line == 2);
    prov_nvsmi_error_t n;
    static const char lost[] =
        "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n";
    prov_nvsmi_error_classify(lost, sizeof lost - 1, 255, &n);
    EXPECT(t, n.reason == PROV_NVSMI_GPU_LOST);
    static const char nvml[] = "Failed to initialize NVML: Unknown Error\n";
    prov_nvsmi_error_classify(nvml, sizeof nvml - 1, 255, &n);
    EXPECT(t, n.reason == PROV_NVSMI_NVML_INIT);
    prov_nvsmi_error_classify("", 0, 0, &n);
    EXPECT(t, n.reason == PROV_NVSMI_OK);
    th_end(t, "classifiers: docker daemon/runtime/requirement/driver, nvidia-smi GPU lost/NVML");
}

static void test_versions(th_t *t)
{
    th_begin(t);
    prov_kmod_t k;
    prov_err_t err;
    static const char prop[] =
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
    if (prov_kmod_parse(prop, sizeof prop - 1, &k, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_STR(t, k.version, "550.54.15");
        EXPECT_STR(t, k.arch, "x86_64");
        EXPECT(t, !k.open);
    }
    static const char arm[] = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.10 "
                              " Release Build  (dvs-builder@U16)\n";
    if (prov_kmod_parse(arm, sizeof arm - 1, &k, &err) != 0) {
        th_fail(t, __LINE__, "parse: %s", err.msg);
    } else {
        EXPECT_STR(t, k.version, "570.86.10");
        EXPECT_STR(t, k.arch, "aarch64");
        EXPECT(t, k.open);
    }
    EXPECT(t, prov_kmod_parse("NVRM version: garbage\n", 22, &k, &err) == -1);
    prov_nvcc_t n;
    EXPECT(t, prov_nvcc_parse("nvcc: command not found\n", 24, &n, &err) == -1);
    th_end(t, "versions: proprietary/aarch64 kernel module, errors");
}

void run_unit_tests(th_t *t)
{
    test_link_matches(t);
    test_topo_helpers(t);
    test_qgpu_extra(t);
    test_smi_variants(t);
    test_diag_variants(t);
    test_classifiers(t);
    test_versions(t);
    run_monitor_unit_tests(t);
}
