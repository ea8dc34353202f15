/* The fixtures of the GPU list and links (nvidia-smi -L, nvlink -s, topo -m) in
 * tests/fixtures/nvidia/ → their parsers → asserted values.
 * Adding a fixture without a row in a table fails the meta-test in main.c. */
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

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

/* ---------------------------------------------------------------- table */

const fixture_case_t link_fixture_cases[] = {
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
};
const size_t link_fixture_cases_n = sizeof link_fixture_cases / sizeof link_fixture_cases[0];
