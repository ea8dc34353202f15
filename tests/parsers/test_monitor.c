/* The health monitor's parsers over the fixtures: every kernel_* log (Xid,
 * SXid, fallen off the bus; the quirks SOURCES.md names), the Fabric section
 * of every text nvidia-smi -q, and the all-fields --query-gpu captures as
 * monitor samples.  Expected values were read from the fixture files. */
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_monitor.h"
#include "tests/parsers/harness.h"

int pk_run_monitor(pkind_t k, const char *text, size_t len, prov_err_t *err, json_t **j)
{
    int rc = -1;
    if (k == PK_KMSG) {
        prov_kmsg_t m;
        rc = prov_kmsg_parse(text, len, 0, &m, err);
        if (rc == 0) {
            *j = prov_kmsg_to_json(&m);
            prov_kmsg_free(&m);
        }
    } else if (k == PK_SAMPLE) {
        prov_sample_t s;
        rc = prov_sample_parse(text, len, prov_sample_fields, prov_sample_nfields, &s, err);
        if (rc == 0) {
            *j = prov_sample_to_json(&s);
            prov_sample_free(&s);
        }
    } else if (k == PK_FABRIC) {
        prov_fabric_t f;
        rc = prov_fabric_parse(text, len, &f, err);
        if (rc == 0) {
            *j = prov_fabric_to_json(&f);
            prov_fabric_free(&f);
        }
    }
    return rc;
}

/* ------------------------------------------------------------ kernel logs */

/* One expected event: kind, code, canonical PCI, input line. */
typedef struct kexp {
    prov_kev_kind_t kind;
    int code;
    const char *pci;
    unsigned line;
} kexp_t;

/* Parses, checks the clean counters and every event's kind/code/PCI/line. */
static bool check_events(th_t *t, const char *s, size_t n, const kexp_t *e, size_t ne,
                         prov_kmsg_t *k)
{
    prov_err_t err;
    if (prov_kmsg_parse(s, n, 0, k, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
        return false;
    }
    EXPECT_SZ(t, k->nevents, ne);
    EXPECT_SZ(t, k->malformed, 0);
    EXPECT_SZ(t, k->bad_times, 0);
    EXPECT_SZ(t, k->incomplete, 0);
    EXPECT(t, !k->truncated);
    for (size_t i = 0; i < ne && i < k->nevents; i++) {
        const prov_kevent_t *v = &k->events[i];
        if (v->kind != e[i].kind || v->code != e[i].code || v->line != e[i].line ||
            strcmp(v->pci, e[i].pci) != 0)
            th_fail(t, __LINE__, "event %zu is %s %d %s line %u, expected %s %d %s line %u", i,
                    prov_kev_kind_name(v->kind), v->code, v->pci, v->line,
                    prov_kev_kind_name(e[i].kind), e[i].code, e[i].pci, e[i].line);
        EXPECT(t, !v->raw_cleaned && v->raw[0]);
    }
    return k->nevents == ne;
}

#define X(code, pci, line)                        \
    {                                             \
        PROV_KEV_XID, code, "00000000:" pci, line \
    }
#define S(pci, line)                                \
    {                                               \
        PROV_KEV_SXID, 20034, "00000000:" pci, line \
    }
#define F(pci, line)                                      \
    {                                                     \
        PROV_KEV_FALLEN_OFF_BUS, 0, "00000000:" pci, line \
    }

/* "The NVIDIA GPU ... / (PCI ID: ...) ... / fallen off the bus" at probe
 * time, no Xid: one event from three lines. */
static void check_probe(th_t *t, const char *s, size_t n, const kexp_t *e, uint64_t mono,
                        uint64_t max_mono, const char *pci_id)
{
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 1, &k)) {
        const prov_kevent_t *v = &k.events[0];
        EXPECT(t, !v->pci_function_implied && !v->with_xid);
        EXPECT(t, v->time.has_mono && v->time.mono_us == mono);
        EXPECT(t, strstr(v->message, pci_id) != NULL);
        EXPECT(t, strstr(v->message, "fallen off the bus and is not responding") != NULL);
        EXPECT(t, strstr(v->raw, "installed in this system has\n") != NULL); /* 3 lines */
    }
    EXPECT(t, k.has_mono && k.max_mono_us == max_mono);
    prov_kmsg_free(&k);
}

static void c_k_probe_dmesg(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {F("5D:00.0", 1)};
    check_probe(t, s, n, e, 14387209961u, 14405257198u, "(PCI ID: 10de:2330)");
}

static void c_k_probe_open570(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {F("B3:00.0", 1)};
    check_probe(t, s, n, e, 1843308145u, 1843439669u, "(PCI ID: 10de:26b5)");
}

/* Each continuation line repeats the syslog + uptime prefix. */
static void c_k_probe_syslog(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {F("5D:00.0", 3)};
    check_probe(t, s, n, e, 17257355375u, 17261605632u, "(PCI ID: 10de:2330)");
    prov_kmsg_t k;
    if (prov_kmsg_parse(s, n, 0, &k, NULL) == 0 && k.nevents == 1) {
        const prov_ktime_t *tm = &k.events[0].time;
        EXPECT(t, tm->wall == PROV_WALL_SYSLOG && tm->year == 0 && tm->month == 1 && tm->day == 3 &&
                      tm->hour == 7 && tm->min == 39 && tm->sec == 45);
        EXPECT_SZ(t, k.nlines, 13);
    }
    prov_kmsg_free(&k);
}

/* dmesg --ctime; UUID from "GPU at PCI:"; the no-function Xid address. */
static void c_k_xid119(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(119, "9B:00.0", 3), X(119, "9B:00.0", 38), X(119, "9B:00.0", 40),
                               X(119, "9B:00.0", 42), X(119, "9B:00.0", 43)};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 5, &k)) {
        const prov_kevent_t *v = &k.events[0];
        EXPECT(t, v->pci_function_implied);
        EXPECT_STR(t, v->uuid, "GPU-509665ad-b600-ac93-3616-d754b23d636d");
        EXPECT_STR(t, k.events[4].uuid, "GPU-509665ad-b600-ac93-3616-d754b23d636d");
        EXPECT_NUM(t, v->pid, 2024380);
        EXPECT_STR(t, v->process, "nvidia-smi");
        EXPECT_STR(t, k.events[3].process, "cache_mgr_main");
        EXPECT_STR(t, k.events[4].process, "gpud");
        EXPECT(t, strncmp(v->message, "Timeout after 6s of waiting for RPC response", 44) == 0);
        EXPECT(t, v->time.wall == PROV_WALL_CTIME && v->time.year == 2025 && v->time.month == 2 &&
                      v->time.day == 23 && v->time.hour == 16 && v->time.sec == 18 &&
                      !v->time.has_tz && !v->time.has_mono);
        EXPECT(t, k.events[4].time.min == 30 && k.events[4].time.sec == 13);
    }
    EXPECT(t, !k.has_mono);
    prov_kmsg_free(&k);
}

/* pid='<unknown>', name=<unknown>: not a pid, not a process name. */
static void c_k_xid13_109(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(13, "CB:00.0", 2), X(13, "CB:00.0", 3), X(13, "CB:00.0", 4),
                               X(109, "CB:00.0", 5)};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 4, &k)) {
        EXPECT_ST(t, k.events[0].pid, PROV_V_NA);
        EXPECT_STR(t, k.events[0].process, "");
        EXPECT_STR(t, k.events[0].message,
                   "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction "
                   "Parameter");
        EXPECT_NUM(t, k.events[3].pid, 1797828);
        EXPECT_STR(t, k.events[3].process, "pt_main_thread");
        EXPECT_STR(t, k.events[3].message,
                   "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
        EXPECT(t, k.events[3].time.wall == PROV_WALL_CTIME && k.events[3].time.year == 2024);
    }
    prov_kmsg_free(&k);
}

/* dmesg --decode --time-format=iso: "kern  :warn  : " then an ISO stamp. */
static void c_k_xid13_43(th_t *t, const char *s, size_t n)
{
    kexp_t e[26];
    for (unsigned i = 0; i < 26; i++)
        e[i] = (kexp_t)X(i == 15 || i == 25 ? 43 : 13, "38:00.0", i + 1);
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 26, &k)) {
        const prov_ktime_t *tm = &k.events[0].time;
        EXPECT(t, tm->wall == PROV_WALL_ISO && tm->has_tz && tm->tz_min == 0);
        EXPECT(t, tm->epoch_us == 1737426093498559LL);
        EXPECT(t, tm->usec == 498559);
        EXPECT_NUM(t, k.events[15].pid, 2815167);
        EXPECT_STR(t, k.events[15].message, "Ch 00000008");
        EXPECT_NUM(t, k.events[25].pid, 2823801);
    }
    prov_kmsg_free(&k);
}

/* Xid 45 "caused by previous Xid 149/145" (NVLink5), "kernel: " prefix only. */
static void c_k_xid45(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(45, "DC:00.0", 1), X(45, "ED:00.0", 2), X(45, "BA:00.0", 3),
                               X(45, "97:00.0", 4), X(45, "DC:00.0", 5), X(45, "BA:00.0", 6),
                               X(45, "ED:00.0", 7)};
    static const int cause[] = {149, 145, 145, 145, 149, 145, 145};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 7, &k)) {
        for (size_t i = 0; i < 7; i++) {
            EXPECT(t, k.events[i].caused_by == cause[i]);
            EXPECT_STR(t, k.events[i].process, "python3");
            EXPECT(t, k.events[i].time.wall == PROV_WALL_NONE && !k.events[i].time.has_mono);
        }
        EXPECT_NUM(t, k.events[0].pid, 1818990);
        EXPECT_STR(t, k.events[0].message, "Ch 00000001 caused by previous Xid 149");
    }
    prov_kmsg_free(&k);
}

/* dmesg --time-format=iso; no trailing newline; peermem noise. */
static void c_k_xid48_63_94(th_t *t, const char *s, size_t n)
{
    kexp_t e[11] = {X(48, "19:00.0", 11), X(63, "19:00.0", 12)};
    for (unsigned i = 2; i < 11; i++)
        e[i] = (kexp_t)X(94, "19:00.0", 11 + i);
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 11, &k)) {
        EXPECT(t, k.events[0].time.epoch_us == 1731672123470068LL);
        EXPECT(t, strncmp(k.events[0].message, "An uncorrectable double bit error (DBE)", 39) == 0);
        EXPECT_STR(t, k.events[1].message,
                   "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu "
                   "to activate.");
        EXPECT_STR(t, k.events[2].message, "Contained: SM (0x1). RST: No, D-RST: No");
        EXPECT_ST(t, k.events[2].pid, PROV_V_NA);
        EXPECT_NUM(t, k.events[10].pid, 1248209);
        EXPECT_STR(t, k.events[10].process, "python3.10");
        EXPECT_STR(t, k.events[10].message, "Ch 0000000f");
    }
    EXPECT_SZ(t, k.nlines, 41); /* the last line has no newline */
    prov_kmsg_free(&k);
}

/* A bare message without any prefix; pid without name; device 0x1c. */
static void c_k_xid63(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(63, "10:1C.0", 1)};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 1, &k)) {
        EXPECT_NUM(t, k.events[0].pid, 1896);
        EXPECT_STR(t, k.events[0].process, "");
        EXPECT_STR(t, k.events[0].message,
                   "Row Remapper: New row marked for remapping, reset gpu to activate.");
        EXPECT(t, k.events[0].time.wall == PROV_WALL_NONE && !k.events[0].time.has_mono);
    }
    prov_kmsg_free(&k);
}

/* Xid 79, then the driver's own "GPU ...: GPU has fallen off the bus." line
 * (an event of its own, marked with_xid); crash-dump continuation lines
 * (15 blanks, no stamp) are no events. */
static void c_k_xid79_crashdump(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(79, "5D:00.0", 3), F("5D:00.0", 4)};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 2, &k)) {
        EXPECT_STR(t, k.events[0].uuid, "GPU-f1906b9b-557a-e961-045c-9fe4be3ce012");
        EXPECT_STR(t, k.events[0].message, "GPU has fallen off the bus.");
        EXPECT_ST(t, k.events[0].pid, PROV_V_NA);
        EXPECT(t, k.events[1].with_xid && !k.events[1].pci_function_implied);
        EXPECT_STR(t, k.events[1].uuid, "GPU-f1906b9b-557a-e961-045c-9fe4be3ce012");
        EXPECT(t, k.events[0].time.mono_us == 4254197860u);
    }
    EXPECT(t, k.max_mono_us == 4254197913u);
    prov_kmsg_free(&k);
}

/* Xid 79 then NVSwitch SXid 20034 from three switches: Fatal lines and the
 * severity-less "Severity 1 Engine ..." / "Data {...}" lines. */
static void c_k_xid79_sxid(th_t *t, const char *s, size_t n)
{
    static const kexp_t e[] = {X(79, "91:00.0", 3), F("91:00.0", 4),  S("06:00.0", 6),
                               S("05:00.0", 7),     S("07:00.0", 8),  S("05:00.0", 9),
                               S("07:00.0", 10),    S("05:00.0", 11), S("07:00.0", 12),
                               S("05:00.0", 13)};
    static const char *const dev[] = {"nvidia-nvswitch1", "nvidia-nvswitch0", "nvidia-nvswitch2",
                                      "nvidia-nvswitch0", "nvidia-nvswitch2", "nvidia-nvswitch0",
                                      "nvidia-nvswitch2", "nvidia-nvswitch0"};
    static const bool fatal[] = {true, true, false, false, true, true, false, false};
    prov_kmsg_t k;
    if (check_events(t, s, n, e, 10, &k)) {
        EXPECT_STR(t, k.events[0].uuid, "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b");
        EXPECT(t, k.events[1].with_xid);
        for (size_t i = 0; i < 8; i++) {
            const prov_kevent_t *v = &k.events[2 + i];
            EXPECT_STR(t, v->device, dev[i]);
            EXPECT(t, v->severity == (fatal[i] ? PROV_SXID_SEV_FATAL : PROV_SXID_SEV_UNSTATED));
            EXPECT(t, !v->pci_function_implied && v->uuid[0] == '\0');
        }
        EXPECT_STR(t, k.events[2].message, "Link 48 LTSSM Fault Up");
        EXPECT_STR(t, k.events[4].message, "Severity 1 Engine instance 60 Sub-engine instance 00");
        EXPECT(t, k.events[0].time.mono_us == 6781741548779u);
    }
    EXPECT(t, k.max_mono_us == 6781753409792u);
    prov_kmsg_free(&k);
}

/* ------------------------------------------------------- -q Fabric section */

static void check_fabric(th_t *t, const char *s, size_t n, size_t ngpus,
                         prov_fabric_verdict_t verdict, const char *pci0, const char *state)
{
    prov_fabric_t f;
    PARSE_OR_FAIL(prov_fabric_parse(s, n, &f, &err));
    EXPECT_SZ(t, f.ngpus, ngpus);
    EXPECT(t, f.verdict == verdict);
    for (size_t i = 0; i < f.ngpus; i++) {
        EXPECT(t, f.gpus[i].verdict == verdict);
        EXPECT(t, strlen(f.gpus[i].pci) == 16);
    }
    if (f.ngpus) {
        EXPECT_STR(t, f.gpus[0].pci, pci0);
        EXPECT_STR(t, f.gpus[0].state, state);
        if (verdict == PROV_FABRIC_OK)
            EXPECT_STR(t, f.gpus[0].status, "Success");
    }
    prov_fabric_free(&f);
}

static void c_q_h100(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 8, PROV_FABRIC_OK, "00000000:53:00.0", "Completed");
}

static void c_q_hw_slowdown(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 8, PROV_FABRIC_OK, "00000000:19:00.0", "Completed");
}

static void c_q_h800(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 1, PROV_FABRIC_OK, "00000000:18:00.0", "Completed");
}

/* No NVSwitch: State/Status N/A -> unread, never ok or not-ok. */
static void c_q_a10(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 1, PROV_FABRIC_UNREAD, "00000000:07:00.0", "");
}

static void c_q_4090(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 8, PROV_FABRIC_UNREAD, "00000000:01:00.0", "");
}

/* Driver 560: CliqueId, ClusterUUID and Health/Bandwidth, all N/A. */
static void c_q_volta(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 1, PROV_FABRIC_UNREAD, "00000000:01:00.0", "");
    prov_fabric_t f;
    if (prov_fabric_parse(s, n, &f, NULL) == 0 && f.ngpus == 1) {
        EXPECT(t, f.gpus[0].has_section && f.gpus[0].state_st == PROV_V_NA);
        EXPECT_STR(t, f.gpus[0].clique_id, "");
        EXPECT_STR(t, f.gpus[0].health_bandwidth, "");
    }
    prov_fabric_free(&f);
}

/* The author's excerpt has no Fabric section at all. */
static void c_q_partial(th_t *t, const char *s, size_t n)
{
    check_fabric(t, s, n, 1, PROV_FABRIC_UNREAD, "00000000:10:1C.0", "");
    prov_fabric_t f;
    if (prov_fabric_parse(s, n, &f, NULL) == 0 && f.ngpus == 1)
        EXPECT(t, !f.gpus[0].has_section);
    prov_fabric_free(&f);
}

/* ----------------------------------------- --query-gpu captures as samples */

/* What the monitor adds to the query-gpu test of the same file: the
 * canonical PCI form, utilization.memory, power, the clock-event mask,
 * remapped_rows.failure, no invalid cell. */
static void c_sample_h100(th_t *t, const char *s, size_t n)
{
    prov_sample_t m;
    PARSE_OR_FAIL(prov_sample_parse(s, n, NULL, 0, &m, &err));
    EXPECT_SZ(t, m.ngpus, 1);
    if (m.ngpus == 1) {
        const prov_sample_gpu_t *g = &m.gpus[0];
        EXPECT_STR(t, g->pci, "00000000:00:09.0");
        EXPECT(t, g->uuid_st == PROV_V_OK && g->pci_st == PROV_V_OK);
        EXPECT(t, g->name_st == PROV_V_OK);
        EXPECT_STR(t, g->name, "NVIDIA H100 80GB HBM3");
        EXPECT_NUM(t, g->util_mem_pct, 11);
        EXPECT_NUM(t, g->power_draw_w, 631.95);
        EXPECT(t, g->clk_st == PROV_V_OK && g->clk_reasons == 0);
        EXPECT_FLAG(t, g->remapped_failure, false);
        EXPECT(t, g->invalid_cells == 0);
    }
    prov_sample_free(&m);
}

static void c_sample_l40s(th_t *t, const char *s, size_t n)
{
    prov_sample_t m;
    PARSE_OR_FAIL(prov_sample_parse(s, n, NULL, 0, &m, &err));
    EXPECT_SZ(t, m.ngpus, 1);
    if (m.ngpus == 1) {
        EXPECT_NUM(t, m.gpus[0].util_mem_pct, 9);
        EXPECT_NUM(t, m.gpus[0].mem_used_mib, 0); /* a real 0, not a missing value */
        EXPECT_NUM(t, m.gpus[0].power_draw_w, 144.97);
        EXPECT_STR(t, m.gpus[0].pci, "00000000:01:00.0");
        EXPECT_STR(t, m.gpus[0].name, "NVIDIA L40S");
        EXPECT(t, m.gpus[0].invalid_cells == 0);
    }
    prov_sample_free(&m);
}

/* Driver 465: clocks_throttle_reasons.active (0x1 = GPU idle), no
 * remapped_rows fields, ECC [N/A]. */
static void c_sample_drv465(th_t *t, const char *s, size_t n)
{
    prov_sample_t m;
    PARSE_OR_FAIL(prov_sample_parse(s, n, NULL, 0, &m, &err));
    EXPECT_SZ(t, m.ngpus, 1);
    if (m.ngpus == 1) {
        const prov_sample_gpu_t *g = &m.gpus[0];
        EXPECT(t, g->clk_st == PROV_V_OK && g->clk_reasons == PROV_CLK_GPU_IDLE);
        EXPECT_ST(t, g->ecc_uncorr_volatile, PROV_V_NA);
        EXPECT_ST(t, g->remapped_pending, PROV_V_ABSENT);
        EXPECT_ST(t, g->remapped_failure, PROV_V_ABSENT);
        EXPECT_NUM(t, g->util_gpu_pct, 0);
        EXPECT_NUM(t, g->mem_total_mib, 7979);
        EXPECT_NUM(t, g->power_draw_w, 30.37);
        EXPECT_STR(t, g->pci, "00000000:0C:00.0");
    }
    prov_sample_free(&m);
}

const fixture_case_t monitor_fixture_cases[] = {
    {"kernel_fallen_off_bus_probe_dmesg__H100-80GB-HBM3__8gpu.txt", PK_KMSG, c_k_probe_dmesg},
    {"kernel_fallen_off_bus_probe_open570__unknown__1gpu.txt", PK_KMSG, c_k_probe_open570},
    {"kernel_fallen_off_bus_syslog__H100-80GB-HBM3__8gpu.txt", PK_KMSG, c_k_probe_syslog},
    {"kernel_xid_119__unknown__1gpu.txt", PK_KMSG, c_k_xid119},
    {"kernel_xid_13_109_ctime__unknown__1gpu.txt", PK_KMSG, c_k_xid13_109},
    {"kernel_xid_13_43_decode_iso__unknown__1gpu.txt", PK_KMSG, c_k_xid13_43},
    {"kernel_xid_45_caused_by_145_149_partial__unknown__4gpu.txt", PK_KMSG, c_k_xid45},
    {"kernel_xid_48_63_94_iso__unknown__1gpu.txt", PK_KMSG, c_k_xid48_63_94},
    {"kernel_xid_63__A100-SXM4-80GB__1gpu.txt", PK_KMSG, c_k_xid63},
    {"kernel_xid_79_crashdump__H100-80GB-HBM3__8gpu.txt", PK_KMSG, c_k_xid79_crashdump},
    {"kernel_xid_79_sxid_20034__unknown__1gpu.txt", PK_KMSG, c_k_xid79_sxid},
    {"q__H100-80GB-HBM3__8gpu.txt", PK_FABRIC, c_q_h100},
    {"q_hw_slowdown__H100-80GB-HBM3__8gpu.txt", PK_FABRIC, c_q_hw_slowdown},
    {"q_i0_drv525__H800__8gpu.txt", PK_FABRIC, c_q_h800},
    {"q_remap_pending__A10__1gpu.txt", PK_FABRIC, c_q_a10},
    {"q_sw_power_cap__RTX-4090__8gpu.txt", PK_FABRIC, c_q_4090},
    {"q_volta_drv560__TITAN-V__1gpu.txt", PK_FABRIC, c_q_volta},
    {"q_ecc_remap_pending_partial__A100-SXM4-80GB__8gpu.txt", PK_FABRIC, c_q_partial},
    {"query_csv_allfields__H100-80GB-HBM3__1gpu.txt", PK_SAMPLE, c_sample_h100},
    {"query_csv_allfields__L40S__1gpu.txt", PK_SAMPLE, c_sample_l40s},
    {"query_csv_allfields_drv465__RTX-2080-SUPER__1gpu.txt", PK_SAMPLE, c_sample_drv465},
};
const size_t monitor_fixture_cases_n =
    sizeof monitor_fixture_cases / sizeof monitor_fixture_cases[0];
