/* test_gate_property.c — whatever a host prints, the gate accepts only when every
 * applicable check passed with every value it needs read; every check still records an
 * entry that serialises, and every message is valid UTF-8.
 *
 * A healthy 2× H100 gate (every check applies) is the baseline; each case damages one
 * command's result of one check and runs prov_check_eval + prov_check_entry +
 * plan_gate_verdict over all the checks. Each command knows the offset up to which its
 * output holds something the gate needs (need_end): a cut before it must not accept.
 * Deterministic (xorshift64*, fixed seed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/utf8.h"
#include "planner/gate.h"
#include "provisioner/jobs/gate_checks.h"
#include "tests/unit/unit.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

#define NCHECKS 6
#define ROW(i) \
    i ", NVIDIA H100 80GB HBM3, GPU-" i ", 81559, 550.127.05, 00000000:1" i ":00.0, 0, No, No\n"

static const char query[] = ROW("0") ROW("1");
static const char workload_out[] = "loading model\ntokens_per_second=2400\ndone\n";
static char diag_fixture[8192];

struct base {
    enum prov_check check;
    const char *out[2];
    size_t need_end[2]; /* 0: no rule needs this command's output */
};
static struct base base[NCHECKS + 1]; /* + diagnostics (its own job kind) */

static struct prov_gate gate;
static struct plan_check_outcome healthy[NCHECKS + 1]; /* each check on its healthy output */
static json_t *workload_cmd;

static int setup(void)
{
    unit_h100_gate(&gate);
    if (workload_cmd == NULL)
        workload_cmd = json_pack("[s, s]", "python3", "bench.py");
    gate.workload_command = workload_cmd;
    gate.workload_metric = "tokens_per_second";
    gate.workload_min = 1000;
    gate.observability_url = "http://127.0.0.1:9400/metrics";
    const char *t = unit_h100_table, *g1 = strstr(t, "|   1 ");
    const char *t1 = strstr(unit_h100_topo, "GPU1\t"), *x1 = t1 ? strstr(t1, "X") : NULL;
    const char *secs = strstr(strstr(unit_dd, "copied, 0.01"), "0.01");
    if (!g1 || !x1 || !secs)
        return 0;
    /* GPU 1's block is closed by its "+----+----+----+" border: the third '+' of it */
    const char *border = strchr(strchr(strstr(g1, "\n+") + 2, '+') + 1, '+');
    base[0] = (struct base){
        PROV_CHECK_GPU_INVENTORY, {query, t}, {sizeof query - 2, (size_t)(border - t) + 1}};
    base[1] = (struct base){
        PROV_CHECK_CONTAINER_GPU, {unit_h100_list, NULL}, {strlen(unit_h100_list) - 1, 0}};
    base[2] = (struct base){PROV_CHECK_WORKLOAD,
                            {workload_out, NULL},
                            {(size_t)(strstr(workload_out, "2400") - workload_out) + 4, 0}};
    base[3] = (struct base){
        PROV_CHECK_TOPOLOGY, {unit_h100_topo, ""}, {(size_t)(x1 - unit_h100_topo) + 1, 0}};
    size_t dd_need = (size_t)(secs - unit_dd) + 4;
    base[4] = (struct base){PROV_CHECK_STORAGE, {unit_dd, unit_dd}, {dd_need, dd_need}};
    base[5] = (struct base){PROV_CHECK_OBSERVABILITY, {"204", NULL}, {3, 0}};
    FILE *f = fopen("tests/fixtures/nvidia/dcgmi_diag_r2_pass__H100-80GB-HBM3__1gpu.txt", "rb");
    if (f == NULL)
        return 0;
    size_t n = fread(diag_fixture, 1, sizeof diag_fixture - 1, f);
    fclose(f);
    diag_fixture[n] = '\0';
    /* the closing border proves that no section is missing */
    const char *last = strrchr(diag_fixture, '+');
    base[6] = (struct base){PROV_CHECK_DIAGNOSTICS,
                            {diag_fixture, NULL},
                            {last ? (size_t)(last - diag_fixture) + 1 : n, 0}};
    return 1;
}

struct stats {
    long cases, accepted, failures;
};

/* Judges one check from results r and records it; returns 0 on a broken invariant. */
static int judge(const struct base *b, const struct prov_cmd_result *r,
                 struct plan_check_outcome *oc)
{
    struct prov_check_out o;
    int n = prov_check_ncmds(&gate, b->check);
    prov_check_eval(&gate, b->check, r, n, &o);
    char ev[20000];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(ev + len, sizeof ev - len, "%.8000s", r[i].out ? r[i].out : "");
        len += (size_t)snprintf(ev + len, sizeof ev - len, "[stderr] %.1000s",
                                r[i].err ? r[i].err : "");
    }
    json_t *e = prov_check_entry(prov_check_names[b->check], &o, ev, len, 1.5, 0.25);
    char *dump = e ? json_dumps(e, JSON_COMPACT) : NULL;
    int ok = e != NULL && dump != NULL && utf8_valid(o.message, strlen(o.message)) &&
             strlen(json_string_value(json_object_get(e, "evidence"))) <= GATE_EVIDENCE_MAX;
    free(dump);
    json_decref(e);
    json_decref(o.values);
    *oc = (struct plan_check_outcome){prov_check_names[b->check], o.status, o.hardware_evidence, 1};
    return ok;
}

static int judge_healthy(void)
{
    int ok = 1;
    for (int c = 0; c <= NCHECKS; c++) {
        struct prov_cmd_result good[2] = {{1, 0, base[c].out[0], ""}, {1, 0, base[c].out[1], ""}};
        ok &= judge(&base[c], good, &healthy[c]);
    }
    return ok;
}

/* The verdict with check `which` judged from r (command k damaged) and every other check
 * from its healthy output. may_accept: the damage left everything the gate needs. */
static int gate_case(int which, const struct prov_cmd_result *r, int may_accept, struct stats *st)
{
    struct plan_check_outcome oc[NCHECKS];
    int ok = 1, n = which == NCHECKS ? 1 : NCHECKS;
    for (int c = 0; c < n; c++) {
        if (c == which || which == NCHECKS)
            ok &= judge(&base[which], r, &oc[c]);
        else
            oc[c] = healthy[c];
    }
    char why[400];
    enum plan_verdict v = plan_gate_verdict(oc, n, why, sizeof why);
    st->cases++;
    st->accepted += v == PLAN_ACCEPT;
    if (v == PLAN_ACCEPT && !may_accept)
        ok = 0;
    if (!ok && st->failures++ < 5)
        printf("    # %s, command output %.60s…: %s (%s)\n", prov_check_names[base[which].check],
               r[0].out ? r[0].out : "(null)", plan_verdict_names[v], why);
    return ok;
}

/* Result k of check `which` replaced (the other command keeps its healthy output). */
static int damaged(int which, int k, const char *out, const char *err, int ran, int exit_status,
                   int may_accept, struct stats *st)
{
    const struct base *b = &base[which];
    struct prov_cmd_result r[2] = {{1, 0, b->out[0], ""}, {1, 0, b->out[1], ""}};
    r[k] = (struct prov_cmd_result){ran, exit_status, out, err};
    return gate_case(which, r, may_accept, st);
}

static int ncmds(int which)
{
    return prov_check_ncmds(&gate, base[which].check);
}

static void healthy_baseline(void)
{
    CHECK(setup() && judge_healthy());
    struct stats st = {0};
    for (int w = 0; w <= NCHECKS; w++)
        CHECK(damaged(w, 0, base[w].out[0], "", 1, 0, 1, &st));
    CHECK(st.accepted == NCHECKS + 1); /* each healthy gate accepts */
}

/* Every output cut at every offset; the empty output; a non-zero exit; not run. */
static void cuts_exits_not_run(void)
{
    CHECK(setup() && judge_healthy());
    struct stats st = {0};
    char buf[8192];
    for (int w = 0; w <= NCHECKS; w++) {
        for (int k = 0; k < ncmds(w); k++) {
            const char *out = base[w].out[k];
            size_t len = strlen(out), need = base[w].need_end[k];
            for (size_t cut = 0; cut <= len && cut < sizeof buf; cut++) {
                memcpy(buf, out, cut);
                buf[cut] = '\0';
                CHECK(damaged(w, k, buf, "", 1, 0, cut >= need, &st));
            }
            CHECK(damaged(w, k, out, "Error: something failed\n", 1, 1, need == 0, &st));
            CHECK(damaged(w, k, out, "Error: killed\n", 1, -1, need == 0, &st));
            CHECK(damaged(w, k, "", "not run", 0, -1, need == 0, &st));
        }
    }
    CHECK(st.cases > 3000 && st.failures == 0);
}

/* Multi-byte text cut at every offset, as the failure output and as the output. */
static void multibyte_cuts(void)
{
    CHECK(setup() && judge_healthy());
    struct stats st = {0};
    static const char piece[] = "ошибка: GPU не отвечает — 😀 € 中文 ";
    char text[400] = "", buf[400];
    while (strlen(text) + sizeof piece < sizeof text)
        strcat(text, piece);
    size_t len = strlen(text);
    for (int w = 0; w <= NCHECKS; w++) {
        for (int k = 0; k < ncmds(w); k++) {
            int need = base[w].need_end[k] > 0;
            for (size_t cut = 0; cut <= len; cut += 1 + (w > 0)) {
                memcpy(buf, text, cut);
                buf[cut] = '\0';
                CHECK(damaged(w, k, "", buf, 1, 2, !need, &st));
                CHECK(damaged(w, k, buf, buf, 1, 0, !need, &st));
            }
        }
    }
    CHECK(st.failures == 0);
}

/* Random bytes (any byte, NULs included in the length given), each command. */
static void random_bytes(void)
{
    CHECK(setup() && judge_healthy());
    struct stats st = {0};
    char buf[600];
    for (int round = 0; round < 150; round++) {
        for (int w = 0; w <= NCHECKS; w++) {
            for (int k = 0; k < ncmds(w); k++) {
                size_t n = rnd() % (sizeof buf - 1);
                int mode = (int)(rnd() % 3);
                for (size_t i = 0; i < n; i++) {
                    uint64_t x = rnd();
                    /* raw bytes, printable ASCII with newlines, or high bytes */
                    buf[i] = (char)(mode == 0   ? x & 0xff
                                    : mode == 1 ? (x % 9 == 0 ? '\n' : 32 + x % 95)
                                                : 0x80 | (x & 0x7f));
                }
                buf[n] = '\0';
                CHECK(damaged(w, k, buf, buf, 1, 0, base[w].need_end[k] == 0, &st));
                CHECK(damaged(w, k, buf, buf, 1, (int)(rnd() % 3), base[w].need_end[k] == 0, &st));
            }
        }
    }
    CHECK(st.failures == 0);
}

/* Each inventory field of each GPU read as a marker, empty or garbage, with and without
 * the catalog's not-applicable list. */
static void inventory_fields(void)
{
    CHECK(setup() && judge_healthy());
    struct stats st = {0};
    static const char *const cells[] = {"[N/A]",
                                        "[Not Supported]",
                                        "[Unknown Error]",
                                        "",
                                        " ",
                                        "N/A",
                                        "x",
                                        "-1",
                                        "1.5",
                                        "ERR!",
                                        "\xff\xfe",
                                        "[GPU requires reset]",
                                        "[Requested functionality has been deprecated]"};
    static const char *const na_lists[] = {NULL, "retired_pages.pending",
                                           "memory.total,ecc.errors.uncorrected.volatile.total,"
                                           "retired_pages.pending,remapped_rows.pending,"
                                           "name,uuid,index,driver_version"};
    for (size_t na = 0; na < sizeof na_lists / sizeof na_lists[0]; na++) {
        for (int row = 0; row < 2; row++) {
            for (int f = 0; f < 9; f++) {
                for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
                    /* rebuild the two rows with one cell replaced */
                    char rows[800] = "", cell[80];
                    for (int r = 0; r < 2; r++) {
                        char line[300], *save = NULL;
                        snprintf(line, sizeof line, "%s", r ? ROW("1") : ROW("0"));
                        line[strcspn(line, "\n")] = '\0';
                        int i = 0;
                        for (char *tok = strtok_r(line, ",", &save); tok;
                             tok = strtok_r(NULL, ",", &save), i++) {
                            snprintf(cell, sizeof cell, "%s", r == row && i == f ? cells[c] : tok);
                            size_t used = strlen(rows);
                            snprintf(rows + used, sizeof rows - used, "%s%s", i ? "," : "", cell);
                        }
                        strcat(rows, "\n");
                    }
                    gate.na_fields = na_lists[na];
                    int marker_na = c <= 1 || c == 5; /* [N/A], [Not Supported], N/A */
                    int may = f == 5 || (marker_na && na_lists[na] &&
                                         strstr(na_lists[na], prov_inv_fields[f]) != NULL);
                    CHECK(damaged(0, 0, rows, "", 1, 0, may, &st));
                }
            }
        }
    }
    gate.na_fields = NULL;
    CHECK(st.cases == 3 * 2 * 9 * 13 && st.failures == 0);
    CHECK(st.accepted > 0); /* pci.bus_id and the allowed N/As do accept */
}

/* A check whose entry was lost, or that timed out, never accepts. */
static void lost_and_timeouts(void)
{
    CHECK(setup() && judge_healthy());
    for (int lost = 0; lost < NCHECKS; lost++) {
        for (int mode = 0; mode < 3; mode++) {
            struct plan_check_outcome oc[NCHECKS];
            for (int c = 0; c < NCHECKS; c++)
                oc[c] = (struct plan_check_outcome){prov_check_names[base[c].check],
                                                    PLAN_CHECK_PASS, 0, 1};
            if (mode == 0)
                oc[lost].recorded = 0;
            else if (mode == 1)
                oc[lost].status = PLAN_CHECK_TIMEOUT;
            else
                oc[lost].status = (enum plan_check_status)(5 + rnd() % 1000);
            char why[400];
            CHECK(plan_gate_verdict(oc, NCHECKS, why, sizeof why) == PLAN_INVESTIGATE);
            CHECK(strstr(why, prov_check_names[base[lost].check]) != NULL);
        }
    }
}

UNIT_SUITE(gate_property_tests) = {
    {"gate property: the healthy 2×H100 baseline accepts", healthy_baseline},
    {"gate property: outputs cut at every offset, empty, non-zero exit, not run",
     cuts_exits_not_run},
    {"gate property: multi-byte text cut at every offset, as output and as error", multibyte_cuts},
    {"gate property: random bytes in every command's output", random_bytes},
    {"gate property: every inventory field of every GPU unreadable, with and without N/A lists",
     inventory_fields},
    {"gate property: a lost entry, a timeout or a foreign status never accepts", lost_and_timeouts},
    UNIT_END,
};
