/* The fixtures of dcgmi, the container tools, the version outputs, nvidia-smi's errors and
 * -q -x in tests/fixtures/nvidia/ → their parsers → asserted values (nvidia-smi's query
 * and table: test_fixtures_smi.c; -L, nvlink, topo: test_fixtures_links.c).
 * Adding a fixture without a row in a table fails the meta-test in main.c. */
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

/* ----------------------------------------------------------------- dcgmi */

static void c_diag_pass(th_t *t, const char *s, size_t n)
{
    prov_diag_t d;
    PARSE_OR_FAIL(prov_diag_parse(s, n, &d, &err));
    EXPECT(t, d.verdict == PROV_DIAG_PASS);
    EXPECT(t, d.ran_ok_banner && d.table_complete);
    EXPECT_STR(t, d.dcgm_version, "3.3.8");
    EXPECT_STR(t, d.driver_version, "535.309.01");
    EXPECT_STR(t, d.gpu_device_ids, "2330");
    EXPECT_SZ(t, d.ntests, 11);
    for (size_t i = 0; i < d.ntests; i++)
        EXPECT(t, d.tests[i].result == PROV_DIAG_PASS);
    const prov_diag_test_t *p = prov_diag_find(&d, "Persistence Mode");
    EXPECT(t, p != NULL);
    if (p) {
        EXPECT_STR(t, p->category, "Deployment");
        EXPECT_STR(t, p->message,
                   "Persistence mode for GPU 0 is disabled. Enable persistence mode "
                   "by running \"nvidia-smi -i <gpuId> -pm 1 \" as root.");
    }
    const prov_diag_test_t *m = prov_diag_find(&d, "GPU Memory");
    EXPECT(t, m && strcmp(m->category, "Hardware") == 0 && m->ngpu_results == 1 &&
                  m->gpu_results[0].gpu == -1);
    const prov_diag_test_t *pcie = prov_diag_find(&d, "PCIe");
    EXPECT(t, pcie && strcmp(pcie->category, "Integration") == 0);
    EXPECT(t, prov_diag_find(&d, "Page Retirement/Row Remap") != NULL);
    prov_diag_free(&d);
}

static void c_diag_pcie_fail(th_t *t, const char *s, size_t n)
{
    prov_diag_t d;
    PARSE_OR_FAIL(prov_diag_parse(s, n, &d, &err));
    EXPECT(t, d.verdict == PROV_DIAG_FAIL);
    EXPECT_STR(t, d.dcgm_version, "3.3.0");
    EXPECT_STR(t, d.driver_version, "530.30.02");
    EXPECT_STR(t, d.gpu_device_ids, "2204,2204,2204,2204,2204,2204,2204,2204");
    EXPECT_SZ(t, d.ntests, 11);
    const prov_diag_test_t *p = prov_diag_find(&d, "PCIe");
    EXPECT(t, p && p->result == PROV_DIAG_FAIL);
    if (p) {
        EXPECT_STR(t, p->result_text, "Fail - All");
        EXPECT_STR(t, p->message,
                   "GPU 0 Error using CUDA API cudaDeviceGetByPCIBusId Check DCGM and system logs "
                   "for errors. Reset GPU. Restart DCGM. Rerun diagnostics. 'system has "
                   "unsupported display driver / cuda driver combination' for GPU 0, bus ID = "
                   "00000000:1B:00.0");
    }
    const prov_diag_test_t *m = prov_diag_find(&d, "GPU Memory");
    EXPECT(t, m && m->result == PROV_DIAG_SKIP);
    const prov_diag_test_t *den = prov_diag_find(&d, "Denylist");
    EXPECT(t, den && den->result == PROV_DIAG_PASS);
    prov_diag_free(&d);
}

static void c_diag_partial(th_t *t, const char *s, size_t n)
{
    prov_diag_t d;
    PARSE_OR_FAIL(prov_diag_parse(s, n, &d, &err));
    EXPECT(t, d.verdict == PROV_DIAG_ERROR);
    EXPECT(t, !d.table_complete);
    EXPECT_SZ(t, d.ntests, 1);
    if (d.ntests == 1) {
        EXPECT_STR(t, d.tests[0].category, "Deployment");
        EXPECT_STR(t, d.tests[0].name, "Error");
        EXPECT(t, d.tests[0].result == PROV_DIAG_ERROR);
        EXPECT_STR(t, d.tests[0].message,
                   "GPU 3 has uncorrectable memory errors and row remappings are pending");
    }
    prov_diag_free(&d);
}

static void c_diag_dcgm4(th_t *t, const char *s, size_t n)
{
    prov_diag_t d;
    PARSE_OR_FAIL(prov_diag_parse(s, n, &d, &err));
    EXPECT(t, d.verdict == PROV_DIAG_ERROR);
    EXPECT_SZ(t, d.ntests, 0);
    EXPECT_SZ(t, d.nerrors, 2);
    if (d.nerrors == 2) {
        EXPECT(t, strstr(d.errors[0], "Return: (-30)") != NULL);
        EXPECT(t, strstr(d.errors[1], "plugins/cuda13/") != NULL);
    }
    prov_diag_free(&d);
}

/* ----------------------------------------------------------- containers */

static void c_ctr_docker(th_t *t, const char *s, size_t n)
{
    prov_ctr_error_t e;
    prov_ctr_classify(s, n, 125, &e);
    EXPECT(t, e.reason == PROV_CTR_NO_RUNTIME);
    EXPECT(t, e.line == 1);
    EXPECT(t, strstr(e.matched, "could not select device driver \"\"") != NULL);
}

static void c_ctr_compose(th_t *t, const char *s, size_t n)
{
    prov_ctr_error_t e;
    prov_ctr_classify(s, n, -1, &e);
    EXPECT(t, e.reason == PROV_CTR_NO_RUNTIME);
    EXPECT(t, strstr(e.matched, "\"nvidia\"") != NULL);
}

static void c_ctr_libnvml(th_t *t, const char *s, size_t n)
{
    prov_ctr_error_t e;
    prov_ctr_classify(s, n, 1, &e);
    EXPECT(t, e.reason == PROV_CTR_LIBNVIDIA_ML_MISSING);
    EXPECT_STR(t, prov_ctr_reason_name(e.reason), "libnvidia_ml_missing");
    prov_ctr_info_t i;
    prov_err_t err;
    EXPECT(t, prov_ctr_info_parse(s, n, &i, &err) == -1);
}

static void c_ctr_info_debugtail(th_t *t, const char *s, size_t n)
{
    prov_ctr_info_t i;
    PARSE_OR_FAIL(prov_ctr_info_parse(s, n, &i, &err));
    EXPECT_STR(t, i.nvrm_version, "390.87");
    EXPECT_STR(t, i.cuda_version, "9.1");
    EXPECT_SZ(t, i.ndevs, 1);
    EXPECT_SZ(t, i.nlog_lines, 5);
    if (i.ndevs == 1) {
        EXPECT_NUM(t, i.devs[0].index, 0);
        EXPECT_NUM(t, i.devs[0].minor, 0);
        EXPECT_STR(t, i.devs[0].model, "GeForce GTX 1080 with Max-Q Design");
        EXPECT_STR(t, i.devs[0].brand, "GeForce");
        EXPECT_STR(t, i.devs[0].uuid, "GPU-e572b8ee-523e-f7be-a359-33149791a02a");
        EXPECT_STR(t, i.devs[0].bus, "00000000:01:00.0");
        EXPECT_STR(t, i.devs[0].arch, "6.1");
    }
    prov_ctr_error_t e;
    prov_ctr_classify(s, n, 0, &e);
    EXPECT(t, e.reason == PROV_CTR_OK);
    prov_ctr_info_free(&i);
}

static void c_ctr_info_nulls(th_t *t, const char *s, size_t n)
{
    prov_ctr_info_t i;
    PARSE_OR_FAIL(prov_ctr_info_parse(s, n, &i, &err));
    EXPECT_STR(t, i.nvrm_version, "");
    EXPECT_STR(t, i.cuda_version, "10.2");
    EXPECT_SZ(t, i.ndevs, 1);
    if (i.ndevs == 1) {
        EXPECT_STR(t, i.devs[0].model, "Xavier");
        EXPECT_STR(t, i.devs[0].brand, "");
        EXPECT_STR(t, i.devs[0].uuid, "");
        EXPECT_STR(t, i.devs[0].bus, "");
        EXPECT_STR(t, i.devs[0].arch, "7.2");
    }
    prov_ctr_info_free(&i);
}

/* ------------------------------------------------------------- versions */

static void check_nvcc(th_t *t, const char *s, size_t n, const char *rel, const char *ver,
                       const char *build, int major, int minor)
{
    prov_nvcc_t v;
    PARSE_OR_FAIL(prov_nvcc_parse(s, n, &v, &err));
    EXPECT_STR(t, v.release, rel);
    EXPECT_STR(t, v.version, ver);
    EXPECT_STR(t, v.build, build);
    EXPECT(t, v.major == major && v.minor == minor);
}

static void c_nvcc_101(th_t *t, const char *s, size_t n)
{
    check_nvcc(t, s, n, "10.1", "10.1.243", "", 10, 1);
}
static void c_nvcc_111(th_t *t, const char *s, size_t n)
{
    check_nvcc(t, s, n, "11.1", "11.1.105", "cuda_11.1.TC455_06.29190527_0", 11, 1);
}
static void c_nvcc_125(th_t *t, const char *s, size_t n)
{
    check_nvcc(t, s, n, "12.5", "12.5.82", "cuda_12.5.r12.5/compiler.34385749_0", 12, 5);
}
static void c_nvcc_126(th_t *t, const char *s, size_t n)
{
    check_nvcc(t, s, n, "12.6", "12.6.77", "cuda_12.6.r12.6/compiler.34841621_0", 12, 6);
}

static void c_kmod_525(th_t *t, const char *s, size_t n)
{
    prov_kmod_t k;
    PARSE_OR_FAIL(prov_kmod_parse(s, n, &k, &err));
    EXPECT_STR(t, k.version, "525.60.11");
    EXPECT_STR(t, k.arch, "x86_64");
    EXPECT(t, k.open);
    EXPECT_STR(t, k.gcc, "gcc version 12.2.0 (GCC)"); /* trailing space trimmed */
}

static void c_kmod_565(th_t *t, const char *s, size_t n)
{
    prov_kmod_t k;
    PARSE_OR_FAIL(prov_kmod_parse(s, n, &k, &err));
    EXPECT_STR(t, k.version, "565.57.01");
    EXPECT(t, k.open);
    EXPECT_STR(t, k.gcc, "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)");
}

static void c_smi_version(th_t *t, const char *s, size_t n)
{
    prov_smi_version_t v;
    PARSE_OR_FAIL(prov_smi_version_parse(s, n, &v, &err));
    EXPECT_STR(t, v.smi, "590.48.01");
    EXPECT_STR(t, v.nvml, "590.48");
    EXPECT_STR(t, v.driver, "590.48.01");
    EXPECT_STR(t, v.cuda, "13.1");
}

/* ------------------------------------------------------ nvidia-smi errors */

static void check_nvsmi_err(th_t *t, const char *s, size_t n, prov_nvsmi_reason_t r,
                            const char *nvml)
{
    prov_nvsmi_error_t e;
    prov_nvsmi_error_classify(s, n, 9, &e);
    EXPECT(t, e.reason == r);
    EXPECT(t, e.line == 1);
    EXPECT(t, e.message[0] != '\0');
    EXPECT_STR(t, e.nvml_library_version, nvml);
    /* and the table parser refuses it cleanly */
    prov_smi_t sm;
    prov_err_t err;
    EXPECT(t, prov_smi_parse(s, n, &sm, &err) == -1 && err.msg[0]);
}

static void c_err_nodev(th_t *t, const char *s, size_t n)
{
    check_nvsmi_err(t, s, n, PROV_NVSMI_NO_DEVICES, "");
}
static void c_err_nodrv(th_t *t, const char *s, size_t n)
{
    check_nvsmi_err(t, s, n, PROV_NVSMI_NO_DRIVER, "");
}
static void c_err_mm550(th_t *t, const char *s, size_t n)
{
    check_nvsmi_err(t, s, n, PROV_NVSMI_DRIVER_LIBRARY_MISMATCH, "550.144");
}
static void c_err_mmlegacy(th_t *t, const char *s, size_t n)
{
    check_nvsmi_err(t, s, n, PROV_NVSMI_DRIVER_LIBRARY_MISMATCH, "");
}

/* ------------------------------------------------------------------ XML */

static void c_xml_a10g(th_t *t, const char *s, size_t n)
{
    prov_xml_t x;
    PARSE_OR_FAIL(prov_xml_parse(s, n, &x, &err));
    EXPECT_STR(t, x.driver_version, "515.105.01");
    EXPECT_NUM(t, x.attached_gpus, 1);
    EXPECT_SZ(t, x.ngpus, 1);
    if (x.ngpus == 1) {
        EXPECT_STR(t, x.gpus[0].product_name, "NVIDIA A10G");
        EXPECT_STR(t, x.gpus[0].uuid, "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94");
        EXPECT_NUM(t, x.gpus[0].fb_total_mib, 23028);
        EXPECT_NUM(t, x.gpus[0].ecc_dram_uncorr_volatile, 0);
        EXPECT_NUM(t, x.gpus[0].ecc_dram_uncorr_aggregate, 0);
        EXPECT_ST(t, x.gpus[0].retired_pending, PROV_V_NA);
        EXPECT_FLAG(t, x.gpus[0].remapped_pending, false);
        EXPECT(t, x.gpus[0].nmig_devices == 0);
    }
    prov_xml_free(&x);
}

static void c_xml_t4(th_t *t, const char *s, size_t n)
{
    prov_xml_t x;
    PARSE_OR_FAIL(prov_xml_parse(s, n, &x, &err));
    EXPECT_SZ(t, x.ngpus, 1);
    if (x.ngpus == 1) {
        EXPECT_STR(t, x.gpus[0].product_name, "Tesla T4");
        EXPECT_NUM(t, x.gpus[0].fb_total_mib, 15360);
        EXPECT_FLAG(t, x.gpus[0].retired_pending, false);
        EXPECT_ST(t, x.gpus[0].remapped_pending, PROV_V_NA);
        EXPECT_ST(t, x.gpus[0].mig_enabled, PROV_V_NA);
    }
    prov_xml_free(&x);
}

static void c_xml_mig(th_t *t, const char *s, size_t n)
{
    prov_xml_t x;
    PARSE_OR_FAIL(prov_xml_parse(s, n, &x, &err));
    EXPECT_STR(t, x.driver_version, "535.54.03");
    EXPECT_STR(t, x.cuda_version, "12.2");
    EXPECT_NUM(t, x.attached_gpus, 4); /* trimmed to one <gpu> by the contributor */
    EXPECT_SZ(t, x.ngpus, 1);
    if (x.ngpus == 1) {
        EXPECT_STR(t, x.gpus[0].bus_id, "00000000:01:00.0");
        EXPECT_STR(t, x.gpus[0].product_name, "NVIDIA A100-SXM4-80GB");
        EXPECT_FLAG(t, x.gpus[0].mig_enabled, true);
        EXPECT_SZ(t, x.gpus[0].nmig_devices, 4);
        EXPECT_NUM(t, x.gpus[0].fb_total_mib, 81920); /* not a MIG device's 19968 */
    }
    prov_xml_free(&x);
}

static void c_xml_v13(th_t *t, const char *s, size_t n)
{
    prov_xml_t x;
    PARSE_OR_FAIL(prov_xml_parse(s, n, &x, &err));
    EXPECT_STR(t, x.driver_version, "595.58.03");
    EXPECT_STR(t, x.cuda_version, "13.2");
    EXPECT_SZ(t, x.ngpus, 1);
    if (x.ngpus == 1) {
        EXPECT_STR(t, x.gpus[0].product_name, "NVIDIA GeForce RTX 3080");
        EXPECT_STR(t, x.gpus[0].uuid, "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4");
        EXPECT_NUM(t, x.gpus[0].fb_total_mib, 10240);
        EXPECT_ST(t, x.gpus[0].ecc_dram_uncorr_volatile, PROV_V_NA);
        EXPECT_ST(t, x.gpus[0].mig_enabled, PROV_V_NA);
        EXPECT_ST(t, x.gpus[0].remapped_pending, PROV_V_NA);
    }
    prov_xml_free(&x);
}

/* ---------------------------------------------------------------- table */

const fixture_case_t fixture_cases[] = {
    {"dcgmi_diag_r2_pass__H100-80GB-HBM3__1gpu.txt", PK_DIAG, c_diag_pass},
    {"dcgmi_diag_r2_pcie_fail__RTX-3090__8gpu.txt", PK_DIAG, c_diag_pcie_fail},
    {"dcgmi_diag_r3_error_partial__unknown__8gpu.txt", PK_DIAG, c_diag_partial},
    {"dcgmi_diag_r3_plugin_error_dcgm4__H100-80GB-HBM3__1gpu.txt", PK_DIAG, c_diag_dcgm4},
    {"docker_err_no_device_driver__RTX-4090__4gpu.txt", PK_CTR, c_ctr_docker},
    {"docker_compose_err_nvidia_driver__unknown__0gpu.txt", PK_CTR, c_ctr_compose},
    {"nvidia_container_cli_err_libnvidia_ml__none__0gpu.txt", PK_CTR, c_ctr_libnvml},
    {"nvidia_container_cli_info_debugtail__GTX-1080-MaxQ__1gpu.txt", PK_CTR_INFO,
     c_ctr_info_debugtail},
    {"nvidia_container_cli_info_nulls__Jetson-Xavier__1gpu.txt", PK_CTR_INFO, c_ctr_info_nulls},
    {"nvcc_version_10.1_nobuildline__none__0gpu.txt", PK_NVCC, c_nvcc_101},
    {"nvcc_version_11.1__none__0gpu.txt", PK_NVCC, c_nvcc_111},
    {"nvcc_version_12.5__none__0gpu.txt", PK_NVCC, c_nvcc_125},
    {"nvcc_version_12.6__H100-80GB-HBM3__1gpu.txt", PK_NVCC, c_nvcc_126},
    {"proc_driver_version_open525_trailingspace__none__0gpu.txt", PK_KMOD, c_kmod_525},
    {"proc_driver_version_open565__none__0gpu.txt", PK_KMOD, c_kmod_565},
    {"version__H100-80GB-HBM3__1gpu.txt", PK_SMI_VERSION, c_smi_version},
    {"nvsmi_err_no_devices__RTX-5090__1gpu.txt", PK_NVSMI_ERR, c_err_nodev},
    {"nvsmi_err_no_driver__none__0gpu.txt", PK_NVSMI_ERR, c_err_nodrv},
    {"nvsmi_err_version_mismatch_drv550__unknown__0gpu.txt", PK_NVSMI_ERR, c_err_mm550},
    {"nvsmi_err_version_mismatch_legacy__unknown__0gpu.txt", PK_NVSMI_ERR, c_err_mmlegacy},
    {"q_x__A10G__1gpu.xml", PK_XML, c_xml_a10g},
    {"q_x__Tesla-T4__1gpu.xml", PK_XML, c_xml_t4},
    {"q_x_mig__A100-SXM4-80GB__1gpu.xml", PK_XML, c_xml_mig},
    {"q_x_v13__RTX-3080__1gpu.xml", PK_XML, c_xml_v13},
};
const size_t fixture_cases_n = sizeof fixture_cases / sizeof fixture_cases[0];
