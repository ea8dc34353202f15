/* test_gate_storage.c — the storage reference: dd's and fio's parsers over the captures in
 * tests/fixtures/perf (SOURCES.md §4), and the storage_throughput check's commands and
 * judgement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/jobs/gate_checks.h"
#include "provisioner/jobs/gate_storage.h"
#include "provisioner/jobs/gate_targeted.h"
#include "provisioner/parse/parse_storage.h"
#include "tests/unit/unit.h"

#define PERF "tests/fixtures/perf/"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int near(double a, double b, double rel)
{
    return fabs(a - b) <= fabs(b) * rel;
}

static int dd_file(const char *name, struct prov_dd_summary *s)
{
    char path[300];
    size_t len;
    snprintf(path, sizeof path, PERF "%s", name);
    char *t = slurp(path, &len);
    int rc = t ? prov_parse_dd(t, len, s) : -2;
    free(t);
    return rc;
}

static void dd_fixtures(void)
{
    struct prov_dd_summary s;
    CHECK(dd_file("dd_read_1GiB_bs512k__NVMe-WD-SN750__C-locale.txt", &s) == 0);
    CHECK(s.bytes == 1073741824.0 && s.seconds == 0.497434 && s.lines == 1);
    CHECK(near(s.mbps, 1073741824.0 / 0.497434 / 1e6, 1e-9) && near(s.printed_mbps, 2200, 1e-9));
    CHECK(dd_file("dd_write_1GiB_bs512k__NVMe-WD-SN750__C-locale.txt", &s) == 0);
    CHECK(near(s.mbps, 1312.67, 1e-3));
    CHECK(dd_file("dd_write_oflag_direct_1GiB__NFS__C-locale_slow.txt", &s) == 0);
    CHECK(near(s.mbps, 3.50, 0.01) && near(s.printed_mbps, 3.5, 1e-9));
    /* kB/s */
    CHECK(dd_file("dd_write_oflag_direct_1GiB__gocryptfs-on-NFS__C-locale_kBps.txt", &s) == 0);
    CHECK(near(s.printed_mbps, 0.846, 1e-9) && near(s.mbps, 0.8462, 1e-3));
    /* comma decimals, an integer time */
    CHECK(dd_file("dd_status_progress_line__gocryptfs-on-NFS__comma-decimal-locale.txt", &s) == 0);
    CHECK(s.bytes == 555319296.0 && s.seconds == 11 && near(s.printed_mbps, 50.5, 1e-9));
    /* no parenthetical, an exponent */
    CHECK(dd_file("dd_last_line_tiny_copy__coreutils-9.4__C-locale.txt", &s) == 0);
    CHECK(s.bytes == 3 && near(s.seconds, 9.44e-05, 1e-9) && near(s.printed_mbps, 0.0318, 1e-9));
}

static void dd_forms(void)
{
    struct prov_dd_summary s;
    /* status=progress updates end in \r; the final summary wins */
    const char *prog = "104857600 bytes (105 MB, 100 MiB) copied, 1 s, 105 MB/s\r"
                       "209715200 bytes (210 MB, 200 MiB) copied, 2 s, 105 MB/s\r"
                       "256+0 records in\n256+0 records out\n"
                       "268435456 bytes (268 MB, 256 MiB) copied, 2.5 s, 107 MB/s\n";
    CHECK(prov_parse_dd(prog, strlen(prog), &s) == 0 && s.lines == 3);
    CHECK(s.bytes == 268435456.0 && near(s.mbps, 107.374, 1e-4));
    /* localized wording (de_DE) and IEC units */
    const char *de = "1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,8 s, 1,3 GB/s\n";
    CHECK(prov_parse_dd(de, strlen(de), &s) == 0 && s.seconds == 0.8 &&
          near(s.printed_mbps, 1300, 1e-9));
    const char *iec = "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2 s, 512 MiB/s\n";
    CHECK(prov_parse_dd(iec, strlen(iec), &s) == 0 && near(s.printed_mbps, 536.870912, 1e-9));
    /* pre-8.24 form */
    const char *old = "1073741824 bytes (1.1 GB) copied, 4 s, 268 MB/s\n";
    CHECK(prov_parse_dd(old, strlen(old), &s) == 0 && near(s.mbps, 268.435456, 1e-9));
    /* a zero time: the printed rate */
    const char *zero = "512 bytes copied, 0 s, 2.0 MB/s\n";
    CHECK(prov_parse_dd(zero, strlen(zero), &s) == 0 && s.mbps == 2.0);
    /* not summaries */
    const char *bad[] = {"",
                         "dd: failed to open '/x': Invalid argument\n",
                         "2048+0 records in\n2048+0 records out\n",
                         "1073741824 bytes copied, s, 1 GB/s\n",
                         "1073741824 bytes copied, 1 s, 1 parsecs\n",
                         "bytes (1 GB) copied, 1 s, 1 GB/s\n",
                         "-5 bytes copied, 1 s, 1 GB/s\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(prov_parse_dd(bad[i], strlen(bad[i]), &s) == -1 && s.bytes == 0);
    /* nothing past len is read */
    CHECK(prov_parse_dd(iec, 20, &s) == -1);
}

static int fio_file(const char *name, const char *dir, struct prov_fio_summary *s, char *why)
{
    char path[300];
    size_t len;
    snprintf(path, sizeof path, PERF "%s", name);
    char *t = slurp(path, &len);
    int rc = t ? prov_parse_fio(t, len, dir, s, why, 200) : -2;
    free(t);
    return rc;
}

static void fio_fixtures(void)
{
    struct prov_fio_summary s;
    char why[200];
    /* 3.39: bw_bytes */
    CHECK(fio_file("fio_json_v3.39_librbd_randread_1M__Ceph-RBD-network.json", "read", &s, why) ==
          0);
    CHECK(s.jobs == 1 && s.mbps == 496.965223 && s.bytes == 29819404288.0 && s.runtime_ms == 60003);
    CHECK_STR(s.version, "fio-3.39-30-g58818");
    CHECK(fio_file("fio_json_v3.39_librbd_randread_1M__Ceph-RBD-network.json", "write", &s, why) ==
          -1);
    /* 3.1: no bw_bytes (bw in KiB/s), io_bytes in bytes */
    CHECK(fio_file("fio_json_v3.1_seqread_4k_qd1__USB-floppy-sde.json", "read", &s, why) == 0);
    CHECK(near(s.mbps, 12 * 1024 / 1e6, 1e-9) && s.bytes == 1474560.0);
    /* 2.1.4: io_bytes in KiB, duplicate keys; the jobs that read are summed */
    CHECK(fio_file("fio_json_v2.1.4_seqwrite_seqread_randwrite_randread__PKB-sample.json", "read",
                   &s, why) == 0);
    CHECK(s.jobs == 3 && s.bytes == (361984.0 + 36244 * 2) * 1024);
    CHECK(near(s.mbps, (129836.0 + 1269 + 1292) * 1024 / 1e6, 1e-9));
    /* 2.17 */
    CHECK(fio_file("fio_json_v2.17_randread_randwrite_16k__GCP-PersistentDisk-network.json",
                   "write", &s, why) == 0);
    CHECK(s.jobs == 1 && near(s.mbps, 39312.0 * 1024 / 1e6, 1e-9));
    /* a note before the JSON, an error, garbage */
    const char *noted = "fio: note: both iodepth >= 1 and synchronous I/O engine\n"
                        "{\"fio version\": \"fio-3.33\", \"jobs\": [{\"error\": 0, \"read\": "
                        "{\"io_bytes\": 1048576, \"io_kbytes\": 1024, \"bw_bytes\": 2000000, "
                        "\"bw\": 1953, \"runtime\": 524}}]}\ntrailing";
    CHECK(prov_parse_fio(noted, strlen(noted), "read", &s, why, sizeof why) == 0 && s.mbps == 2.0);
    const char *err = "{\"jobs\": [{\"error\": 5, \"read\": {\"io_bytes\": 1, \"bw\": 1}}]}";
    CHECK(prov_parse_fio(err, strlen(err), "read", &s, why, sizeof why) == -1 &&
          strstr(why, "error 5"));
    CHECK(prov_parse_fio("{\"jobs\": [", 10, "read", &s, why, sizeof why) == -1);
    CHECK(prov_parse_fio("nothing", 7, "read", &s, why, sizeof why) == -1 && s.jobs == 0);
}

/* ---- the check ---- */

static void sgate(struct prov_gate *g)
{
    memset(g, 0, sizeof *g);
    g->durable_path = "/data";
    g->scratch_path = "/scratch";
    g->storage = (struct prov_storage_ref){1, 1024, 256, NULL, "auto", 1000, 100, 0, 0};
}

#define READ_DD(secs)                                                             \
    "gpufleet-storage: tool=dd direct=1\n1024+0 records in\n1024+0 records out\n" \
    "1073741824 bytes (1.1 GB, 1.0 GiB) copied, " secs " s, 1.1 GB/s\n"
#define WRITE_DD                                                                \
    "gpufleet-storage: tool=dd direct=1\n256+0 records in\n256+0 records out\n" \
    "268435456 bytes (268 MB, 256 MiB) copied, 0.5 s, 537 MB/s\n"

static void judge(const struct prov_gate *g, const char *rd, int rd_rc, const char *wr,
                  struct prov_check_out *o)
{
    struct prov_cmd_result r[2] = {{1, rd_rc, rd, ""}, {1, 0, wr, ""}};
    prov_check_eval(g, PROV_CHECK_STORAGE_THROUGHPUT, r, 2, o);
}

static void check_judge(void)
{
    struct prov_gate g;
    struct prov_check_out o;
    sgate(&g);
    judge(&g, READ_DD("0.5"), 0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_PASS && !o.hardware_evidence);
    CHECK(near(json_real_value(json_object_get(o.values, "read_mbps")), 2147.483648, 1e-9));
    CHECK(json_integer_value(json_object_get(o.values, "read_bytes")) == 1073741824);
    CHECK_STR(json_string_value(json_object_get(o.values, "read_tool")), "dd");
    CHECK_STR(json_string_value(json_object_get(o.values, "read_source")), "probe");
    CHECK_STR(json_string_value(json_object_get(o.values, "read_path")),
              "/data/.gpufleet-storage-probe");
    CHECK(json_is_true(json_object_get(o.values, "direct")));
    CHECK(json_real_value(json_object_get(o.values, "min_read_mbps")) == 1000);
    json_decref(o.values);
    /* 180 MB/s against 1,000: fail, with the rate */
    judge(&g, READ_DD("5.965"), 0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "read 180 MB/s") &&
          strstr(o.message, "below the pool's minimum of 1000 MB/s"));
    json_decref(o.values);
    /* O_DIRECT refused: the fallback's rate, never called direct */
    judge(&g,
          "gpufleet-storage: tool=dd direct=1\ndd: failed to open 'x': Invalid argument\n"
          "gpufleet-storage: tool=dd direct=0\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.2 s, "
          "5.4 GB/s\n",
          0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_PASS && json_is_false(json_object_get(o.values, "direct")));
    CHECK(strstr(o.message, "not a direct rate") != NULL);
    json_decref(o.values);
    /* the read failed (I/O error): fail, no rate recorded */
    judge(&g, "gpufleet-storage: tool=dd direct=1\ndd: error reading 'x': Input/output error\n", 1,
          WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && json_object_get(o.values, "read_mbps") == NULL);
    CHECK(json_object_get(o.values, "write_mbps") != NULL);
    json_decref(o.values);
    /* exit 0, unreadable: fail closed */
    judge(&g, "gpufleet-storage: tool=dd direct=1\nwhatever\n", 0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "no summary line"));
    json_decref(o.values);
    /* fio asked for and absent: skip, or fail when required */
    judge(&g, "gpufleet-storage: missing=fio\n", 6, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_SKIP && strstr(o.message, "has none"));
    json_decref(o.values);
    g.storage.require = 1;
    judge(&g, "gpufleet-storage: missing=fio\n", 6, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_FAIL);
    json_decref(o.values);
    /* fio's JSON */
    judge(&g,
          "gpufleet-storage: tool=fio direct=1\n{\"fio version\": \"fio-3.33\", \"jobs\": "
          "[{\"error\": 0, \"read\": {\"io_bytes\": 1073741824, \"io_kbytes\": 1048576, "
          "\"bw_bytes\": 1500000000, \"bw\": 1464843, \"runtime\": 716}}]}\n",
          0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_PASS &&
          json_real_value(json_object_get(o.values, "read_mbps")) == 1500);
    CHECK_STR(json_string_value(json_object_get(o.values, "read_tool")), "fio");
    json_decref(o.values);
    /* a slow write */
    g.storage.min_write_mbps = 600;
    judge(&g, READ_DD("0.5"), 0, WRITE_DD, &o);
    CHECK(o.status == PLAN_CHECK_FAIL && strstr(o.message, "minimum of 600"));
    json_decref(o.values);
}

static void check_commands(void)
{
    struct prov_gate g;
    char why[100];
    sgate(&g);
    CHECK(gate_storage_applies(&g, why, sizeof why));
    g.storage.enabled = 0;
    CHECK(!gate_storage_applies(&g, why, sizeof why) && strstr(why, "gate.storage"));
    g.storage.enabled = 1;
    char *c = gate_storage_cmd(&g, 0);
    CHECK(c && strstr(c, "f='/data/.gpufleet-storage-probe'; n='1024'; src='probe'; tool='auto'"));
    CHECK(strstr(c, "iflag=direct") && strstr(c, "stat -c %s"));
    free(c);
    c = gate_storage_cmd(&g, 1);
    CHECK(c && strstr(c, "f='/scratch/.gpufleet-storage-write'; n='256'") &&
          strstr(c, "oflag=direct conv=fsync"));
    free(c);
    g.storage.artifact = "models/llama-3-70b/model-00001.safetensors";
    c = gate_storage_cmd(&g, 0);
    CHECK(c && strstr(c, "f='/data/models/llama-3-70b/model-00001.safetensors'") &&
          strstr(c, "src='artifact'"));
    free(c);
    const char *bad[] = {"../etc/shadow", "/etc/shadow", "a/../b", "a//b", "a/", "./a",
                         "a b",           "a;b",         "$(x)",   "a'b",  ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g.storage.artifact = bad[i];
        CHECK(!prov_valid_rel_path(bad[i]) && gate_storage_cmd(&g, 0) == NULL);
    }
    g.storage.artifact = NULL;
    g.storage.tool = "sh";
    CHECK(gate_storage_cmd(&g, 0) == NULL);
    g.storage.tool = "auto";
    /* timeouts by the data: 60 s + the data at 50 MB/s, the read counted twice */
    CHECK(gate_storage_timeout(&g, 0) == 60 + 43 && gate_storage_timeout(&g, 1) == 60 + 6);
    g.storage.read_size_mib = 1048576;
    CHECK(gate_storage_timeout(&g, 0) == GATE_STORAGE_TIMEOUT_MAX_S);
    g.storage.timeout_s = 900;
    CHECK(gate_storage_timeout(&g, 0) == 900);
    CHECK(prov_check_cmd_class(&g, PROV_CHECK_STORAGE_THROUGHPUT, 0) == PROV_CMD_WORKLOAD);
    CHECK(prov_check_ncmds(&g, PROV_CHECK_STORAGE_THROUGHPUT) == 2);
}

static void check_load(void)
{
    struct prov_storage_ref s;
    json_t *o = json_pack("{s:i, s:s, s:f, s:b}", "read_size_mib", 4, "artifact", "m/x.bin",
                          "min_read_mbps", 1000.0, "require", 1);
    prov_storage_ref_load(&s, o, 0);
    CHECK(s.enabled && s.read_size_mib == 16 && s.write_size_mib == 1024 && s.require);
    CHECK_STR(s.artifact, "m/x.bin");
    CHECK_STR(s.tool, "auto");
    CHECK(s.min_read_mbps == 1000 && s.min_write_mbps == 0);
    json_decref(o);
    prov_storage_ref_load(&s, NULL, 0);
    CHECK(!s.enabled && s.read_size_mib == 1024);
    prov_storage_ref_load(&s, NULL, 1);
    CHECK(s.enabled);
}

UNIT_SUITE(gate_storage_tests) = {
    {"dd: the captured summaries (locales, units, tiny copies)", dd_fixtures},
    {"dd: progress lines, wording, units, refusals", dd_forms},
    {"fio: the captured JSON of four versions", fio_fixtures},
    {"storage_throughput: judgement", check_judge},
    {"storage_throughput: commands, artifact validation, timeouts", check_commands},
    {"storage_throughput: the pool's gate.storage", check_load},
    UNIT_END,
};

/* ---- targeted diagnostics ---- */

static void targeted_parse(void)
{
    struct prov_targeted t;
    CHECK(prov_targeted_parse("[\"workload\",\"storage\",\"bandwidth\"]", &t) == 0 && t.n == 3);
    CHECK_STR(t.test[0], "workload");
    CHECK(t.id[0] == PROV_CHECK_WORKLOAD && t.id[1] == PROV_CHECK_STORAGE_THROUGHPUT);
    CHECK_STR(t.check[1], "storage_throughput");
    CHECK_STR(t.check[2], "bandwidth"); /* resolved by name: -1 until the check exists */
    int bw = -1;
    for (int c = 0; c < PROV_CHECK__COUNT; c++)
        if (!strcmp(prov_check_names[c], "bandwidth"))
            bw = c;
    CHECK(t.id[2] == bw);
    const char *bad[] = {NULL,
                         "",
                         "[]",
                         "[\"disk\"]",
                         "{\"storage\":1}",
                         "[1]",
                         "[\"storage\",\"storage\",\"storage\",\"storage\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(prov_targeted_parse(bad[i], &t) == -1 && t.n == 0);
}

static void targeted_compare(void)
{
    json_t *prev = json_loads(
        "{\"storage_throughput\": {\"gate_run_id\": \"g1\", \"finished_at\": \"t\", \"stack_id\": "
        "\"s1\", \"values\": {\"read_mbps\": 200.0, \"write_mbps\": 100.0, \"read_bytes\": 1024, "
        "\"read_tool\": \"dd\", \"read_source\": \"probe\", \"read_path\": \"/d/p\", \"direct\": "
        "true, \"write_bytes\": 16, \"min_read_mbps\": 1000}},"
        " \"workload\": {\"gate_run_id\": \"g2\", \"stack_id\": \"s1\", \"values\": {\"metric\": "
        "\"tokens_per_second\", \"value\": 2000, \"min\": 1000}}}",
        0, NULL);
    CHECK(prev != NULL);
    /* same conditions: comparable, the change in % */
    json_t *now = json_loads("{\"read_mbps\": 180.0, \"write_mbps\": 100.0, \"read_bytes\": 1024, "
                             "\"read_tool\": \"dd\", \"read_source\": \"probe\", \"read_path\": "
                             "\"/d/p\", \"direct\": true, \"write_bytes\": 16, "
                             "\"min_read_mbps\": 1000}",
                             0, NULL);
    json_t *c = prov_targeted_compare("storage", "storage_throughput", now, prev, "s2", NULL);
    CHECK(c != NULL && json_is_true(json_object_get(c, "comparable")));
    CHECK(json_array_size(json_object_get(c, "differing")) == 0);
    CHECK(json_is_null(json_object_get(c, "changed")));
    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "previous"), "gate_run_id")),
              "g1");
    json_t *rd = json_object_get(json_object_get(c, "values"), "read_mbps");
    CHECK(near(json_real_value(json_object_get(rd, "delta_pct")), -10.0, 1e-9));
    CHECK(json_real_value(json_object_get(rd, "previous")) == 200.0);
    CHECK(json_number_value(json_object_get(json_object_get(c, "pool"), "min_read_mbps")) == 1000);
    CHECK(json_object_get(json_object_get(c, "conditions"), "stack_id") == NULL);
    json_decref(c);
    /* one parameter changed: comparable, named */
    json_object_set_new(now, "read_tool", json_string("fio"));
    c = prov_targeted_compare("storage", "storage_throughput", now, prev, "s2", NULL);
    CHECK(json_is_true(json_object_get(c, "comparable")));
    CHECK_STR(json_string_value(json_object_get(c, "changed")), "read_tool");
    json_decref(c);
    /* two: not comparable */
    json_object_set_new(now, "read_bytes", json_integer(2048));
    c = prov_targeted_compare("storage", "storage_throughput", now, prev, "s2", NULL);
    CHECK(json_is_false(json_object_get(c, "comparable")) &&
          json_array_size(json_object_get(c, "differing")) == 2);
    CHECK(strstr(json_string_value(json_object_get(c, "summary")), "not comparable") != NULL);
    json_decref(c);
    json_decref(now);
    /* the workload: the stack is a condition (a new stack is the one parameter changed) */
    now =
        json_loads("{\"metric\": \"tokens_per_second\", \"value\": 2400, \"min\": 1000}", 0, NULL);
    json_t *pb = json_loads("{\"matched\": 3, \"reference\": 3000, \"metric\": "
                            "\"tokens_per_second\", \"baselines\": [\"b1\", \"b2\", \"b3\"]}",
                            0, NULL);
    c = prov_targeted_compare("workload", "workload", now, prev, "s2", pb);
    json_decref(pb);
    json_t *bl = json_object_get(c, "baselines");
    CHECK(json_integer_value(json_object_get(bl, "matched")) == 3);
    CHECK(near(json_real_value(json_object_get(bl, "delta_pct")), -20.0, 1e-9));
    CHECK(json_array_size(json_object_get(bl, "baselines")) == 3);
    CHECK(json_is_true(json_object_get(c, "comparable")));
    CHECK_STR(json_string_value(json_object_get(c, "changed")), "stack_id");
    CHECK(near(json_real_value(json_object_get(
                   json_object_get(json_object_get(c, "values"), "value"), "delta_pct")),
               20.0, 1e-9));
    json_decref(c);
    /* nothing to compare with, or nothing measured */
    c = prov_targeted_compare("workload", "workload", now, NULL, "s2", NULL);
    CHECK(json_is_null(json_object_get(c, "previous")) &&
          json_is_false(json_object_get(c, "comparable")));
    CHECK(json_is_null(json_object_get(c, "baselines")));
    json_decref(c);
    c = prov_targeted_compare("bandwidth", "bandwidth", NULL, prev, NULL, NULL);
    CHECK(c && json_is_false(json_object_get(c, "comparable")));
    json_decref(c);
    json_decref(now);
    json_decref(prev);
}

UNIT_SUITE(gate_targeted_tests) = {
    {"targeted diagnostics: tests to gate checks", targeted_parse},
    {"targeted diagnostics: the comparison with the accepted gate", targeted_compare},
    UNIT_END,
};
