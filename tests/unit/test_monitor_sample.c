/* test_monitor_sample.c — what the monitor makes of one sample's output: readings into
 * the document (unread stays null), which evidence isolates and which only records, the
 * kernel log cursor kept between samples, and the command's quoting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/monitor/monitor_sample.h"
#include "tests/unit/unit.h"

#define UUID0 "GPU-a1b2c3d4-0000-1111-2222-333344445555"
#define UUID1 "GPU-a1b2c3d4-0000-1111-2222-333344445556"
/* uuid, pci, util, mem util, used, total, temp, power, clocks, ecc, retired, remap p, remap f,
 * name */
#define ROW0                                                                                      \
    UUID0 ", 00000000:18:00.0, 87, 40, 60000, 81559, 61, 612.40, 0x0000000000000000, 0, No, No, " \
          "No, NVIDIA H100 80GB HBM3\n"
#define ROW1                                                                                      \
    UUID1 ", 00000000:2A:00.0, 85, 41, 60100, 81559, 63, 598.02, 0x0000000000000000, 0, No, No, " \
          "No, NVIDIA H100 80GB HBM3\n"
#define CURSOR \
    "s=0123456789abcdef0123456789abcdef;i=2a;b=fedcba9876543210fedcba9876543210;m=3f;t=5f;x=1a2b"

static struct mon_memory mem;
static struct mon_policy pol;
static struct mon_outcome out;

static void reset(int gpu_count)
{
    mon_memory_clear(&mem);
    memset(&mem, 0, sizeof mem);
    mem.mono = -1;
    memset(&pol, 0, sizeof pol);
    pol.gpu_count = gpu_count;
}

/* Reads one sample made of these sections. */
static int read_sample(const char *gpu, int gpu_rc, const char *kmsg, int docker_rc)
{
    char text[8192];
    snprintf(text, sizeof text, "@@gpu\n%s\n@@gpu_rc %d\n@@kmsg\n%s@@docker\n@@docker_rc %d\n", gpu,
             gpu_rc, kmsg, docker_rc);
    mon_outcome_clear(&out);
    return mon_sample_read(&mem, &pol, text, strlen(text), &out);
}

static const json_t *events(void)
{
    return json_object_get(out.doc, "events");
}

/* The policy of the first event of this kind (and code, when > 0), or NULL. */
static const char *policy_of(const char *kind, int code)
{
    size_t i;
    const json_t *e;
    json_array_foreach(events(), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "kind")), kind) != 0)
            continue;
        if (code > 0 && json_integer_value(json_object_get(e, "code")) != code)
            continue;
        return json_string_value(json_object_get(e, "policy"));
    }
    return NULL;
}

static void test_healthy(void)
{
    reset(2);
    CHECK(read_sample(ROW0 ROW1, 0, "-- No entries --\n-- cursor: " CURSOR "\n", 0) == 0);
    CHECK(out.gpu_read && out.isolate[0] == '\0');
    const json_t *gpus = json_object_get(out.doc, "gpus");
    CHECK(json_array_size(gpus) == 2);
    const json_t *g = json_array_get(gpus, 0);
    CHECK_STR(json_string_value(json_object_get(g, "uuid")), UUID0);
    CHECK_STR(json_string_value(json_object_get(g, "pci_bus_id")), "00000000:18:00.0");
    CHECK(json_real_value(json_object_get(g, "power_w")) > 612.3);
    CHECK_STR(json_string_value(json_object_get(g, "name")), "NVIDIA H100 80GB HBM3");
    CHECK(json_array_size(events()) == 0);
    CHECK_STR(mem.cursor, CURSOR);
    CHECK(json_is_true(json_object_get(out.doc, "container_runtime")));
    /* the next command reads after that cursor, single-quoted */
    char *cmd = mon_sample_command(&mem, &pol);
    CHECK(cmd != NULL && strstr(cmd, "--after-cursor='" CURSOR "'") != NULL);
    CHECK(strstr(cmd, "nvidia-smi -q") == NULL); /* no fabric read without NVSwitch */
    free(cmd);
    pol.nvswitch = 1;
    cmd = mon_sample_command(&mem, &pol);
    CHECK(cmd != NULL && strstr(cmd, "echo @@fabric") != NULL);
    free(cmd);
}

static void test_unread_is_not_evidence(void)
{
    reset(2);
    /* [N/A] and [Unknown Error] stay null, never 0, and isolate nothing */
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, [N/A], [N/A], 60000, 81559, [Unknown Error], "
                            "[N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n" ROW1,
                      0, "", 0) == 0);
    const json_t *g = json_array_get(json_object_get(out.doc, "gpus"), 0);
    CHECK(json_is_null(json_object_get(g, "util_gpu")));
    CHECK(json_is_null(json_object_get(g, "temp_c")));
    CHECK(json_is_null(json_object_get(g, "remapped_rows_failure")));
    CHECK(json_object_get(g, "name") == NULL); /* unread: the stored name stays */
    CHECK(out.isolate[0] == '\0');
    /* a name that is not valid UTF-8 is left out, not cleaned into the document */
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 87, 40, 60000, 81559, 61, 612.40, "
                            "0x0000000000000000, 0, No, No, No, NVIDIA \xc3\x28\n" ROW1,
                      0, "", 0) == 0);
    g = json_array_get(json_object_get(out.doc, "gpus"), 0);
    CHECK(g != NULL && json_object_get(g, "name") == NULL);
    CHECK(json_object_get(json_array_get(json_object_get(out.doc, "gpus"), 1), "name") != NULL);
    CHECK(out.isolate[0] == '\0');
    /* nvidia-smi that does not answer: recorded, the host is not isolated on it */
    CHECK(read_sample("", 124, "", 0) == 0);
    CHECK(!out.gpu_read && out.isolate[0] == '\0');
    CHECK_STR(policy_of("gpu_missing", 0), "record");
    /* a dead container runtime is recorded */
    CHECK(read_sample(ROW0 ROW1, 0, "", 1) == 0);
    CHECK_STR(policy_of("container_runtime", 0), "record");
    CHECK(json_is_false(json_object_get(out.doc, "container_runtime")));
    CHECK(out.isolate[0] == '\0');
}

static void test_isolating_evidence(void)
{
    /* a GPU of the pool missing */
    reset(2);
    CHECK(read_sample(ROW0, 0, "", 0) == 0);
    CHECK_STR(policy_of("gpu_missing", 0), "isolate");
    CHECK(strstr(out.isolate, "1 of the pool's 2 GPUs") != NULL);
    /* row remapping failed; pending only records */
    reset(2);
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, 0, "
                            "No, Yes, No, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK_STR(policy_of("remap", 0), "record");
    CHECK(out.isolate[0] == '\0');
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, 0, "
                            "No, No, Yes, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK_STR(policy_of("remap", 0), "isolate");
    CHECK(strstr(out.isolate, "row remapping failed") != NULL);
    /* uncorrectable ECC: the first count is the baseline; growth isolates */
    reset(2);
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, 2, "
                            "No, No, No, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK_STR(policy_of("ecc", 0), "record");
    CHECK(out.isolate[0] == '\0');
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, 2, "
                            "No, No, No, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK(out.isolate[0] == '\0' && policy_of("ecc", 0) == NULL);
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, 5, "
                            "No, No, No, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK_STR(policy_of("ecc", 0), "isolate");
    CHECK(strstr(out.isolate, "grew from 2 to 5") != NULL);
    /* hardware slowdown only records */
    reset(2);
    CHECK(read_sample(UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 90, 70.0, 0x0000000000000048, 0, "
                            "No, No, No, NVIDIA H100 80GB HBM3\n" ROW1,
                      0, "", 0) == 0);
    CHECK_STR(policy_of("thermal", 0), "record");
    CHECK(out.isolate[0] == '\0');
}

static void test_kernel_log(void)
{
    reset(2);
    /* real lines (kernel_xid_13_43_decode_iso, kernel_xid_79_crashdump), journalctl
     * short-monotonic, then the cursor */
    const char *log =
        "[ 4254.197816] sim-001 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=2287, name=python3, "
        "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n"
        "-- cursor: " CURSOR "\n";
    CHECK(read_sample(ROW0 ROW1, 0, log, 0) == 0);
    CHECK_STR(policy_of("xid", 13), "record");
    CHECK(out.isolate[0] == '\0');
    /* the GPU is named by the sample's PCI address */
    const json_t *e = json_array_get(events(), 0);
    CHECK_STR(json_string_value(json_object_get(e, "gpu_uuid")), UUID0);
    const char *log79 = "[ 4260.000001] sim-001 kernel: NVRM: Xid (PCI:0000:2a:00): 79, pid=1910, "
                        "name=python3, GPU has fallen off the bus.\n";
    CHECK(read_sample(ROW0 ROW1, 0, log79, 0) == 0);
    CHECK_STR(policy_of("xid", 79), "isolate");
    CHECK(strstr(out.isolate, "Xid 79") != NULL);
    CHECK_STR(mem.cursor, CURSOR); /* a read without a new cursor keeps the old one */
    /* a pool override records Xid 79 */
    CHECK(mon_policy_overrides(&pol, "{\"79\": \"record\"}") == 0 && pol.nov == 1);
    CHECK(read_sample(ROW0 ROW1, 0, log79, 0) == 0);
    CHECK_STR(policy_of("xid", 79), "record");
    CHECK(out.isolate[0] == '\0');
    CHECK(mon_policy_overrides(&pol, "{\"79\": \"maybe\"}") == -1);
    CHECK(mon_policy_overrides(&pol, "[1]") == -1);
    CHECK(mon_policy_overrides(&pol, "{\"0\": \"record\"}") == -1);
    /* a hostile cursor-shaped line is refused by the parser and never quoted into a command */
    reset(2);
    CHECK(read_sample(ROW0 ROW1, 0, "-- cursor: s=1';reboot;'\n", 0) == 0);
    CHECK(mem.cursor[0] == '\0');
    char *cmd = mon_sample_command(&mem, &pol);
    CHECK(cmd != NULL && strstr(cmd, "reboot") == NULL && strstr(cmd, "-n 200") != NULL);
    free(cmd);
}

/* Issue 25: the kernel log is read forward in pages, filtered on the host, from the cursor
 * of the last entry actually read; a backlog past the limit is skipped with a
 * kernel_log_gap event that says how many, never silently. */
static void test_kernel_log_pages(void)
{
    reset(2);
    snprintf(mem.cursor, sizeof mem.cursor, "%s", CURSOR);
    pol.kmsg_page = 5000;
    char *cmd = mon_sample_command(&mem, &pol);
    CHECK(cmd != NULL && strstr(cmd, "--after-cursor='" CURSOR "' -n 5000 2>&1 | awk") != NULL);
    CHECK(strstr(cmd, "fallen off the bus") != NULL && strstr(cmd, "SXid") != NULL); /* filter */
    CHECK(strstr(cmd, "tail -c") == NULL); /* nothing is cut off the front any more */
    CHECK(strstr(cmd, "@@kcursor") != NULL && strstr(cmd, "@@ktail") != NULL);
    CHECK(strstr(cmd, "timeout 20 journalctl") != NULL && strstr(cmd, "timeout 20 dmesg") != NULL);
    free(cmd);
    /* the output budget stopped the read after 15 entries: the cursor of the 15th */
    const char *stopped =
        "[ 10.000001] h kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=a, x\n"
        "@@kstat\n15 15 1 0\n@@kmark 10.000001\n@@kstop 15\n@@kcursor\n"
        "-- cursor: s=0123456789abcdef0123456789abcdef;i=3a\n";
    CHECK(read_sample(ROW0 ROW1, 0, stopped, 0) == 0);
    CHECK_STR(policy_of("xid", 13), "record");
    CHECK_STR(mem.cursor, "s=0123456789abcdef0123456789abcdef;i=3a");
    CHECK(mem.mono > 10.0 && mem.mono < 10.1);
    /* a whole page read and 900 behind: read later (within the backlog limit) */
    pol.kmsg_backlog = 1000;
    const char *behind =
        "-- cursor: s=0123456789abcdef0123456789abcdef;i=100\n@@kstat\n5000 0 0 1\n"
        "@@kfull\n@@ktail\n-- cursor: s=0123456789abcdef0123456789abcdef;i=484\n";
    CHECK(read_sample(ROW0 ROW1, 0, behind, 0) == 0);
    CHECK_STR(mem.cursor, "s=0123456789abcdef0123456789abcdef;i=100");
    CHECK(policy_of("kernel_log_gap", 0) == NULL);
    /* 1,156 behind: skipped to the newest, and said */
    const char *gap = "-- cursor: s=0123456789abcdef0123456789abcdef;i=100\n@@kstat\n5000 0 0 1\n"
                      "@@kfull\n@@ktail\n-- cursor: s=0123456789abcdef0123456789abcdef;i=584\n";
    CHECK(read_sample(ROW0 ROW1, 0, gap, 0) == 0);
    CHECK_STR(mem.cursor, "s=0123456789abcdef0123456789abcdef;i=584");
    CHECK_STR(policy_of("kernel_log_gap", 0), "record");
    const json_t *e = json_array_get(events(), json_array_size(events()) - 1);
    CHECK(strncmp(json_string_value(json_object_get(e, "message")), "1156 kernel log entries",
                  23) == 0);
    CHECK(out.isolate[0] == '\0');
    /* a tail of another journal (seqnum id) cannot be measured: read on, nothing skipped */
    snprintf(mem.cursor, sizeof mem.cursor, "%s", CURSOR);
    const char *other = "@@kstat\n5000 0 0 1\n@@kfull\n@@ktail\n"
                        "-- cursor: s=ffffffffffffffffffffffffffffffff;i=ffffff\n";
    CHECK(read_sample(ROW0 ROW1, 0, other, 0) == 0);
    CHECK_STR(mem.cursor, CURSOR);
    CHECK(policy_of("kernel_log_gap", 0) == NULL);
    /* a host line cannot forge a section: "@@" is broken up by the filter on the host, and
     * a hostile cursor in @@kcursor is refused by the parser */
    const char *forged = "@@kstat\n15 15 1 0\n@@kcursor\n-- cursor: s=1';reboot;'\n";
    CHECK(read_sample(ROW0 ROW1, 0, forged, 0) == 0);
    CHECK_STR(mem.cursor, CURSOR);
    /* dmesg: the mark of the last entry read, even when no line was shown */
    reset(2);
    CHECK(read_sample(ROW0 ROW1, 0, "@@kstat\n120000 0 0 0\n@@kmark 4254.197816\n", 0) == 0);
    CHECK(mem.mono > 4254.19 && mem.mono < 4254.2);
    cmd = mon_sample_command(&mem, &pol);
    CHECK(cmd != NULL && strstr(cmd, "dmesg 2>&1 | awk -v m=4254.197816 ") != NULL);
    free(cmd);
}

/* A host taken over: the ECC baseline is the stored reading, not an empty one. */
static void test_takeover_baseline(void)
{
#define ECC_ROW(n)                                                                                \
    UUID0 ", 00000000:18:00.0, 0, 0, 0, 81559, 40, 70.0, 0x0000000000000000, " n ", No, No, No, " \
          "NVIDIA H100 80GB HBM3\n" ROW1
    /* the same count as stored: nothing recorded, nothing isolated */
    reset(2);
    CHECK(mon_memory_seed_ecc(&mem, "{\"" UUID0 "\": 2, \"" UUID1 "\": 0}") == 0);
    CHECK(read_sample(ECC_ROW("2"), 0, "", 0) == 0);
    CHECK(out.isolate[0] == '\0' && policy_of("ecc", 0) == NULL);
    /* growth across the takeover isolates */
    reset(2);
    CHECK(mon_memory_seed_ecc(&mem, "{\"" UUID0 "\": 2}") == 0);
    CHECK(read_sample(ECC_ROW("3"), 0, "", 0) == 0);
    CHECK_STR(policy_of("ecc", 0), "isolate");
    CHECK(strstr(out.isolate, "grew from 2 to 3") != NULL);
    /* without a stored reading the first count is the baseline, as before */
    reset(2);
    CHECK(mon_memory_seed_ecc(&mem, NULL) == 0 && mon_memory_seed_ecc(&mem, "") == 0);
    CHECK(read_sample(ECC_ROW("3"), 0, "", 0) == 0);
    CHECK_STR(policy_of("ecc", 0), "record");
    CHECK(out.isolate[0] == '\0');
    /* malformed baselines: refused whole, or the bad entries skipped */
    reset(2);
    CHECK(mon_memory_seed_ecc(&mem, "[1]") == -1 && mem.necc == 0);
    CHECK(mon_memory_seed_ecc(&mem, "{\"GPU-1'; reboot\": 1, \"" UUID0 "\": -1, \"" UUID1
                                    "\": \"7\"}") == 0);
    CHECK(mem.necc == 0);
    CHECK(read_sample(ECC_ROW("3"), 0, "", 0) == 0);
    CHECK(out.isolate[0] == '\0');
#undef ECC_ROW
}

/* A host that lists more GPUs than its pool's gpu_count + 2: the first gpu_count + 2 are
 * recorded, the excess isolates (gpu_excess); and the ECC memory holds only the GPUs of
 * the latest sample, however many new UUIDs a host reports over time. */
static void test_gpu_cap(void)
{
    char rows[6000] = "";
    size_t len = 0;
    for (int i = 0; i < 8; i++)
        len += (size_t)snprintf(
            rows + len, sizeof rows - len,
            "GPU-a1b2c3d4-0000-1111-2222-3333444455%02d, 00000000:%02X:00.0, 1, 1, "
            "1, 81559, 40, 70.0, 0x0000000000000000, 0, No, No, No, NVIDIA L4\n",
            i, 0x18 + i);
    reset(1); /* an L4 pool of one GPU: at most 3 recorded */
    CHECK(read_sample(rows, 0, "", 0) == 0);
    CHECK(json_array_size(json_object_get(out.doc, "gpus")) == 3);
    CHECK_STR(policy_of("gpu_excess", 0), "isolate");
    CHECK(strstr(out.isolate, "lists 8 GPUs; at most 3 are recorded") != NULL);
    CHECK(mem.necc <= 3);
    /* within the cap: nothing of the kind */
    reset(8);
    CHECK(read_sample(rows, 0, "", 0) == 0);
    CHECK(json_array_size(json_object_get(out.doc, "gpus")) == 8);
    CHECK(policy_of("gpu_excess", 0) == NULL && out.isolate[0] == '\0');
    /* UUID churn: 200 samples of 2 new UUIDs each leave the memory at 2 entries */
    reset(2);
    for (int k = 0; k < 200; k++) {
        char two[600];
        snprintf(two, sizeof two,
                 "GPU-%08x-0000-1111-2222-333344445555, 00000000:18:00.0, 1, 1, 1, 81559, 40, "
                 "70.0, 0x0000000000000000, %d, No, No, No, NVIDIA L4\n"
                 "GPU-%08x-0000-1111-2222-333344445556, 00000000:2A:00.0, 1, 1, 1, 81559, 40, "
                 "70.0, 0x0000000000000000, %d, No, No, No, NVIDIA L4\n",
                 (unsigned)k, k, (unsigned)k, k);
        CHECK(read_sample(two, 0, "", 0) == 0);
    }
    CHECK(mem.necc == 2);
}

static void test_cleanup(void)
{
    mon_outcome_clear(&out);
    mon_memory_clear(&mem);
}

UNIT_SUITE(monitor_sample_tests) = {
    {"monitor sample: a healthy host, its cursor and the next command", test_healthy},
    {"monitor sample: unread values are recorded, never evidence", test_unread_is_not_evidence},
    {"monitor sample: missing GPU, remap failure, growing ECC isolate", test_isolating_evidence},
    {"monitor sample: kernel log Xids by the catalog and the pool's overrides", test_kernel_log},
    {"monitor sample: kernel log pages, the cursor of the last entry read, gaps said",
     test_kernel_log_pages},
    {"monitor sample: a host taken over starts from the stored ECC counts", test_takeover_baseline},
    {"monitor sample: at most the pool's gpu_count + 2 GPUs; the ECC memory bounded", test_gpu_cap},
    {"monitor sample: cleanup", test_cleanup},
    UNIT_END,
};
