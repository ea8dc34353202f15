/* The fixtures of nvidia-smi's query-gpu CSV and default table in tests/fixtures/nvidia/
 * → their parsers → asserted values.
 * Adding a fixture without a row in a table fails the meta-test in main.c. */
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

/* ------------------------------------------------------------ query-gpu */

static const char *gpu_name0(const prov_qgpu_t *q)
{
    return q->nrows ? q->rows[0].name : "";
}

static void c_qcsv_h100(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nfields, 212);
    EXPECT_SZ(t, q.nrows, 1);
    if (q.nrows == 1) {
        const prov_qgpu_row_t *r = &q.rows[0];
        EXPECT_NUM(t, r->index, 0);
        EXPECT_STR(t, r->name, "NVIDIA H100 80GB HBM3");
        EXPECT_STR(t, r->uuid, "GPU-00000000-0000-0000-0000-000000000000");
        EXPECT_STR(t, r->bus_id, "00000000:00:09.0");
        EXPECT_STR(t, r->driver_version, "590.48.01");
        EXPECT_NUM(t, r->mem_total_mib, 81559);
        EXPECT_NUM(t, r->mem_used_mib, 19818);
        EXPECT_NUM(t, r->temperature_c, 59);
        EXPECT_NUM(t, r->util_gpu_pct, 100);
        EXPECT_NUM(t, r->ecc_uncorr_volatile, 0);
        EXPECT_NUM(t, r->ecc_uncorr_aggregate, 0);
        EXPECT_ST(t, r->retired_pending, PROV_V_NA);
        EXPECT_FLAG(t, r->remapped_pending, false);
        EXPECT_FLAG(t, r->mig_enabled, false);
        const char *dm = prov_qgpu_cell(&q, 0, "display_mode");
        EXPECT(t, dm && prov_value_state(dm, strlen(dm)) == PROV_V_DEPRECATED);
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "fan.speed"), "[N/A]");
    }
    EXPECT_SZ(t, q.n_deprecated, 6);
    for (size_t i = 0; i < q.nfields; i++)
        if (strcmp(q.fields[i], "memory.total") == 0)
            EXPECT_STR(t, q.units[i], "MiB");
    prov_qgpu_free(&q);
}

static void c_qcsv_l40s(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nfields, 202);
    EXPECT_SZ(t, q.nrows, 1);
    if (q.nrows == 1) {
        EXPECT_STR(t, q.rows[0].name, "NVIDIA L40S");
        EXPECT_STR(t, q.rows[0].driver_version, "595.80");
        EXPECT_NUM(t, q.rows[0].mem_total_mib, 46068);
        EXPECT_NUM(t, q.rows[0].mem_used_mib, 0);
        EXPECT_NUM(t, q.rows[0].temperature_c, 63);
        EXPECT_ST(t, q.rows[0].mig_enabled, PROV_V_NA);
        EXPECT(t, prov_qgpu_cell(&q, 0, "kmd_version") != NULL);
    }
    prov_qgpu_free(&q);
}

static void c_qcsv_drv465(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nfields, 115);
    EXPECT_SZ(t, q.nrows, 1);
    if (q.nrows == 1) {
        EXPECT_STR(t, q.rows[0].name, "NVIDIA GeForce RTX 2080 SUPER");
        EXPECT_STR(t, q.rows[0].uuid, "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa");
        EXPECT_STR(t, q.rows[0].driver_version, "465.27");
        EXPECT_NUM(t, q.rows[0].mem_total_mib, 7979);
        EXPECT_NUM(t, q.rows[0].mem_used_mib, 344);
        EXPECT_NUM(t, q.rows[0].temperature_c, 32);
        EXPECT_ST(t, q.rows[0].ecc_uncorr_volatile, PROV_V_NA);
        /* plain 'N/A' (old drivers) as well as '[N/A]' */
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "temperature.memory"), "N/A");
        prov_num_t tm = {PROV_V_OK, 0};
        const char *c = prov_qgpu_cell(&q, 0, "temperature.memory");
        tm.st = c ? prov_value_state(c, strlen(c)) : PROV_V_ABSENT;
        EXPECT_ST(t, tm, PROV_V_NA);
        EXPECT(t, prov_qgpu_cell(&q, 0, "clocks_throttle_reasons.active") != NULL);
    }
    prov_qgpu_free(&q);
}

static void c_qcsv_vbios(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nrows, 1);
    EXPECT_STR(t, gpu_name0(&q), "NVIDIA H100 80GB HBM3");
    if (q.nrows == 1) {
        EXPECT_STR(t, q.rows[0].driver_version, "535.309.01");
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "vbios_version"), "96.00.CF.00.01");
        EXPECT_ST(t, q.rows[0].mem_total_mib, PROV_V_ABSENT);
    }
    prov_qgpu_free(&q);
    /* same output with the field list the caller used */
    static const char *const f[] = {"driver_version", "name", "vbios_version"};
    if (prov_qgpu_parse(s, n, f, 3, &q, &err) != 0) {
        th_fail(t, __LINE__, "with fields: %s", err.msg);
        return;
    }
    EXPECT(t, q.had_header);
    EXPECT_SZ(t, q.nrows, 1);
    prov_qgpu_free(&q);
}

static void c_qcsv_lms(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nrows, 5); /* loop output: 4 GPUs + first row of the next sample */
    for (size_t i = 0; i < q.nrows; i++) {
        EXPECT_NUM(t, q.rows[i].mem_total_mib, 23028);
        EXPECT_ST(t, q.rows[i].index, PROV_V_ABSENT);
    }
    if (q.nrows == 5) {
        EXPECT_NUM(t, q.rows[0].mem_used_mib, 21);
        EXPECT_NUM(t, q.rows[1].mem_free_mib, 22508);
        EXPECT_NUM(t, q.rows[3].temperature_c, 26);
        EXPECT_NUM(t, q.rows[0].util_gpu_pct, 0);
        EXPECT_STR(t, prov_qgpu_cell(&q, 4, "timestamp"), "2024/01/16 14:44:17.095");
        EXPECT_STR(t, q.units[3], "%");
    }
    prov_qgpu_free(&q);
}

static void c_qcsv_mixed(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    static const char *const f[] = {"name", "pci.bus", "index", "uuid"};
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, f, 4, &q, &err));
    EXPECT(t, q.had_header);
    EXPECT_SZ(t, q.nrows, 5);
    if (q.nrows == 5) {
        static const char *const names[] = {"GeForce GTX 1060 6GB", "GeForce GTX 1080 Ti",
                                            "GeForce GTX 1060 6GB", "GeForce GTX 1060 6GB",
                                            "GeForce GTX 1060 6GB"};
        for (size_t i = 0; i < 5; i++) {
            EXPECT_STR(t, q.rows[i].name, names[i]);
            EXPECT_NUM(t, q.rows[i].index, i);
        }
        EXPECT_STR(t, q.rows[4].bus_id, "0x0A");
        EXPECT_STR(t, q.rows[1].uuid, "GPU-15ea7bf9-1a0e-2d7f-9c62-c28e5ca1aaf1");
    }
    prov_qgpu_free(&q);
}

/* The 19 fields of this gpu-utils debug line are reconstructed from the
 * values (SOURCES.md names the first and last: power.limit ... pstate). */
static void c_qcsv_noheader(th_t *t, const char *s, size_t n)
{
    static const char *const f[] = {"power.limit",
                                    "power.min_limit",
                                    "power.max_limit",
                                    "memory.total",
                                    "vbios_version",
                                    "driver_version",
                                    "name",
                                    "uuid",
                                    "power.draw",
                                    "temperature.gpu",
                                    "temperature.memory",
                                    "clocks.gr",
                                    "clocks.sm",
                                    "clocks.mem",
                                    "clocks.max.mem",
                                    "utilization.gpu",
                                    "fan.speed",
                                    "pcie.link.width.current",
                                    "pstate"};
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, f, 19, &q, &err));
    EXPECT(t, !q.had_header);
    EXPECT_SZ(t, q.nrows, 1);
    if (q.nrows == 1) {
        EXPECT_STR(t, q.rows[0].name, "GeForce RTX 2080");
        EXPECT_STR(t, q.rows[0].driver_version, "440.64");
        EXPECT_NUM(t, q.rows[0].mem_total_mib, 7979);
        EXPECT_NUM(t, q.rows[0].power_draw_w, 176.98);
        EXPECT_NUM(t, q.rows[0].temperature_c, 45);
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "temperature.memory"), "N/A");
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "clocks.current.graphics"), "1965"); /* alias */
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "pstate"), "P2");
    }
    prov_qgpu_free(&q);
    /* without the field list the only line is taken as the header: no rows,
     * never mis-typed data */
    if (prov_qgpu_parse(s, n, NULL, 0, &q, &err) != 0) {
        th_fail(t, __LINE__, "without fields: %s", err.msg);
        return;
    }
    EXPECT_SZ(t, q.nrows, 0);
    prov_qgpu_free(&q);
}

static void c_qcsv_nounits(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nrows, 1); /* no trailing newline in the file */
    EXPECT_SZ(t, q.nfields, 15);
    if (q.nrows == 1) {
        EXPECT_STR(t, q.rows[0].name, "Tesla P100-PCIE-16GB");
        EXPECT_NUM(t, q.rows[0].mem_used_mib, 0);
        EXPECT_NUM(t, q.rows[0].mem_free_mib, 16280);
        EXPECT_NUM(t, q.rows[0].temperature_c, 37);
        EXPECT_NUM(t, q.rows[0].power_draw_w, 28.16);
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "clocks.current.video"), "835");
        EXPECT_STR(t, q.fields[2], "fan.speed");
        EXPECT_STR(t, q.units[2], "%");
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "fan.speed"), "[N/A]");
    }
    prov_qgpu_free(&q);
}

static void c_qapps(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nfields, 8);
    EXPECT_SZ(t, q.nrows, 3);
    if (q.nrows == 3) {
        EXPECT_STR(t, prov_qgpu_cell(&q, 0, "pid"), "11327");
        EXPECT_STR(t, prov_qgpu_cell(&q, 2, "process_name"), "./gpu_burn");
        EXPECT_STR(t, prov_qgpu_cell(&q, 2, "used_gpu_memory"), "15690 MiB");
        EXPECT_STR(t, q.rows[0].name, "NVIDIA H100 80GB HBM3"); /* gpu_name alias */
        EXPECT_STR(t, q.rows[0].bus_id, "00000000:00:09.0");    /* gpu_bus_id alias */
    }
    prov_qgpu_free(&q);
}

static void c_qapps_empty(th_t *t, const char *s, size_t n)
{
    prov_qgpu_t q;
    PARSE_OR_FAIL(prov_qgpu_parse(s, n, NULL, 0, &q, &err));
    EXPECT_SZ(t, q.nfields, 8);
    EXPECT_SZ(t, q.nrows, 0);
    EXPECT(t, q.had_header);
    prov_qgpu_free(&q);
}

/* ------------------------------------------------------- default table */

typedef struct smi_expect {
    const char *driver, *cuda, *name;
    size_t ngpus;
    double mem_total;
    size_t nmig, nprocs;
    int mig; /* -1 N/A, 0 off, 1 on */
} smi_expect_t;

static void check_smi(th_t *t, const char *s, size_t n, const smi_expect_t *e, prov_smi_t *out)
{
    memset(out, 0, sizeof *out);
    prov_err_t err;
    if (prov_smi_parse(s, n, out, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
        return;
    }
    EXPECT_STR(t, out->driver_version, e->driver);
    EXPECT_STR(t, out->smi_version, e->driver);
    EXPECT_STR(t, out->cuda_version, e->cuda);
    EXPECT_SZ(t, out->ngpus, e->ngpus);
    EXPECT_SZ(t, out->nmig, e->nmig);
    EXPECT_SZ(t, out->nprocs, e->nprocs);
    EXPECT(t, out->procs_section);
    for (size_t i = 0; i < out->ngpus; i++) {
        const prov_smi_gpu_t *g = &out->gpus[i];
        EXPECT(t, g->index == (int)i);
        if (!g->err) {
            EXPECT_STR(t, g->name, e->name);
            EXPECT_NUM(t, g->mem_total_mib, e->mem_total);
            EXPECT_ST(t, g->mem_used_mib, PROV_V_OK);
            EXPECT_ST(t, g->temperature_c, PROV_V_OK);
            EXPECT_ST(t, g->power_cap_w, PROV_V_OK);
            if (e->mig < 0)
                EXPECT_ST(t, g->mig_enabled, PROV_V_NA);
            else
                EXPECT_FLAG(t, g->mig_enabled, e->mig == 1);
        }
        EXPECT(t, strlen(g->bus_id) == 16);
    }
    prov_nvsmi_error_t ne;
    prov_nvsmi_error_classify(s, n, 0, &ne);
    EXPECT(t, ne.reason == PROV_NVSMI_OK);
}

#define SMI_CASE(fn, ...)                            \
    static void fn(th_t *t, const char *s, size_t n) \
    {                                                \
        static const smi_expect_t e = {__VA_ARGS__}; \
        prov_smi_t o;                                \
        check_smi(t, s, n, &e, &o);                  \
        fn##_more(t, &o);                            \
        prov_smi_free(&o);                           \
    }

static void c_smi_h100_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus < 1 || o->nprocs < 3)
        return;
    EXPECT_STR(t, o->gpus[0].bus_id, "00000000:00:09.0");
    EXPECT_NUM(t, o->gpus[0].mem_used_mib, 19818);
    EXPECT_NUM(t, o->gpus[0].temperature_c, 59);
    EXPECT_NUM(t, o->gpus[0].util_gpu_pct, 100);
    EXPECT_NUM(t, o->gpus[0].power_w, 629);
    EXPECT_NUM(t, o->gpus[0].power_cap_w, 700);
    EXPECT_NUM(t, o->gpus[0].ecc_uncorr, 0);
    EXPECT_STR(t, o->gpus[0].mode, "On");
    EXPECT(t, !o->gpus[0].name_truncated);
    EXPECT_NUM(t, o->procs[2].pid, 11345);
    EXPECT_STR(t, o->procs[2].name, "./gpu_burn");
    EXPECT_NUM(t, o->procs[2].mem_mib, 15690);
    EXPECT_ST(t, o->procs[0].gi, PROV_V_NA);
    EXPECT_STR(t, o->procs[0].type, "C");
}
SMI_CASE(c_smi_h100, "590.48.01", "13.1", "NVIDIA H100 80GB HBM3", 1, 81559, 0, 3, 0)

static void c_smi_a100_more(th_t *t, const prov_smi_t *o)
{
    EXPECT(t, o->gpus_with_err == 0);
}
SMI_CASE(c_smi_a100, "555.42.02", "12.5", "NVIDIA A100-SXM4-80GB", 4, 81920, 0, 0, 0)

static void c_smi_a40_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 10) {
        EXPECT_STR(t, o->gpus[9].bus_id, "00000000:D6:00.0");
        EXPECT_NUM(t, o->gpus[9].fan_pct, 0);
        EXPECT_NUM(t, o->gpus[9].power_w, 16);
    }
}
SMI_CASE(c_smi_a40, "550.127.05", "12.4", "NVIDIA A40", 10, 46068, 0, 0, -1)

static void c_smi_h100x8_more(th_t *t, const prov_smi_t *o)
{
    EXPECT(t, o->gpus_with_err == 0);
}
SMI_CASE(c_smi_h100x8, "565.57.01", "12.7", "NVIDIA H100 80GB HBM3", 8, 81559, 0, 0, 0)

static void c_smi_nvl_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 2)
        EXPECT_STR(t, o->gpus[1].bus_id, "00000000:AE:00.0");
}
SMI_CASE(c_smi_nvl, "550.54.14", "12.4", "NVIDIA H100 NVL", 2, 95830, 0, 0, 0)

static void c_smi_l40s_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 1) {
        EXPECT_STR(t, o->gpus[0].mode, "Off");
        EXPECT_NUM(t, o->gpus[0].util_gpu_pct, 100);
    }
}
SMI_CASE(c_smi_l40s, "595.80", "13.2", "NVIDIA L40S", 1, 46068, 0, 0, -1)

static void c_smi_l4_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 1)
        EXPECT_NUM(t, o->gpus[0].power_cap_w, 72);
}
SMI_CASE(c_smi_l4, "550.90.07", "12.4", "NVIDIA L4", 1, 23034, 0, 0, -1)

static void c_smi_4090_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 8) {
        EXPECT_NUM(t, o->gpus[0].fan_pct, 0);
        EXPECT_ST(t, o->gpus[0].ecc_uncorr, PROV_V_NA); /* ECC column 'Off' on GeForce */
    }
}
SMI_CASE(c_smi_4090, "550.127.05", "12.4", "NVIDIA GeForce RTX 4090", 8, 24564, 0, 0, -1)

static void c_smi_530_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 4) {
        EXPECT_STR(t, o->gpus[3].mode, "On");
        EXPECT_NUM(t, o->gpus[3].fan_pct, 33);
        EXPECT_NUM(t, o->gpus[3].power_w, 25);
        EXPECT_NUM(t, o->gpus[3].power_cap_w, 350);
        EXPECT_NUM(t, o->gpus[3].mem_used_mib, 1);
    }
}
SMI_CASE(c_smi_530, "530.30.02", "12.2", "NVIDIA GeForce RTX 3090", 4, 24576, 0, 0, -1)

static void c_smi_535_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 1) {
        EXPECT_STR(t, o->gpus[0].bus_id, "00000000:04:00.0");
        EXPECT_NUM(t, o->gpus[0].power_w, 71);
    }
}
SMI_CASE(c_smi_535, "535.309.01", "12.2", "NVIDIA H100 80GB HBM3", 1, 81559, 0, 0, 0)

static void c_smi_err(th_t *t, const char *s, size_t n)
{
    prov_smi_t o;
    PARSE_OR_FAIL(prov_smi_parse(s, n, &o, &err));
    EXPECT_STR(t, o.driver_version, "525.85.12");
    EXPECT_STR(t, o.cuda_version, "12.0");
    EXPECT_SZ(t, o.ngpus, 8);
    EXPECT(t, o.gpus_with_err == 1);
    EXPECT(t, !o.procs_section); /* truncated by the poster */
    if (o.ngpus == 8) {
        const prov_smi_gpu_t *g = &o.gpus[3];
        EXPECT(t, g->err);
        EXPECT(t, g->err_fields >= 9);
        EXPECT_STR(t, g->name, "ERR!");
        EXPECT_STR(t, g->bus_id, "00000000:61:00.0");
        EXPECT_ST(t, g->temperature_c, PROV_V_ERR);
        EXPECT_ST(t, g->util_gpu_pct, PROV_V_ERR);
        EXPECT_ST(t, g->ecc_uncorr, PROV_V_ERR);
        EXPECT_ST(t, g->mig_enabled, PROV_V_ERR);
        EXPECT_NUM(t, g->mem_used_mib, 23025);
        EXPECT_NUM(t, g->mem_total_mib, 24576);
        for (size_t i = 0; i < 8; i++)
            if (i != 3) {
                EXPECT(t, !o.gpus[i].err);
                EXPECT_STR(t, o.gpus[i].name, "NVIDIA A30");
                EXPECT_FLAG(t, o.gpus[i].mig_enabled, false);
            }
        EXPECT_NUM(t, o.gpus[1].util_gpu_pct, 88);
        EXPECT_STR(t, o.gpus[7].bus_id, "00000000:E1:00.0");
    }
    prov_smi_free(&o);
}

static void c_smi_mig_h100_more(th_t *t, const prov_smi_t *o)
{
    if (o->nmig == 4) {
        EXPECT(t, o->mig[0].gpu == 0 && o->mig[0].gi == 2 && o->mig[0].ci == 0 &&
                      o->mig[0].mig_dev == 0);
        EXPECT_NUM(t, o->mig[0].mem_total_mib, 40448);
        EXPECT_NUM(t, o->mig[0].sm, 60);
        EXPECT(t, o->mig[3].gi == 10 && o->mig[3].mig_dev == 3);
        EXPECT_NUM(t, o->mig[3].mem_total_mib, 9984);
    }
    if (o->ngpus == 1)
        EXPECT_ST(t, o->gpus[0].util_gpu_pct, PROV_V_NA);
}
SMI_CASE(c_smi_mig_h100, "590.48.01", "13.1", "NVIDIA H100 80GB HBM3", 1, 81559, 4, 0, 1)

static void c_smi_mig_h200_more(th_t *t, const prov_smi_t *o)
{
    if (o->nmig == 5) {
        EXPECT_NUM(t, o->mig[4].mem_total_mib, 16384);
        EXPECT_NUM(t, o->mig[1].mem_used_mib, 16925);
        EXPECT(t, o->mig[1].ci == 1);
    }
    if (o->nprocs == 3) {
        EXPECT_NUM(t, o->procs[0].gi, 2);
        EXPECT_NUM(t, o->procs[0].ci, 1);
        EXPECT_NUM(t, o->procs[2].mem_mib, 13526);
    }
}
SMI_CASE(c_smi_mig_h200, "590.48.01", "13.1", "NVIDIA H200", 1, 143771, 5, 3, 1)

static void c_smi_windows_more(th_t *t, const prov_smi_t *o)
{
    if (o->ngpus == 1) {
        EXPECT(t, o->gpus[0].name_truncated);
        EXPECT_STR(t, o->gpus[0].mode, "WDDM");
        EXPECT_NUM(t, o->gpus[0].fan_pct, 38);
        EXPECT_NUM(t, o->gpus[0].mem_used_mib, 1296);
        EXPECT_ST(t, o->gpus[0].ecc_uncorr, PROV_V_NA);
    }
    if (o->nprocs == 12) {
        EXPECT_STR(t, o->procs[1].name, "...e Experience\\NVIDIA Share.exe");
        EXPECT_STR(t, o->procs[1].type, "C+G");
        EXPECT_ST(t, o->procs[1].mem_mib, PROV_V_NA);
        EXPECT_STR(t, o->procs[8].name, "...m Files\\NZXT CAM\\NZXT CAM.exe");
        EXPECT_STR(t, o->procs[11].type, "C");
    }
}
SMI_CASE(c_smi_windows, "591.86", "13.1", "NVIDIA GeForce RTX 2080 ...", 1, 8192, 0, 12, -1)

/* ---------------------------------------------------------------- table */

const fixture_case_t smi_fixture_cases[] = {
    {"query_csv_allfields__H100-80GB-HBM3__1gpu.txt", PK_QGPU, c_qcsv_h100},
    {"query_csv_allfields__L40S__1gpu.txt", PK_QGPU, c_qcsv_l40s},
    {"query_csv_allfields_drv465__RTX-2080-SUPER__1gpu.txt", PK_QGPU, c_qcsv_drv465},
    {"query_csv_driver_vbios__H100-80GB-HBM3__1gpu.txt", PK_QGPU, c_qcsv_vbios},
    {"query_csv_lms__A10__4gpu.txt", PK_QGPU, c_qcsv_lms},
    {"query_csv_mixed__GTX-1060-1080Ti__5gpu.txt", PK_QGPU, c_qcsv_mixed},
    {"query_csv_noheader_nounits__RTX-2080__1gpu.txt", PK_QGPU, c_qcsv_noheader},
    {"query_csv_nounits__Tesla-P100-PCIE-16GB__1gpu.txt", PK_QGPU, c_qcsv_nounits},
    {"query_compute_apps_csv__H100-80GB-HBM3__1gpu.txt", PK_QGPU, c_qapps},
    {"query_compute_apps_csv_empty__H100-80GB-HBM3__1gpu.txt", PK_QGPU, c_qapps_empty},
    {"default__H100-80GB-HBM3__1gpu.txt", PK_SMI, c_smi_h100},
    {"default__A100-SXM4-80GB__4gpu.txt", PK_SMI, c_smi_a100},
    {"default__A40__10gpu.txt", PK_SMI, c_smi_a40},
    {"default__H100-80GB-HBM3__8gpu.txt", PK_SMI, c_smi_h100x8},
    {"default__H100-NVL__2gpu.txt", PK_SMI, c_smi_nvl},
    {"default__L40S__1gpu.txt", PK_SMI, c_smi_l40s},
    {"default__L4__1gpu.txt", PK_SMI, c_smi_l4},
    {"default__RTX-4090__8gpu.txt", PK_SMI, c_smi_4090},
    {"default_drv530__RTX-3090__4gpu.txt", PK_SMI, c_smi_530},
    {"default_drv535__H100-80GB-HBM3__1gpu.txt", PK_SMI, c_smi_535},
    {"default_err__A30__8gpu.txt", PK_SMI, c_smi_err},
    {"default_mig__H100-80GB-HBM3__1gpu.txt", PK_SMI, c_smi_mig_h100},
    {"default_mig__H200__1gpu.txt", PK_SMI, c_smi_mig_h200},
    {"default_windows__RTX-2080-SUPER__1gpu.txt", PK_SMI, c_smi_windows},
};
const size_t smi_fixture_cases_n = sizeof smi_fixture_cases / sizeof smi_fixture_cases[0];
