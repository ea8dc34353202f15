/* Every fixture in tests/fixtures/nvidia/ → its parser → asserted values.
 * Adding a fixture without a row here fails the meta-test in main.c. */
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

#define PARSE_OR_FAIL(call)                                \
    prov_err_t err;                                        \
    memset(&err, 0, sizeof err);                           \
    if ((call) != 0) {                                     \
        th_fail(t, __LINE__, "parse failed: %s", err.msg); \
        return;                                            \
    }

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

/* ------------------------------------------------------------- -L / nvlink */

static void c_list_a100(th_t *t, const char *s, size_t n)
{
    prov_list_t l;
    PARSE_OR_FAIL(prov_list_parse(s, n, &l, &err));
    EXPECT_SZ(t, l.ngpus, 4);
    EXPECT_SZ(t, l.nmig, 4);
    if (l.ngpus == 4 && l.nmig == 4) {
        EXPECT_STR(t, l.gpus[3].name, "NVIDIA A100-SXM4-80GB");
        EXPECT_STR(t, l.gpus[3].uuid, "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11");
        for (size_t i = 0; i < 4; i++) {
            EXPECT(t, l.mig[i].gpu == 0 && l.mig[i].device == (int)i);
            EXPECT_STR(t, l.mig[i].profile, "1g.20gb");
        }
        EXPECT_STR(t, l.mig[3].uuid, "MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b");
    }
    prov_list_free(&l);
}

static void c_list_h100(th_t *t, const char *s, size_t n)
{
    prov_list_t l;
    PARSE_OR_FAIL(prov_list_parse(s, n, &l, &err));
    EXPECT_SZ(t, l.ngpus, 1);
    EXPECT_SZ(t, l.nmig, 4);
    if (l.nmig == 4) {
        EXPECT_STR(t, l.mig[0].profile, "3g.40gb");
        EXPECT_STR(t, l.mig[1].profile, "2g.20gb");
        EXPECT_STR(t, l.mig[3].profile, "1g.10gb");
        EXPECT_STR(t, l.mig[2].uuid, "MIG-00000002-0000-0000-0000-000000000002");
    }
    if (l.ngpus == 1)
        EXPECT_STR(t, l.gpus[0].name, "NVIDIA H100 80GB HBM3");
    prov_list_free(&l);
}

static void c_nvlink_h100(th_t *t, const char *s, size_t n)
{
    prov_nvlink_t v;
    PARSE_OR_FAIL(prov_nvlink_parse(s, n, &v, &err));
    EXPECT_SZ(t, v.ngpus, 1);
    if (v.ngpus == 1) {
        EXPECT(t, v.gpus[0].status == PROV_NVLINK_LINKS);
        EXPECT_SZ(t, v.gpus[0].nlinks, 18);
        EXPECT_SZ(t, v.gpus[0].nactive, 18);
        for (size_t i = 0; i < v.gpus[0].nlinks; i++)
            EXPECT(t, v.gpus[0].links[i].id == (int)i && v.gpus[0].links[i].gbps == 26.562);
    }
    prov_nvlink_free(&v);
}

static void c_nvlink_inactive(th_t *t, const char *s, size_t n)
{
    prov_nvlink_t v;
    PARSE_OR_FAIL(prov_nvlink_parse(s, n, &v, &err));
    EXPECT_SZ(t, v.ngpus, 1);
    if (v.ngpus == 1) {
        EXPECT(t, v.gpus[0].status == PROV_NVLINK_ALL_INACTIVE);
        EXPECT_SZ(t, v.gpus[0].nlinks, 0);
        EXPECT_STR(t, v.gpus[0].name, "NVIDIA GeForce RTX 2080 SUPER");
    }
    prov_nvlink_free(&v);
}

static void c_nvlink_unsupported(th_t *t, const char *s, size_t n)
{
    prov_nvlink_t v;
    PARSE_OR_FAIL(prov_nvlink_parse(s, n, &v, &err));
    EXPECT_SZ(t, v.ngpus, 1);
    if (v.ngpus == 1) {
        EXPECT(t, v.gpus[0].status == PROV_NVLINK_UNSUPPORTED);
        EXPECT_SZ(t, v.gpus[0].nactive, 0);
    }
    prov_nvlink_free(&v);
}

/* ------------------------------------------------------------------ topo */

typedef struct topo_expect {
    size_t ngpus, nnics;
    const char *all_pairs; /* every GPU pair has this class, or NULL */
    int min_nv;
    bool cpu, numa, gpu_numa, legend, nic_legend, p2p;
    const char *cpu0; /* GPU0 CPU affinity */
} topo_expect_t;

static void check_topo(th_t *t, const char *s, size_t n, const topo_expect_t *e, prov_topo_t *o)
{
    memset(o, 0, sizeof *o);
    prov_err_t err;
    if (prov_topo_parse(s, n, o, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
        return;
    }
    EXPECT_SZ(t, o->ngpus, e->ngpus);
    EXPECT_SZ(t, o->nnics, e->nnics);
    EXPECT(t, o->has_cpu_affinity == e->cpu);
    EXPECT(t, o->has_numa_affinity == e->numa);
    EXPECT(t, o->has_gpu_numa_id == e->gpu_numa);
    EXPECT(t, o->has_legend == e->legend);
    EXPECT(t, o->has_nic_legend == e->nic_legend);
    EXPECT(t, o->p2p == e->p2p);
    EXPECT(t, prov_topo_min_nvlinks(o) == e->min_nv);
    for (size_t a = 0; a < o->ngpus; a++)
        EXPECT_STR(t, prov_topo_gpu_link(o, a, a), "X");
    if (e->all_pairs) {
        EXPECT_SZ(t, prov_topo_check_pairs(o, e->all_pairs, NULL, NULL), 0);
        for (size_t a = 0; a < o->ngpus; a++)
            for (size_t b = 0; b < o->ngpus; b++)
                if (a != b)
                    EXPECT_STR(t, prov_topo_gpu_link(o, a, b), e->all_pairs);
    }
    if (e->cpu0 && o->ngpus)
        EXPECT_STR(t, o->cpu_affinity[0], e->cpu0);
}

#define TOPO_CASE(fn, ...)                            \
    static void fn(th_t *t, const char *s, size_t n)  \
    {                                                 \
        static const topo_expect_t e = {__VA_ARGS__}; \
        prov_topo_t o;                                \
        check_topo(t, s, n, &e, &o);                  \
        if (o.ngpus == e.ngpus)                       \
            fn##_more(t, &o);                         \
        prov_topo_free(&o);                           \
    }

static void c_topo_h100_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->cpu_affinity[7], "52-103,156-207");
    EXPECT_STR(t, o->numa_affinity[4], "1");
    EXPECT_STR(t, o->gpu_numa_id[0], "");
}
TOPO_CASE(c_topo_h100, 8, 0, "NV18", 18, true, true, false, false, false, false, "0-51,104-155")

static void c_topo_ansi_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->numa_affinity[0], "0");
    EXPECT_STR(t, o->gpu_numa_id[0], "N/A");
    EXPECT_SZ(t, prov_topo_check_pairs(o, "NV*", NULL, NULL), 0); /* no pairs */
}
TOPO_CASE(c_topo_ansi, 1, 0, NULL, -1, true, true, true, true, false, false, "0-23")

static void c_topo_compact_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->cpu_affinity[4], "24-47");
    EXPECT_STR(t, o->numa_affinity[7], "1");
    EXPECT(t, prov_link_matches(prov_topo_gpu_link(o, 0, 7), "NV12"));
}
TOPO_CASE(c_topo_compact, 8, 0, "NV12", 12, true, true, false, false, false, false, "0-23")

static void c_topo_legend_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->numa_affinity[1], "N/A");
    EXPECT_SZ(t, prov_topo_check_pairs(o, "NV*", NULL, NULL), 1);
    EXPECT_SZ(t, prov_topo_check_pairs(o, "NV*,PHB", NULL, NULL), 0);
}
TOPO_CASE(c_topo_legend, 2, 0, "PHB", 0, true, true, false, true, false, false, "0-11")

static void c_topo_nic17_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->nic_names[16], "NIC16");
    EXPECT_STR(t, o->nic_devs[0], "mlx5_2");
    EXPECT_STR(t, o->nic_devs[16], "mlx5_bond_0");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 0, 0), "PXB");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 2, 4), "PXB");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 7, 16), "SYS");
    EXPECT_STR(t, o->gpu_numa_id[3], "N/A");
    EXPECT_STR(t, o->numa_affinity[3], "0");
}
TOPO_CASE(c_topo_nic17, 8, 17, "NV12", 12, true, true, true, true, true, false, "0-103")

static void c_topo_nic_a10_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->nic_devs[1], "mlx5_1");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 3, 1), "SYS");
    EXPECT_SZ(t, prov_topo_check_pairs(o, "NV*,PIX", NULL, NULL), 6);
}
TOPO_CASE(c_topo_nic_a10, 4, 2, "SYS", 0, true, true, true, true, true, false, "0-127")

static void c_topo_nvl_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, prov_topo_gpu_link(o, 0, 1), "NV12");
    EXPECT_STR(t, prov_topo_gpu_link(o, 0, 2), "NODE");
    EXPECT_STR(t, prov_topo_gpu_link(o, 3, 4), "SYS");
    EXPECT_STR(t, prov_topo_gpu_link(o, 7, 6), "NV12");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 1, 0), "PHB");
    size_t a = 0, b = 0;
    EXPECT_SZ(t, prov_topo_check_pairs(o, "NV*", &a, &b), 24);
    EXPECT(t, a == 0 && b == 2);
    EXPECT_STR(t, o->cpu_affinity[5], "64-127,192-255");
}
TOPO_CASE(c_topo_nvl, 8, 2, NULL, 0, true, true, true, true, true, false, "0-63,128-191")

static void c_topo_tabs_h100_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->gpu_numa_id[7], "N/A"); /* after the double tab */
    EXPECT_STR(t, o->numa_affinity[7], "1");
}
TOPO_CASE(c_topo_tabs_h100, 8, 0, "NV18", 18, true, true, true, true, false, false, "0-51,104-155")

static void c_topo_5090_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->gpu_numa_id[1], "N/A");
}
TOPO_CASE(c_topo_5090, 2, 0, "PHB", 0, true, true, true, true, false, false, "0-63")

static void c_topo_subset_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, o->cpu_affinity[3], "0-51,104-155");
}
TOPO_CASE(c_topo_subset, 4, 0, "NV18", 18, true, true, true, true, false, false, "0-51,104-155")

static void c_topo_4090_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 6, 0), "PHB");
    EXPECT_STR(t, prov_topo_gpu_nic_link(o, 7, 1), "SYS");
    EXPECT_STR(t, o->nic_devs[0], ""); /* no legend in this paste */
    EXPECT_STR(t, o->gpu_numa_id[4], "N/A");
}
TOPO_CASE(c_topo_4090, 8, 2, "SYS", 0, true, true, true, false, false, false, "0-55,112-167")

static void c_topo_p2p_r_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, prov_topo_gpu_link(o, 2, 5), "OK");
}
TOPO_CASE(c_topo_p2p_r, 8, 0, "OK", 0, false, false, false, true, false, true, NULL)

static void c_topo_p2p_rw_more(th_t *t, const prov_topo_t *o)
{
    EXPECT_STR(t, prov_topo_gpu_link(o, 0, 1), "GNS");
}
TOPO_CASE(c_topo_p2p_rw, 2, 0, "GNS", 0, false, false, false, true, false, true, NULL)

static void c_topo_err_windows(th_t *t, const char *s, size_t n)
{
    prov_topo_t o;
    prov_err_t err;
    EXPECT(t, prov_topo_parse(s, n, &o, &err) == -1);
    EXPECT(t, strstr(err.msg, "Option -m is missing its value") != NULL);
    prov_nvsmi_error_t e;
    prov_nvsmi_error_classify(s, n, 255, &e);
    EXPECT(t, e.reason == PROV_NVSMI_USAGE);
}

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
    {"list_L_mig__A100-SXM4-80GB__4gpu.txt", PK_LIST, c_list_a100},
    {"list_L_mig__H100-80GB-HBM3__1gpu.txt", PK_LIST, c_list_h100},
    {"nvlink_s__H100-80GB-HBM3__1gpu.txt", PK_NVLINK, c_nvlink_h100},
    {"nvlink_s_inactive_windows__RTX-2080-SUPER__1gpu.txt", PK_NVLINK, c_nvlink_inactive},
    {"nvlink_s_unsupported__L40S__1gpu.txt", PK_NVLINK, c_nvlink_unsupported},
    {"topo_m__H100-80GB-HBM3__8gpu.txt", PK_TOPO, c_topo_h100},
    {"topo_m_ansi__H200__1gpu.txt", PK_TOPO, c_topo_ansi},
    {"topo_m_compact__A100-SXM4__8gpu.txt", PK_TOPO, c_topo_compact},
    {"topo_m_error_windows__RTX-2080-SUPER__1gpu.txt", PK_TOPO, c_topo_err_windows},
    {"topo_m_legend__GTX-1080-Ti__2gpu.txt", PK_TOPO, c_topo_legend},
    {"topo_m_nic17__A100__8gpu.txt", PK_TOPO, c_topo_nic17},
    {"topo_m_nic__A10__4gpu.txt", PK_TOPO, c_topo_nic_a10},
    {"topo_m_nic__H100-NVL__8gpu.txt", PK_TOPO, c_topo_nvl},
    {"topo_m_tabs_legend__H100-80GB-HBM3__8gpu.txt", PK_TOPO, c_topo_tabs_h100},
    {"topo_m_tabs_legend__RTX-5090__2gpu.txt", PK_TOPO, c_topo_5090},
    {"topo_m_tabs_legend_subset__H100-80GB-HBM3__4gpu.txt", PK_TOPO, c_topo_subset},
    {"topo_m_tabs_nic__RTX-4090__8gpu.txt", PK_TOPO, c_topo_4090},
    {"topo_p2p_r__H100-80GB-HBM3__8gpu.txt", PK_TOPO, c_topo_p2p_r},
    {"topo_p2p_rw__RTX-5090__2gpu.txt", PK_TOPO, c_topo_p2p_rw},
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
