/* The health monitor's parsers on hand-written input: the journalctl shapes
 * no fixture has (short-monotonic, short-iso, the cursor line), the PCI
 * canonical form, absurd Xid codes, garbage, bounds, sample markers and
 * fabric verdicts. */
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "provisioner/parse/parse_monitor.h"
#include "tests/parsers/harness.h"

static bool kparse(th_t *t, const char *text, size_t max, prov_kmsg_t *k)
{
    prov_err_t err;
    if (prov_kmsg_parse(text, strlen(text), max, k, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
        return false;
    }
    return true;
}

static void test_pci(th_t *t)
{
    th_begin(t);
    static const char *const ok[][3] = {
        {"0000:3b:00", "00000000:3B:00.0", "implied"}, {"0000:3B:00.0", "00000000:3B:00.0", ""},
        {"00000000:3b:00.1", "00000000:3B:00.1", ""},  {" 10000:e1:1f.7 ", "00010000:E1:1F.7", ""},
        {"0:00:00", "00000000:00:00.0", "implied"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char out[PROV_PCI_MAX];
        bool implied = false;
        EXPECT(t, prov_pci_canon(ok[i][0], strlen(ok[i][0]), out, &implied));
        EXPECT_STR(t, out, ok[i][1]);
        EXPECT(t, implied == (ok[i][2][0] != '\0'));
    }
    static const char *const bad[] = {"3b:00.0",
                                      "0000:3b:20.0",
                                      "0000:3b:00.8",
                                      "0000:3b:0.0",
                                      "0000:3b:00.",
                                      "0000:3b:00.0x",
                                      "",
                                      "123456789:00:00.0",
                                      "0000:g0:00.0",
                                      "0000:3b:00:0",
                                      "0000:3b:000.0",
                                      "-000:3b:00.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[PROV_PCI_MAX] = "x";
        EXPECT(t, !prov_pci_canon(bad[i], strlen(bad[i]), out, NULL));
        EXPECT_STR(t, out, "");
    }
    th_end(t, "pci: one canonical form, nothing guessed");
}

/* journalctl -k -o short-monotonic / short-iso[-precise] / short, with
 * --show-cursor; none of these is in the fixtures, so they are written
 * from journalctl(1)'s output formats. */
static void test_journal_shapes(th_t *t)
{
    th_begin(t);
    static const char text[] =
        "-- Logs begin at Mon 2025-03-03 08:00:00 UTC, end at Wed 2025-03-05 10:00:00 UTC. --\n"
        "[ 4254.197860] gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n"
        "2025-03-05T10:00:00+0000 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, "
        "name=python3, Ch 00000010, intr 10000000. MMU Fault\n"
        "2025-03-05T11:00:00.250000+01:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, x\n"
        "Mar 05 10:00:01 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a b, y\n"
        "-- Boot 0123456789abcdef0123456789abcdef --\n"
        "<4>[   12.500000] NVRM: Xid (PCI:0000:3b:00): 74, pid=9, name=nccl, NVLink: fatal\n"
        "-- cursor: s=0123abcd;i=1f;b=89ab;m=12;t=5f0e;x=77\n";
    prov_kmsg_t k;
    if (kparse(t, text, 0, &k)) {
        EXPECT_SZ(t, k.nevents, 5);
        EXPECT_SZ(t, k.bad_times + k.malformed + k.bad_cursors, 0);
        EXPECT_STR(t, k.cursor, "s=0123abcd;i=1f;b=89ab;m=12;t=5f0e;x=77");
        EXPECT(t, k.cursor_line == 8);
        EXPECT(t, k.has_mono && k.max_mono_us == 4254197860u);
    }
    if (k.nevents == 5) {
        EXPECT(t, k.events[0].code == 79 && k.events[0].time.mono_us == 4254197860u);
        EXPECT_STR(t, k.events[0].pci, "00000000:3B:00.0");
        EXPECT(t, k.events[1].time.wall == PROV_WALL_ISO &&
                      k.events[1].time.epoch_us == 1741168800000000LL);
        EXPECT_STR(t, k.events[1].process, "python3");
        EXPECT(t, k.events[2].time.epoch_us == 1741168800250000LL && k.events[2].time.tz_min == 60);
        EXPECT(t, k.events[3].time.wall == PROV_WALL_SYSLOG && k.events[3].time.month == 3 &&
                      k.events[3].time.day == 5 && k.events[3].time.sec == 1);
        EXPECT_STR(t, k.events[3].process, "a b");
        EXPECT(t, k.events[4].code == 74 && k.events[4].time.mono_us == 12500000u);
        EXPECT_STR(t, k.events[4].message, "NVLink: fatal");
    }
    prov_kmsg_free(&k);
    if (kparse(t, "-- No entries --\n", 0, &k))
        EXPECT(t, k.no_entries && k.nevents == 0 && k.cursor[0] == '\0');
    prov_kmsg_free(&k);
    th_end(t, "kmsg: journalctl short-monotonic, short-iso, short, cursor");
}

static void test_kmsg_variants(th_t *t)
{
    th_begin(t);
    static const char text[] =
        /* another program's syslog line quoting an Xid: not the kernel's */
        "Mar  5 10:00:00 host gpud[123]: NVRM: Xid (PCI:0000:3b:00): 79, copied\n"
        /* newer drivers: no pid/name; old drivers: no "PCI:" */
        "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
        "NVRM: Xid (0000:01:00): 13, 0001 00000000 0000c1c0\n"
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress error\n"
        /* an address we refuse: the event stays, the address does not */
        "NVRM: Xid (PCI:zz:3b): 79, x\n"
        "NVRM: GPU at PCI:0000:3c:00: GPU-not-a-uuid\n"
        "NVRM: Xid (PCI:0000:3c:00): 94, pid=12x, name=<unknown>, y\n"
        "[Firmware Bug]: NVRM: Xid (PCI:0000:3c:00): 65535, z\n"
        "Tue 2025-03-05 10:00:00 UTC host kernel: nvidia-nvswitch1: SXid (PCI:0000:06:00.0): "
        "20034, Fatal, Link 48 LTSSM Fault Up\n";
    prov_kmsg_t k;
    if (kparse(t, text, 0, &k)) {
        EXPECT_SZ(t, k.nevents, 7);
        EXPECT_SZ(t, k.malformed + k.bad_times, 0);
    }
    if (k.nevents == 7) {
        EXPECT_STR(t, k.events[0].message, "GPU has fallen off the bus.");
        EXPECT_ST(t, k.events[0].pid, PROV_V_ABSENT);
        EXPECT(t, k.events[1].code == 13);
        EXPECT_STR(t, k.events[1].pci, "00000000:01:00.0");
        EXPECT(t, k.events[2].kind == PROV_KEV_SXID && k.events[2].code == 12028);
        EXPECT(t, k.events[2].severity == PROV_SXID_SEV_NONFATAL);
        EXPECT_STR(t, k.events[2].device, "nvidia-nvswitch3");
        EXPECT_STR(t, k.events[2].message, "Link 32 egress error");
        EXPECT(t, k.events[3].code == 79 && k.events[3].pci_invalid);
        EXPECT_STR(t, k.events[3].pci, "");
        EXPECT_STR(t, k.events[4].uuid, "");
        EXPECT_ST(t, k.events[4].pid, PROV_V_INVALID);
        EXPECT(t, k.events[5].code == 65535);
        /* journalctl -o short-full is not a known prefix: the event, no time */
        EXPECT(t, k.events[6].kind == PROV_KEV_SXID && k.events[6].code == 20034);
        EXPECT(t, k.events[6].severity == PROV_SXID_SEV_FATAL);
        EXPECT(t, k.events[6].time.wall == PROV_WALL_NONE);
    }
    prov_kmsg_free(&k);
    th_end(t, "kmsg: other programs, old and new driver forms, bad addresses");
}

/* Codes that are not 1..65535 followed by ',' are refused, never guessed. */
static void test_kmsg_absurd(th_t *t)
{
    th_begin(t);
    static const char *const lines[] = {
        "NVRM: Xid (PCI:0000:3b:00): -79, x",
        "NVRM: Xid (PCI:0000:3b:00): 65536, x",
        "NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x",
        "NVRM: Xid (PCI:0000:3b:00): 0, x",
        "NVRM: Xid (PCI:0000:3b:00): 79abc, x",
        "NVRM: Xid (PCI:0000:3b:00): , x",
        "NVRM: Xid (PCI:0000:3b:00): 7",  /* cut inside "79" */
        "NVRM: Xid (PCI:0000:3b:00): 79", /* cut before ", " */
        "NVRM: Xid (PCI:0000:3b:00):",
        "NVRM: Xid (PCI:0000:3b",
        "NVRM: Xid ",
        "NVRM: Xid (PCI:0000:3b:00) 79, x",
        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 4294967296, Fatal, x",
        "nvidia-nvswitchX: SXid (PCI:0000:05:00.0): 20034, Fatal, x",
        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0)",
    };
    size_t n = sizeof lines / sizeof lines[0];
    for (size_t i = 0; i < n; i++) {
        prov_kmsg_t k;
        if (kparse(t, lines[i], 0, &k) && (k.nevents != 0 || k.malformed != 1))
            th_fail(t, __LINE__, "'%s': %zu events, %zu malformed", lines[i], k.nevents,
                    k.malformed);
        prov_kmsg_free(&k);
    }
    th_end(t, "kmsg: absurd Xid/SXid codes refused (%zu lines)", n);
}

static void test_kmsg_garbage(th_t *t)
{
    th_begin(t);
    /* NUL, invalid UTF-8 and control bytes, a huge line, bad stamps */
    size_t big = PROV_KMSG_LINE_MAX + 100;
    char *text = malloc(big + 600);
    if (!text) {
        th_fail(t, __LINE__, "out of memory");
        th_end(t, "kmsg: garbage");
        return;
    }
    size_t o = 0;
    static const char l1[] = "NVRM: Xid (PCI:0000:3b:00): 79, a\0b\n";
    memcpy(text + o, l1, sizeof l1 - 1);
    o += sizeof l1 - 1;
    static const char l2[] = "NVRM: Xid (PCI:0000:3b:00): 13, bad \xff\xfe utf8 \x1b[31m red\n";
    memcpy(text + o, l2, sizeof l2 - 1);
    o += sizeof l2 - 1;
    memcpy(text + o, "NVRM: Xid (PCI:0000:3b:00): 79, ", 32);
    memset(text + o + 32, 'A', big - 32);
    o += big;
    text[o++] = '\n';
    static const char l4[] = "[Sun Feb 30 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, x\n"
                             "[123456789012.000000] NVRM: Xid (PCI:0000:9b:00): 119, x\n"
                             "2025-13-01T00:00:00+00:00 NVRM: Xid (PCI:0000:9b:00): 119, x\n"
                             "NVRM: The NVIDIA GPU 0000:5d:00.0\n";
    memcpy(text + o, l4, sizeof l4 - 1);
    o += sizeof l4 - 1;
    prov_kmsg_t k;
    prov_err_t err;
    if (prov_kmsg_parse(text, o, 0, &k, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
    } else {
        EXPECT_SZ(t, k.nul_lines, 1);
        EXPECT_SZ(t, k.oversize_lines, 1);
        EXPECT_SZ(t, k.bad_times, 3);
        EXPECT_SZ(t, k.incomplete, 1); /* the probe message never finished */
        EXPECT_SZ(t, k.nevents, 4);
        EXPECT(t, !k.has_mono);
        for (size_t i = 0; i < k.nevents; i++) {
            EXPECT(t, utf8_valid(k.events[i].raw, strlen(k.events[i].raw)));
            EXPECT(t, utf8_valid(k.events[i].message, strlen(k.events[i].message)));
            EXPECT(t, k.events[i].time.wall == PROV_WALL_NONE && !k.events[i].time.has_mono);
        }
        if (k.nevents == 4) {
            EXPECT(t, k.events[0].raw_cleaned && strchr(k.events[0].raw, 0x1b) == NULL);
            EXPECT(t, strstr(k.events[0].message, "\xEF\xBF\xBD") != NULL);
        }
    }
    prov_kmsg_free(&k);
    free(text);
    th_end(t, "kmsg: NUL, invalid UTF-8, huge line, bad stamps, cut message");
}

/* More events than max_events: the first ones kept, the rest counted, and
 * the cursor after them still read. */
static void test_kmsg_bounds(th_t *t)
{
    th_begin(t);
    static const char line[] = "[ 1.000000] NVRM: Xid (PCI:0000:3b:00): 13, x\n";
    static const char cur[] = "-- cursor: s=ab;i=2\n";
    size_t nl = 5000, ll = sizeof line - 1;
    char *text = malloc(nl * ll + sizeof cur);
    if (!text) {
        th_fail(t, __LINE__, "out of memory");
        th_end(t, "kmsg: bounded output");
        return;
    }
    for (size_t i = 0; i < nl; i++)
        memcpy(text + i * ll, line, ll);
    memcpy(text + nl * ll, cur, sizeof cur);
    static const size_t max[][2] = {
        {100, 100}, {0, PROV_KMSG_EVENTS_DEF}, {1000000, PROV_KMSG_EVENTS_HARD}};
    for (size_t m = 0; m < 3; m++) {
        prov_kmsg_t k;
        if (kparse(t, text, max[m][0], &k)) {
            EXPECT_SZ(t, k.nevents, max[m][1]);
            EXPECT_SZ(t, k.dropped, nl - max[m][1]);
            EXPECT(t, k.truncated);
            EXPECT_STR(t, k.cursor, "s=ab;i=2");
        }
        prov_kmsg_free(&k);
    }
    free(text);
    static const char *const bad[] = {
        "-- cursor: s=abc;rm -rf /\n", "-- cursor: s=abc'\n", "-- cursor: \n",
        "-- cursor: s=;i=1\n",         "-- cursor: s=ab;\n",  "-- cursor: S=AB\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        prov_kmsg_t k;
        if (kparse(t, bad[i], 0, &k))
            EXPECT(t, k.bad_cursors == 1 && k.cursor[0] == '\0');
        prov_kmsg_free(&k);
    }
    th_end(t, "kmsg: bounded output, cursor after truncation, bad cursors refused");
}

static const char *const sample_line =
    "GPU-11111111-2222-3333-4444-555555555555, 00000000:3B:00.0, 87, 45, 40000, 81559, 71, "
    "612.50, 0x0000000000000048, 2, Yes, No, Yes, NVIDIA H100 80GB HBM3\n"
    "[GPU requires reset], [N/A], [Unknown Error], [Not Supported], ERR!, [N/A], [N/A], "
    "[Unknown Error], [N/A], [Not Supported], [N/A], [N/A], [N/A], [N/A]\n"
    "GPU-xyz, 0000:zz, 140, -5, 12abc, 81559 GiB, 1e3, W, 0xZZ, 1.5, Maybe, 2, , NVIDIA\x01H100\n"
    "GPU-11111111-2222-3333-4444-555555555556, 0000:3c:00.0, 87 %, 45 MiB, 40000 MiB, "
    "81559 MiB, -12, 612.5 W, 0X1, 0, No, No, No, NVIDIA L40S\n";

/* The four rows of sample_line: values, markers, garbage, units. */
static void check_sample_rows(th_t *t, const prov_sample_t *s)
{
    EXPECT_SZ(t, s->ngpus, 4);
    if (s->ngpus == 4) {
        const prov_sample_gpu_t *g = &s->gpus[0];
        EXPECT_STR(t, g->pci, "00000000:3B:00.0");
        EXPECT_NUM(t, g->util_gpu_pct, 87);
        EXPECT_NUM(t, g->power_draw_w, 612.5);
        EXPECT(t, g->clk_st == PROV_V_OK &&
                      g->clk_reasons == (PROV_CLK_HW_SLOWDOWN | PROV_CLK_HW_THERMAL));
        EXPECT(t, (g->clk_reasons & PROV_CLK_HW_MASK) != 0);
        EXPECT_NUM(t, g->ecc_uncorr_volatile, 2);
        EXPECT_FLAG(t, g->retired_pending, true);
        EXPECT_FLAG(t, g->remapped_pending, false);
        EXPECT_FLAG(t, g->remapped_failure, true);
        EXPECT(t, g->name_st == PROV_V_OK);
        EXPECT_STR(t, g->name, "NVIDIA H100 80GB HBM3");
        EXPECT(t, g->invalid_cells == 0);
        g = &s->gpus[1]; /* every marker stays a marker */
        EXPECT(t, g->uuid_st == PROV_V_ERR && g->pci_st == PROV_V_NA);
        EXPECT_ST(t, g->util_gpu_pct, PROV_V_UNKNOWN_ERROR);
        EXPECT_ST(t, g->util_mem_pct, PROV_V_NOT_SUPPORTED);
        EXPECT_ST(t, g->mem_used_mib, PROV_V_ERR);
        EXPECT_ST(t, g->power_draw_w, PROV_V_UNKNOWN_ERROR);
        EXPECT(t, g->clk_st == PROV_V_NA);
        EXPECT_ST(t, g->ecc_uncorr_volatile, PROV_V_NOT_SUPPORTED);
        EXPECT_ST(t, g->remapped_failure, PROV_V_NA);
        EXPECT(t, g->name_st == PROV_V_NA && g->name[0] == '\0');
        EXPECT(t, g->invalid_cells == 0 && g->uuid[0] == '\0');
        g = &s->gpus[2]; /* garbage is invalid, not 0 and not clamped */
        EXPECT(t, g->uuid_st == PROV_V_INVALID && g->pci_st == PROV_V_INVALID);
        EXPECT_ST(t, g->util_gpu_pct, PROV_V_INVALID);
        EXPECT_ST(t, g->util_mem_pct, PROV_V_INVALID);
        EXPECT_ST(t, g->mem_used_mib, PROV_V_INVALID);
        EXPECT_ST(t, g->mem_total_mib, PROV_V_INVALID);
        EXPECT_ST(t, g->temperature_c, PROV_V_INVALID);
        EXPECT_ST(t, g->power_draw_w, PROV_V_INVALID);
        EXPECT(t, g->clk_st == PROV_V_INVALID);
        EXPECT_ST(t, g->ecc_uncorr_volatile, PROV_V_INVALID);
        EXPECT_ST(t, g->retired_pending, PROV_V_INVALID);
        EXPECT_ST(t, g->remapped_pending, PROV_V_INVALID);
        EXPECT_ST(t, g->remapped_failure, PROV_V_ABSENT);
        EXPECT(t, g->name_st == PROV_V_INVALID && g->name[0] == '\0'); /* a control char */
        EXPECT(t, g->invalid_cells == 13);
        g = &s->gpus[3]; /* units allowed when they are the field's own */
        EXPECT_NUM(t, g->util_gpu_pct, 87);
        EXPECT_ST(t, g->util_mem_pct, PROV_V_INVALID);
        EXPECT_NUM(t, g->mem_total_mib, 81559);
        EXPECT_NUM(t, g->temperature_c, -12);
        EXPECT_NUM(t, g->power_draw_w, 612.5);
        EXPECT_STR(t, g->pci, "00000000:3C:00.0");
        EXPECT(t, g->clk_reasons == PROV_CLK_GPU_IDLE);
        EXPECT_STR(t, g->name, "NVIDIA L40S");
        json_t *j = prov_sample_to_json(s);
        char *d = j ? json_dumps(j, JSON_COMPACT) : NULL;
        EXPECT(t, d && strstr(d, "\"clock_event_reasons\":[\"hw_slowdown\",\"hw_thermal_"
                                 "slowdown\"]") != NULL);
        EXPECT(t, d && strstr(d, "\"utilization_gpu_pct\":null,\"utilization_gpu_pct_state\":"
                                 "\"unknown_error\"") != NULL);
        free(d);
        json_decref(j);
    }
}

/* A row with another field count, and an older driver's field name. */
static void check_sample_fields(th_t *t)
{
    prov_sample_t s;
    prov_err_t err;
    /* a row with another field count is an error, not a shifted sample */
    static const char short_row[] = "GPU-1, 00000000:3B:00.0, 87\n";
    EXPECT(t, prov_sample_parse(short_row, strlen(short_row), prov_sample_fields,
                                prov_sample_nfields, &s, &err) == -1);
    EXPECT(t, s.ngpus == 0 && s.gpus == NULL);
    /* an older driver's field name */
    static const char *const legacy[] = {"uuid", "clocks_throttle_reasons.active"};
    static const char legacy_row[] =
        "GPU-11111111-2222-3333-4444-555555555555, 0x0000000000000004\n";
    if (prov_sample_parse(legacy_row, strlen(legacy_row), legacy, 2, &s, &err) == 0 &&
        s.ngpus == 1) {
        EXPECT(t, s.gpus[0].clk_st == PROV_V_OK && s.gpus[0].clk_reasons == PROV_CLK_SW_POWER_CAP);
        EXPECT_ST(t, s.gpus[0].util_gpu_pct, PROV_V_ABSENT);
    } else {
        th_fail(t, __LINE__, "legacy field list");
    }
    prov_sample_free(&s);
}

/* The product name: valid UTF-8 without control characters, shorter than PROV_NAME_MAX. */
static void check_sample_names(th_t *t)
{
    prov_sample_t s;
    prov_err_t err;
    /* the product name: valid UTF-8 without control characters, shorter than
     * PROV_NAME_MAX; anything else is invalid (kept out, never cut or cleaned) */
    static const char *const name_fields[] = {"uuid", "name"};
    static const struct {
        const char *cell;
        prov_vstate_t st;
    } names[] = {
        {"NVIDIA GeForce RTX 4090", PROV_V_OK},
        {"NVIDIA RTX A6000 \xc3\xa9", PROV_V_OK},
        {"NVIDIA \xc3\x28 bad", PROV_V_INVALID},
        {"NVIDIA \xff", PROV_V_INVALID},
        {"NVIDIA\x7f", PROV_V_INVALID},
        {"NVIDIA \xc2\x85 C1", PROV_V_INVALID},
        {"NVIDIA \xe2\x80\xa8 LS", PROV_V_INVALID},
        {"NVIDIA \xe2\x80\x94 dash", PROV_V_OK},
        {"NVIDIA\tH100", PROV_V_INVALID},
        {"[Not Supported]", PROV_V_NOT_SUPPORTED},
        {"NVIDIA "
         "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567"
         "8",
         PROV_V_INVALID}, /* 96 bytes */
        {"NVIDIA "
         "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567",
         PROV_V_OK}, /* 95 bytes */
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char row[256];
        snprintf(row, sizeof row, "GPU-11111111-2222-3333-4444-555555555555, %s\n", names[i].cell);
        if (prov_sample_parse(row, strlen(row), name_fields, 2, &s, &err) == 0 && s.ngpus == 1) {
            if (s.gpus[0].name_st != names[i].st)
                th_fail(t, __LINE__, "name row %zu: state %d", i, (int)s.gpus[0].name_st);
            if (names[i].st == PROV_V_OK)
                EXPECT_STR(t, s.gpus[0].name, names[i].cell);
            else
                EXPECT(t, s.gpus[0].name[0] == '\0');
        } else {
            th_fail(t, __LINE__, "name row %zu did not parse", i);
        }
        prov_sample_free(&s);
    }
}

static void test_sample(th_t *t)
{
    th_begin(t);
    prov_sample_t s;
    prov_err_t err;
    if (prov_sample_parse(sample_line, strlen(sample_line), prov_sample_fields, prov_sample_nfields,
                          &s, &err) != 0) {
        th_fail(t, __LINE__, "parse failed: %s", err.msg);
        th_end(t, "sample: values, markers, garbage");
        return;
    }
    check_sample_rows(t, &s);
    prov_sample_free(&s);
    check_sample_fields(t);
    check_sample_names(t);
    th_end(t, "sample: values, markers, garbage, units, legacy field name, product name");
}

static void test_clk_reasons(th_t *t)
{
    th_begin(t);
    uint64_t m = 0;
    EXPECT(t, prov_clk_reasons_parse("0x1FF", 5, &m) && m == PROV_CLK_KNOWN);
    EXPECT(t, prov_clk_reasons_parse("0xffffffffffffffff", 18, &m) && m == UINT64_MAX);
    EXPECT(t, !prov_clk_reasons_parse("0x", 2, &m));
    EXPECT(t, !prov_clk_reasons_parse("0x00000000000000001", 19, &m));
    EXPECT(t, !prov_clk_reasons_parse("08", 2, &m));
    EXPECT(t, !prov_clk_reasons_parse("0x8 ", 3, &m) || m == 8);
    EXPECT_STR(t, prov_clk_reason_label(PROV_CLK_HW_SLOWDOWN), "HW Slowdown");
    EXPECT_STR(t, prov_clk_reason_label(PROV_CLK_HW_POWER_BRAKE), "HW Power Brake Slowdown");
    EXPECT_STR(t, prov_clk_reason_name(PROV_CLK_SW_THERMAL), "sw_thermal_slowdown");
    EXPECT(t, prov_clk_reason_name(0x200) == NULL && prov_clk_reason_name(0x3) == NULL);
    json_t *j = prov_clk_reasons_json(0x204);
    char *d = j ? json_dumps(j, JSON_COMPACT) : NULL;
    EXPECT_STR(t, d, "[\"sw_power_cap\",\"0x200\"]");
    free(d);
    json_decref(j);
    th_end(t, "clock event reasons: NVML bits, names, labels");
}

static prov_fabric_verdict_t fab(const char *text, prov_fabric_t *f)
{
    if (prov_fabric_parse(text, strlen(text), f, NULL) != 0)
        return (prov_fabric_verdict_t)-1;
    return f->verdict;
}

static void test_fabric(th_t *t)
{
    th_begin(t);
    static const struct {
        const char *state, *status;
        prov_fabric_verdict_t v;
    } cases[] = {
        {"Completed", "Success", PROV_FABRIC_OK},
        {"In Progress", "N/A", PROV_FABRIC_NOT_OK},
        {"Not Started", "N/A", PROV_FABRIC_NOT_OK},
        {"Completed", "Unknown Error", PROV_FABRIC_NOT_OK}, /* NVML's error string */
        {"Completed", "Insufficient Resources", PROV_FABRIC_NOT_OK},
        {"Completed", "N/A", PROV_FABRIC_UNREAD},
        {"Not Supported", "N/A", PROV_FABRIC_UNREAD},
        {"N/A", "Success", PROV_FABRIC_UNREAD},
        {"ERR!", "ERR!", PROV_FABRIC_UNREAD},
        {"[GPU requires reset]", "", PROV_FABRIC_UNREAD},
        {"C0mpl3t3d!", "Success", PROV_FABRIC_UNREAD},
        {"", "Success", PROV_FABRIC_UNREAD},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "GPU 00000000:3B:00.0\n    Fabric\n        State         : %s\n"
                 "        Status        : %s\n    Processes                     : None\n",
                 cases[i].state, cases[i].status);
        prov_fabric_t f;
        prov_fabric_verdict_t v = fab(text, &f);
        if (v != cases[i].v)
            th_fail(t, __LINE__, "state '%s' status '%s': %s, expected %s", cases[i].state,
                    cases[i].status, prov_fabric_verdict_name(v),
                    prov_fabric_verdict_name(cases[i].v));
        prov_fabric_free(&f);
    }
    /* two GPUs, one bad; a "State" outside Fabric and lines before any GPU ignored */
    static const char two[] = "    Fabric\n        State : In Progress\n"
                              "GPU 0000:3b:00.0\n    Power Readings\n        State : Garbage\n"
                              "    Fabric\n        State : Completed\n        Status : Success\n"
                              "        CliqueId : 32766\n        Health\n"
                              "            Bandwidth : Full\n    Processes : None\n"
                              "GPU 00000000:3C:00.0\n    Fabric : N/A\n"
                              "GPU 00000000:3D:00.0\n    Fabric\n        State : Not Started\n";
    prov_fabric_t f;
    EXPECT(t, fab(two, &f) == PROV_FABRIC_NOT_OK);
    EXPECT_SZ(t, f.ngpus, 3);
    EXPECT(t, f.n_ok == 1 && f.n_not_ok == 1 && f.n_unread == 1);
    if (f.ngpus == 3) {
        EXPECT_STR(t, f.gpus[0].pci, "00000000:3B:00.0");
        EXPECT_STR(t, f.gpus[0].clique_id, "32766");
        EXPECT_STR(t, f.gpus[0].health_bandwidth, "Full");
        EXPECT(t, f.gpus[1].has_section && f.gpus[1].state_st == PROV_V_NA);
    }
    prov_fabric_free(&f);
    EXPECT(t, fab("", &f) == PROV_FABRIC_UNREAD && f.ngpus == 0);
    prov_fabric_free(&f);
    th_end(t, "fabric: verdicts for every state/status shape");
}

void run_monitor_unit_tests(th_t *t)
{
    test_pci(t);
    test_journal_shapes(t);
    test_kmsg_variants(t);
    test_kmsg_absurd(t);
    test_kmsg_garbage(t);
    test_kmsg_bounds(t);
    test_sample(t);
    test_clk_reasons(t);
    test_fabric(t);
}
