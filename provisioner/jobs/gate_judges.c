/* gate_judges.c — the judges of container_gpu, workload, topology, storage,
 * observability and diagnostics. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/utf8.h"
#include "provisioner/jobs/gate_judges.h"
#include "provisioner/parse/parse.h"

/* GPU lines of `nvidia-smi -L` that end with their "(UUID: …)": a cut line does not. */
static size_t list_complete_lines(const char *t)
{
    size_t n = 0;
    for (const char *l = t; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        const char *s = l + strspn(l, " \t");
        size_t len = strcspn(s, "\n");
        while (len > 0 && isspace((unsigned char)s[len - 1]))
            len--;
        n += len > 4 && strncmp(s, "GPU ", 4) == 0 && s[len - 1] == ')' &&
             memmem(s, len, "(UUID: ", 7) != NULL;
    }
    return n;
}

void gate_eval_container(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o)
{
    char line[200];
    if (!r->ran || r->exit_status != 0) {
        prov_ctr_error_t e;
        const char *t = gate_text_of(r);
        prov_ctr_classify(t, strlen(t), r->ran ? r->exit_status : -1, &e);
        o->values = json_pack("{s:s}", "reason", prov_ctr_reason_name(e.reason));
        gate_set(o, PLAN_CHECK_FAIL, 0, "a container cannot use the GPUs (%s): %s",
                 prov_ctr_reason_name(e.reason),
                 gate_quote(e.matched[0] ? e.matched : t, line, sizeof line));
        return;
    }
    prov_list_t l;
    prov_err_t perr;
    const char *out = gate_out_of(r);
    if (prov_list_parse(out, strlen(out), &l, &perr) != 0) {
        o->values = json_pack("{s:n, s:i}", "gpus_seen", "expected_gpus", g->expected_gpus);
        char first[100];
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "the container's nvidia-smi -L output could not be read (%s): %s",
                 gate_quote(perr.msg, line, sizeof line), gate_quote(out, first, sizeof first));
        return;
    }
    size_t n = l.ngpus, complete = list_complete_lines(out);
    prov_list_free(&l);
    o->values =
        json_pack("{s:I, s:i}", "gpus_seen", (json_int_t)n, "expected_gpus", g->expected_gpus);
    if (complete != n)
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "the container's nvidia-smi -L lists %zu GPU(s), %zu of them without a readable "
                 "(UUID: …)",
                 n, n - (complete < n ? complete : n));
    else if ((int)n != g->expected_gpus)
        gate_set(o, PLAN_CHECK_FAIL, 0, "a container from the pinned image sees %zu of %d GPU(s)",
                 n, g->expected_gpus);
    else
        gate_set(o, PLAN_CHECK_PASS, 0, "a container from the pinned image sees %zu of %d GPU(s)",
                 n, g->expected_gpus);
}

/* Finds "<metric>=<number>" or "<metric>: <number>" in the output. */
static int find_metric(const char *out, const char *metric, double *v)
{
    size_t n = strlen(metric);
    for (const char *p = out; (p = strstr(p, metric)) != NULL; p += n) {
        if (p != out && p[-1] != '\n' && p[-1] != ' ' && p[-1] != '\t')
            continue;
        const char *q = p + n;
        while (*q == ' ')
            q++;
        if (*q != '=' && *q != ':')
            continue;
        q++;
        char *end;
        double d = strtod(q, &end);
        if (end != q && isfinite(d)) {
            *v = d;
            return 1;
        }
    }
    return 0;
}

void gate_eval_workload(const struct prov_gate *g, const struct prov_cmd_result *r,
                        struct prov_check_out *o)
{
    char line[200];
    const char *metric =
        g->workload_metric && *g->workload_metric ? g->workload_metric : "throughput";
    if (!r->ran || r->exit_status != 0) {
        gate_set(o, PLAN_CHECK_FAIL, 0, "the workload failed: %s",
                 gate_quote(gate_text_of(r), line, sizeof line));
        return;
    }
    double v;
    if (!find_metric(gate_out_of(r), metric, &v)) {
        o->values = json_pack("{s:o, s:n}", "metric", gate_jtext(metric), "value");
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "the workload did not report %s (expected a line %s=<number>)", metric, metric);
        return;
    }
    o->values = json_pack("{s:o, s:f, s:f}", "metric", gate_jtext(metric), "value", v, "min",
                          isfinite(g->workload_min) ? g->workload_min : 0.0);
    if (v >= g->workload_min)
        gate_set(o, PLAN_CHECK_PASS, 0, "%s = %g (minimum %g)", metric, v, g->workload_min);
    else
        gate_set(o, PLAN_CHECK_FAIL, 0, "below threshold: %s = %g (minimum %g)", metric, v,
                 g->workload_min);
}

/* A link class of `nvidia-smi topo -m` between two GPUs. */
static int link_known(const char *l)
{
    static const char *const classes[] = {"SYS", "NODE", "PHB", "PXB", "PIX", "SOC"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(l, classes[i]) == 0)
            return 1;
    return strncmp(l, "NV", 2) == 0 && l[2] != '\0' && strspn(l + 2, "0123456789") == strlen(l + 2);
}

void gate_eval_topology(const struct prov_gate *g, const struct prov_cmd_result *r,
                        struct prov_check_out *o)
{
    char line[200];
    prov_topo_t t;
    prov_err_t perr;
    const char *out = gate_out_of(&r[0]);
    if (!r[0].ran || r[0].exit_status != 0 || prov_topo_parse(out, strlen(out), &t, &perr) != 0) {
        gate_quote(r[0].ran && r[0].exit_status == 0 ? perr.msg : gate_text_of(&r[0]), line,
                   sizeof line);
        gate_set(o, PLAN_CHECK_FAIL, 0, "nvidia-smi topo -m failed or is unreadable: %s", line);
        return;
    }
    json_t *nvlink = json_null();
    prov_nvlink_t nl;
    const char *nvout = gate_out_of(&r[1]);
    if (r[1].ran && r[1].exit_status == 0 &&
        prov_nvlink_parse(nvout, strlen(nvout), &nl, &perr) == 0) {
        json_t *j = prov_nvlink_to_json(&nl);
        if (j != NULL) {
            json_decref(nvlink);
            nvlink = j;
        }
        prov_nvlink_free(&nl);
    }
    const char *expected = g->link_class && *g->link_class ? g->link_class : "any";
    size_t bad = 0, unread = 0, ba = 0, bb = 0, ua = 0, ub = 0;
    for (size_t a = 0; a < t.ngpus && !t.p2p; a++) {
        for (size_t b = a + 1; b < t.ngpus; b++) {
            const char *ab = prov_topo_gpu_link(&t, a, b), *ba_ = prov_topo_gpu_link(&t, b, a);
            if (!link_known(ab) || strcmp(ab, ba_) != 0) {
                if (unread++ == 0) {
                    ua = a;
                    ub = b;
                }
            } else if (!prov_link_matches(ab, expected) && bad++ == 0) {
                ba = a;
                bb = b;
            }
        }
    }
    o->values = json_pack("{s:o, s:o, s:I, s:I, s:i, s:o}", "matrix", prov_topo_to_json(&t),
                          "expected_link", gate_jtext(expected), "failing_pairs", (json_int_t)bad,
                          "unreadable_pairs", (json_int_t)unread, "min_nvlinks",
                          prov_topo_min_nvlinks(&t), "nvlink", nvlink);
    char l1[PROV_LINK_MAX * 3 + 8], l2[PROV_LINK_MAX * 3 + 8];
    if (t.p2p) {
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "nvidia-smi topo -m printed a P2P status matrix, not link "
                 "classes: the links were not read");
    } else if ((int)t.ngpus != g->expected_gpus) {
        gate_set(o, PLAN_CHECK_FAIL, 1, "the topology shows %zu GPU(s), expected %d", t.ngpus,
                 g->expected_gpus);
    } else if (bad > 0) {
        gate_set(o, PLAN_CHECK_FAIL, 1,
                 "degraded link: %zu GPU pair(s) below %s, first GPU%zu-GPU%zu: %s", bad, expected,
                 ba, bb, gate_quote(prov_topo_gpu_link(&t, ba, bb), l1, sizeof l1));
    } else if (unread > 0) {
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "%zu GPU pair(s) without a readable link class, first GPU%zu-GPU%zu read %s "
                 "(GPU%zu-GPU%zu %s)",
                 unread, ua, ub, gate_quote(prov_topo_gpu_link(&t, ua, ub), l1, sizeof l1), ub, ua,
                 gate_quote(prov_topo_gpu_link(&t, ub, ua), l2, sizeof l2));
    } else {
        gate_set(o, PLAN_CHECK_PASS, 0, "every GPU pair meets %s", expected);
    }
    prov_topo_free(&t);
}

/* dd prints "16777216 bytes (17 MB, 16 MiB) copied, 0.0123 s, 1.4 GB/s"; rate[k] is the
 * k-th such line's MB/s (bytes / seconds), NAN when its numbers do not read. Returns the
 * number of lines seen (at most 2). */
static int dd_rates(const char *out, double rate[2])
{
    int n = 0;
    for (const char *p = out; n < 2 && (p = strstr(p, " bytes")) != NULL; p++) {
        const char *s = p;
        while (s > out && s[-1] >= '0' && s[-1] <= '9')
            s--;
        const char *c = strstr(p, "copied, ");
        if (c == NULL)
            break;
        char *end;
        double bytes = s < p ? strtod(s, NULL) : 0, secs = strtod(c + 8, &end);
        rate[n++] =
            bytes > 0 && end != c + 8 && isfinite(secs) && secs > 0 ? bytes / secs / 1e6 : NAN;
        p = c;
    }
    return n;
}

static json_t *jrate(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

void gate_eval_storage(const struct prov_gate *g, const struct prov_cmd_result *r,
                       struct prov_check_out *o)
{
    static const char zeros16m[] =
        "080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b719643e";
    const char *paths[2] = {g->durable_path ? g->durable_path : "(none)",
                            g->scratch_path ? g->scratch_path : "(none)"};
    json_t *vals = json_object();
    int failed = 0;
    char msg[1000] = "";
    for (int i = 0; i < 2; i++) {
        double rate[2] = {NAN, NAN};
        const char *out = gate_out_of(&r[i]);
        int ok = r[i].ran && r[i].exit_status == 0;
        int sum_ok = strstr(out, zeros16m) != NULL;
        dd_rates(out, rate);
        int rates_ok = isfinite(rate[0]) && isfinite(rate[1]);
        json_object_set_new(vals, i == 0 ? "durable" : "scratch",
                            json_pack("{s:o, s:o, s:o, s:b}", "path", gate_jtext(paths[i]),
                                      "write_fsync_mbps", jrate(rate[0]), "read_mbps",
                                      jrate(rate[1]), "checksum_ok", sum_ok));
        char line[160];
        if (!ok)
            gate_addf(msg, sizeof msg, "%s: %s", paths[i],
                      gate_quote(gate_text_of(&r[i]), line, sizeof line));
        else if (!sum_ok)
            gate_addf(msg, sizeof msg, "%s: the data read back differs (no matching checksum)",
                      paths[i]);
        else if (!rates_ok)
            gate_addf(msg, sizeof msg, "%s: dd did not report both the write and the read rate",
                      paths[i]);
        else if (rate[0] < g->storage_min_mbps)
            gate_addf(msg, sizeof msg, "%s writes %.0f MB/s with fsync, below %.0f", paths[i],
                      rate[0], g->storage_min_mbps);
        else
            gate_addf(msg, sizeof msg, "%s %.0f MB/s write+fsync, %.0f MB/s read", paths[i],
                      rate[0], rate[1]);
        failed |= !ok || !sum_ok || !rates_ok || !(rate[0] >= g->storage_min_mbps);
    }
    o->values = vals;
    gate_set(o, failed ? PLAN_CHECK_FAIL : PLAN_CHECK_PASS, 0, "%s", msg);
}

void gate_eval_observability(const struct prov_gate *g, const struct prov_cmd_result *r,
                             struct prov_check_out *o)
{
    char code[200], line[200];
    const char *url = g->observability_url ? g->observability_url : "";
    utf8_first_line(gate_out_of(r), code, sizeof code);
    int valid = strlen(code) == 3 && strspn(code, "0123456789") == 3;
    o->values = json_pack("{s:o, s:o}", "url", gate_jtext(url), "http_status",
                          valid ? gate_jtext(code) : json_null());
    if (r->ran && r->exit_status == 0 && valid && code[0] == '2')
        gate_set(o, PLAN_CHECK_PASS, 0, "%s answered %s", url, code);
    else if (r->ran && r->exit_status == 0 && valid)
        gate_set(o, PLAN_CHECK_FAIL, 0, "%s answered %s", url, code);
    else if (r->ran && r->exit_status == 0)
        gate_set(o, PLAN_CHECK_FAIL, 0, "%s: curl printed no HTTP status (read %s)", url,
                 gate_quote(code, line, 64));
    else
        gate_set(o, PLAN_CHECK_FAIL, 0, "%s is not reachable from the host: %s", url,
                 gate_quote(gate_text_of(r), line, sizeof line));
}

/* Whether the dcgmi table ends with its closing border: the last non-blank line repeats
 * the top border. A border between sections, cut short, looks like a plain border to
 * the parser; only the repeated top border proves no section is missing. */
static int diag_table_closed(const char *out)
{
    const char *top = NULL, *last = NULL;
    size_t top_len = 0, last_len = 0;
    for (const char *l = out; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        size_t len = strcspn(l, "\n");
        while (len > 0 && isspace((unsigned char)l[len - 1]))
            len--;
        if (len == 0)
            continue;
        if (top == NULL && len > 2 && strncmp(l, "+-", 2) == 0) {
            top = l;
            top_len = len;
        }
        last = l;
        last_len = len;
    }
    return top != NULL && last != top && last_len == top_len && memcmp(top, last, top_len) == 0;
}

/* Rows whose result cell reads Fail ("| PCIe | Fail - All |"), wherever the parser put
 * them: one it did not count as a test still means the run did not pass. */
static size_t diag_fail_rows(const char *out)
{
    size_t n = 0;
    for (const char *l = out; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        const char *bar = *l == '|' ? memchr(l + 1, '|', strcspn(l + 1, "\n")) : NULL;
        n += bar != NULL && strncasecmp(bar + 1 + strspn(bar + 1, " \t"), "fail", 4) == 0;
    }
    return n;
}

void gate_eval_diagnostics(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o)
{
    (void)g;
    prov_diag_t d;
    prov_err_t perr;
    char line[200];
    const char *out = gate_out_of(r);
    if (!r->ran || prov_diag_parse(out, strlen(out), &d, &perr) != 0) {
        gate_set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag gave no readable result: %s",
                 gate_quote(r->ran ? perr.msg : gate_text_of(r), line, sizeof line));
        return;
    }
    o->values = prov_diag_to_json(&d);
    /* A test that failed on a GPU is hardware evidence, even where dcgmi also printed an
     * Error row for it (e.g. "GPU 3 has uncorrectable memory errors and row remappings are
     * pending"); errors outside any failing test only mean the run did not complete. */
    char failing[300] = "";
    int hw = 0;
    size_t passed = 0;
    for (size_t i = 0; i < d.ntests; i++) {
        const prov_diag_test_t *t = &d.tests[i];
        passed += t->result == PROV_DIAG_PASS;
        int failed = t->result == PROV_DIAG_FAIL;
        for (size_t k = 0; k < t->ngpu_results; k++)
            failed |= t->gpu_results[k].result == PROV_DIAG_FAIL;
        if (!failed)
            continue;
        hw = 1;
        char name[sizeof t->name];
        utf8_clean(t->name, strlen(t->name), name, sizeof name);
        gate_addf(failing, sizeof failing, "%s", name);
    }
    if (hw)
        gate_set(o, PLAN_CHECK_FAIL, 1, "failed tests: %s", failing);
    else if (r->exit_status != 0)
        gate_set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag exited %d without a failed test",
                 r->exit_status);
    else if (diag_fail_rows(out) > 0)
        gate_set(o, PLAN_CHECK_FAIL, 0,
                 "dcgmi diag printed a Fail result outside the tests it listed");
    else if (passed == 0)
        gate_set(o, PLAN_CHECK_FAIL, 0, "no diagnostic test passed (%zu listed, none with Pass)",
                 d.ntests);
    else if (!d.table_complete || !diag_table_closed(out))
        gate_set(o, PLAN_CHECK_FAIL, 0, "the dcgmi diag table is cut off after %zu test(s)",
                 d.ntests);
    else if (d.verdict == PROV_DIAG_PASS)
        gate_set(o, PLAN_CHECK_PASS, 0, "every diagnostic test passed");
    else if (d.verdict == PROV_DIAG_WARN)
        gate_set(o, PLAN_CHECK_WARN, 0, "diagnostics passed with warnings");
    else
        gate_set(o, PLAN_CHECK_FAIL, 0, "diagnostics did not complete (errors)");
    prov_diag_free(&d);
}
