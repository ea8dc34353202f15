/* gate_checks.c — see gate_checks.h. */
#include "provisioner/gate_checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "provisioner/parse.h"
#include "provisioner/shell.h"

const char *const prov_check_names[] = {"gpu_inventory", "container_gpu", "workload", "topology",
                                        "storage",       "observability", "diagnostics"};

#define STORAGE_MIB 16 /* written, fsynced, read back and checksummed in each path */

static const char *const inv_fields[] = {"index",
                                         "name",
                                         "uuid",
                                         "memory.total",
                                         "driver_version",
                                         "pci.bus_id",
                                         "ecc.errors.uncorrected.volatile.total",
                                         "retired_pages.pending",
                                         "remapped_rows.pending"};
#define NINV (sizeof inv_fields / sizeof inv_fields[0])

static const char *text_of(const struct prov_cmd_result *r)
{
    return r->err && *r->err ? r->err : r->out ? r->out : "";
}

static void first_line(const char *s, char *buf, size_t n)
{
    size_t len = strcspn(s ? s : "", "\n");
    if (len >= n)
        len = n - 1;
    memcpy(buf, s ? s : "", len);
    buf[len] = '\0';
}

static void set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt,
                const char *a, const char *b)
{
    o->status = st;
    o->hardware_evidence = hw;
    snprintf(o->message, sizeof o->message, fmt, a ? a : "", b ? b : "");
}

int prov_check_applies(const struct prov_gate *g, enum prov_check c, char *why, size_t n)
{
    if (c != PROV_CHECK_DIAGNOSTICS && g->checks != 0 && !(g->checks & (1u << c))) {
        snprintf(why, n, "not in the pool's gate checks");
        return 0;
    }
    switch (c) {
    case PROV_CHECK_TOPOLOGY:
        if (g->expected_gpus < 2) {
            snprintf(why, n, "a single GPU has no GPU-to-GPU links");
            return 0;
        }
        return 1;
    case PROV_CHECK_WORKLOAD:
        if (g->workload_command == NULL || json_array_size(g->workload_command) == 0) {
            snprintf(why, n, "the pool's gate defines no workload");
            return 0;
        }
        return 1;
    case PROV_CHECK_OBSERVABILITY:
        if (g->observability_url == NULL || *g->observability_url == '\0') {
            snprintf(why, n, "the pool's gate defines no observability_url");
            return 0;
        }
        return 1;
    default: return 1;
    }
}

int prov_check_ncmds(const struct prov_gate *g, enum prov_check c)
{
    (void)g;
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY: return 2;
    case PROV_CHECK_TOPOLOGY: return 2;
    case PROV_CHECK_STORAGE: return 2;
    default: return 1;
    }
}

int prov_check_timeout(const struct prov_gate *g, enum prov_check c, int i)
{
    (void)i;
    if (c == PROV_CHECK_WORKLOAD)
        return g->workload_timeout_s > 0 ? g->workload_timeout_s : 300;
    return 0;
}

/* "docker run --rm --gpus all IMAGE arg…" with every argument quoted. */
static char *docker_run(const char *image, const json_t *args)
{
    struct sbuf b;
    sbuf_init(&b, 256);
    sbuf_adds(&b, "docker run --rm --gpus all ");
    prov_sh_quote(&b, image);
    size_t i;
    const json_t *a;
    json_array_foreach(args, i, a)
    {
        sbuf_add(&b, " ", 1);
        prov_sh_quote(&b, json_string_value(a) ? json_string_value(a) : "");
    }
    return sbuf_take(&b, NULL);
}

static char *storage_cmd(const char *dir)
{
    if (!prov_valid_abs_path(dir))
        return NULL;
    char file[600];
    snprintf(file, sizeof file, "%s/.gpufleet-gate-probe", dir);
    const char *args[5] = {file, file, file, file, file};
    /* write + fsync, checksum, read back; report dd's own byte counts and times */
    return prov_sh_template("dd if=/dev/zero of=%s bs=1M count=" "16" " conv=fsync 2>&1"
                            " && sha256sum < %s && dd if=%s of=/dev/null bs=1M 2>&1;"
                            " rc=$?; rm -f -- %s; test -e %s && exit 3; exit $rc",
                            5, args);
}

char *prov_check_cmd(const struct prov_gate *g, enum prov_check c, int i)
{
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY:
        if (i == 0)
            return strdup("nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,"
                          "pci.bus_id,ecc.errors.uncorrected.volatile.total,"
                          "retired_pages.pending,remapped_rows.pending --format=csv,noheader,"
                          "nounits");
        return strdup("nvidia-smi");
    case PROV_CHECK_CONTAINER_GPU: {
        json_t *args = json_pack("[s, s]", "nvidia-smi", "-L");
        char *cmd = docker_run(g->image_ref, args);
        json_decref(args);
        return cmd;
    }
    case PROV_CHECK_WORKLOAD: return docker_run(g->image_ref, g->workload_command);
    case PROV_CHECK_TOPOLOGY: return strdup(i == 0 ? "nvidia-smi topo -m" : "nvidia-smi nvlink -s");
    case PROV_CHECK_STORAGE: return storage_cmd(i == 0 ? g->durable_path : g->scratch_path);
    case PROV_CHECK_OBSERVABILITY: {
        const char *args[1] = {g->observability_url};
        return prov_sh_template("curl -fsS -m 5 -o /dev/null -w '%%{http_code}' %s", 1, args);
    }
    case PROV_CHECK_DIAGNOSTICS: {
        char level[4];
        snprintf(level, sizeof level, "%d", g->diag_level >= 1 && g->diag_level <= 3 ? g->diag_level : 1);
        const char *args[1] = {level};
        return prov_sh_template("dcgmi diag -r %s", 1, args);
    }
    default: return NULL;
    }
}

/* ---- judges ---- */

static int bad_state(prov_vstate_t st)
{
    return st == PROV_V_UNKNOWN_ERROR || st == PROV_V_ERR;
}

static void eval_inventory(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o)
{
    char line[200];
    if (!r[0].ran || r[0].exit_status != 0) {
        prov_nvsmi_error_t e;
        const char *t = text_of(&r[0]);
        prov_nvsmi_error_classify(t, strlen(t), r[0].ran ? r[0].exit_status : -1, &e);
        first_line(t, line, sizeof line);
        int hw = e.reason == PROV_NVSMI_NO_DEVICES || e.reason == PROV_NVSMI_GPU_LOST;
        o->values = json_pack("{s:s}", "nvidia_smi_error", prov_nvsmi_reason_name(e.reason));
        set(o, PLAN_CHECK_FAIL, hw, "nvidia-smi failed (%s): %s", prov_nvsmi_reason_name(e.reason),
            line);
        return;
    }
    prov_qgpu_t q;
    prov_err_t perr;
    const char *out = r[0].out ? r[0].out : "";
    if (prov_qgpu_parse(out, strlen(out), inv_fields, NINV, &q, &perr) != 0) {
        set(o, PLAN_CHECK_FAIL, 0, "cannot parse the GPU inventory: %s%s", perr.msg, NULL);
        return;
    }
    json_t *gpus = json_array();
    int hw = 0, config = 0;
    char why[400] = "";
    for (size_t i = 0; i < q.nrows; i++) {
        const prov_qgpu_row_t *row = &q.rows[i];
        int ecc = row->ecc_uncorr_volatile.st == PROV_V_OK && row->ecc_uncorr_volatile.v > 0;
        int retired = row->retired_pending.st == PROV_V_OK && row->retired_pending.v;
        int remapped = row->remapped_pending.st == PROV_V_OK && row->remapped_pending.v;
        int errors = bad_state(row->ecc_uncorr_volatile.st) || bad_state(row->retired_pending.st) ||
                     bad_state(row->remapped_pending.st) || bad_state(row->mem_total_mib.st);
        json_array_append_new(
            gpus, json_pack("{s:I, s:s, s:s, s:o, s:s, s:b, s:b, s:b, s:b}", "index",
                            (json_int_t)row->index.v, "name", row->name, "uuid", row->uuid,
                            "memory_mib",
                            row->mem_total_mib.st == PROV_V_OK ? json_integer((json_int_t)row->mem_total_mib.v)
                                                               : json_null(),
                            "driver_version", row->driver_version, "uncorrectable_ecc", ecc,
                            "retired_pages_pending", retired, "remapped_rows_pending", remapped,
                            "error_readings", errors));
        size_t used = strlen(why);
        if ((ecc || retired || remapped || errors) && used < 300) {
            hw = 1;
            snprintf(why + used, sizeof why - used, "%sGPU %d: %s", used ? "; " : "",
                     (int)row->index.v,
                     errors ? "[Unknown Error] readings" : ecc ? "uncorrectable ECC errors"
                                                        : "pending page retirement or row remap");
        } else if (g->expected_gpu_name && strcmp(row->name, g->expected_gpu_name) != 0 && used < 300) {
            config = 1;
            snprintf(why + used, sizeof why - used, "%sGPU %d is %s, expected %s", used ? "; " : "",
                     (int)row->index.v, row->name, g->expected_gpu_name);
        } else if (g->expected_memory_mib > 0 && row->mem_total_mib.st == PROV_V_OK &&
                   fabs(row->mem_total_mib.v - (double)g->expected_memory_mib) >
                       0.02 * (double)g->expected_memory_mib &&
                   used < 300) {
            config = 1;
            snprintf(why + used, sizeof why - used, "%sGPU %d has %.0f MiB, expected %ld",
                     used ? "; " : "", (int)row->index.v, row->mem_total_mib.v,
                     g->expected_memory_mib);
        } else if (g->driver_version && strcmp(row->driver_version, g->driver_version) != 0 &&
                   used < 300) {
            config = 1;
            snprintf(why + used, sizeof why - used, "%sGPU %d runs driver %s, the stack pins %s",
                     used ? "; " : "", (int)row->index.v, row->driver_version, g->driver_version);
        }
    }
    size_t n = q.nrows;
    prov_qgpu_free(&q);
    /* The default table shows ERR! where the query may not. */
    prov_smi_t smi;
    json_t *err_gpus = json_array();
    const char *table = r[1].out ? r[1].out : "";
    if (r[1].ran && prov_smi_parse(table, strlen(table), &smi, &perr) == 0) {
        for (size_t i = 0; i < smi.ngpus; i++)
            if (smi.gpus[i].err)
                json_array_append_new(err_gpus, json_integer(smi.gpus[i].index));
        prov_smi_free(&smi);
    }
    if (json_array_size(err_gpus) > 0) {
        hw = 1;
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used, "%sERR! on %zu GPU(s) in nvidia-smi", used ? "; " : "",
                 json_array_size(err_gpus));
    }
    o->values = json_pack("{s:I, s:i, s:o, s:o}", "gpu_count", (json_int_t)n, "expected_gpus",
                          g->expected_gpus, "gpus", gpus, "err_gpus", err_gpus);
    char counts[96];
    snprintf(counts, sizeof counts, "%zu of %d expected GPU(s)", n, g->expected_gpus);
    if ((int)n < g->expected_gpus) {
        set(o, PLAN_CHECK_FAIL, 1, "missing GPU: %s%s", counts, why[0] ? "" : "");
        if (why[0]) {
            size_t used = strlen(o->message);
            snprintf(o->message + used, sizeof o->message - used, "; %s", why);
        }
        return;
    }
    if ((int)n > g->expected_gpus)
        config = 1;
    if (hw || config) {
        set(o, PLAN_CHECK_FAIL, hw, "%s: %s", counts, why[0] ? why : "more GPUs than the pool expects");
        return;
    }
    set(o, PLAN_CHECK_PASS, 0, "%s, model, memory and driver as expected, no error readings%s", counts,
        NULL);
}

static void eval_container(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o)
{
    char line[200];
    if (!r->ran || r->exit_status != 0) {
        prov_ctr_error_t e;
        const char *t = text_of(r);
        prov_ctr_classify(t, strlen(t), r->ran ? r->exit_status : -1, &e);
        first_line(e.matched[0] ? e.matched : t, line, sizeof line);
        o->values = json_pack("{s:s}", "reason", prov_ctr_reason_name(e.reason));
        set(o, PLAN_CHECK_FAIL, 0, "a container cannot use the GPUs (%s): %s",
            prov_ctr_reason_name(e.reason), line);
        return;
    }
    prov_list_t l;
    prov_err_t perr;
    const char *out = r->out ? r->out : "";
    size_t n = 0;
    if (prov_list_parse(out, strlen(out), &l, &perr) == 0) {
        n = l.ngpus;
        prov_list_free(&l);
    }
    o->values = json_pack("{s:I, s:i}", "gpus_seen", (json_int_t)n, "expected_gpus", g->expected_gpus);
    char buf[96];
    snprintf(buf, sizeof buf, "%zu of %d GPU(s)", n, g->expected_gpus);
    if ((int)n != g->expected_gpus)
        set(o, PLAN_CHECK_FAIL, 0, "a container from the pinned image sees %s%s", buf, NULL);
    else
        set(o, PLAN_CHECK_PASS, 0, "a container from the pinned image sees %s%s", buf, NULL);
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

static void eval_workload(const struct prov_gate *g, const struct prov_cmd_result *r,
                          struct prov_check_out *o)
{
    char line[200];
    if (!r->ran || r->exit_status != 0) {
        first_line(text_of(r), line, sizeof line);
        set(o, PLAN_CHECK_FAIL, 0, "the workload failed: %s%s", line, NULL);
        return;
    }
    double v;
    const char *metric = g->workload_metric ? g->workload_metric : "throughput";
    if (!find_metric(r->out ? r->out : "", metric, &v)) {
        o->values = json_pack("{s:s}", "metric", metric);
        set(o, PLAN_CHECK_FAIL, 0, "the workload did not report %s (expected a line %s=<number>)",
            metric, metric);
        return;
    }
    o->values = json_pack("{s:s, s:f, s:f}", "metric", metric, "value", v, "min", g->workload_min);
    char buf[160];
    snprintf(buf, sizeof buf, "%s = %g (minimum %g)", metric, v, g->workload_min);
    set(o, v >= g->workload_min ? PLAN_CHECK_PASS : PLAN_CHECK_FAIL, 0,
        v >= g->workload_min ? "%s%s" : "below threshold: %s%s", buf, NULL);
}

static void eval_topology(const struct prov_gate *g, const struct prov_cmd_result *r,
                          struct prov_check_out *o)
{
    char line[200];
    prov_topo_t t;
    prov_err_t perr;
    const char *out = r[0].out ? r[0].out : "";
    if (!r[0].ran || r[0].exit_status != 0 || prov_topo_parse(out, strlen(out), &t, &perr) != 0) {
        first_line(r[0].ran && r[0].exit_status == 0 ? perr.msg : text_of(&r[0]), line, sizeof line);
        set(o, PLAN_CHECK_FAIL, 0, "nvidia-smi topo -m failed or is unreadable: %s%s", line, NULL);
        return;
    }
    json_t *nvlink = json_null();
    prov_nvlink_t nl;
    const char *nvout = r[1].out ? r[1].out : "";
    if (r[1].ran && r[1].exit_status == 0 &&
        prov_nvlink_parse(nvout, strlen(nvout), &nl, &perr) == 0) {
        json_decref(nvlink);
        nvlink = prov_nvlink_to_json(&nl);
        prov_nvlink_free(&nl);
    }
    size_t a = 0, b = 0;
    const char *expected = g->link_class && *g->link_class ? g->link_class : "any";
    size_t bad = prov_topo_check_pairs(&t, expected, &a, &b);
    o->values = json_pack("{s:o, s:s, s:I, s:i, s:o}", "matrix", prov_topo_to_json(&t),
                          "expected_link", expected, "failing_pairs", (json_int_t)bad,
                          "min_nvlinks", prov_topo_min_nvlinks(&t), "nvlink", nvlink);
    if ((int)t.ngpus != g->expected_gpus) {
        char buf[96];
        snprintf(buf, sizeof buf, "%zu GPU(s), expected %d", t.ngpus, g->expected_gpus);
        set(o, PLAN_CHECK_FAIL, 1, "the topology shows %s%s", buf, NULL);
    } else if (bad > 0) {
        char buf[200];
        snprintf(buf, sizeof buf, "%zu GPU pair(s) below %s, first GPU%zu-GPU%zu: %s", bad,
                 expected, a, b, prov_topo_gpu_link(&t, a, b));
        set(o, PLAN_CHECK_FAIL, 1, "degraded link: %s%s", buf, NULL);
    } else {
        set(o, PLAN_CHECK_PASS, 0, "every GPU pair meets %s%s", expected, NULL);
    }
    prov_topo_free(&t);
}

/* dd prints "16777216 bytes (17 MB, 16 MiB) copied, 0.0123 s, 1.4 GB/s". */
static int dd_rates(const char *out, double rate[2])
{
    int n = 0;
    for (const char *p = out; n < 2 && (p = strstr(p, " bytes")) != NULL; p++) {
        const char *s = p;
        while (s > out && s[-1] >= '0' && s[-1] <= '9')
            s--;
        double bytes = strtod(s, NULL);
        const char *c = strstr(p, "copied, ");
        if (c == NULL)
            break;
        double secs = strtod(c + 8, NULL);
        rate[n++] = secs > 0 ? bytes / secs / 1e6 : 0;
        p = c;
    }
    return n;
}

static void eval_storage(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o)
{
    static const char zeros16m[] = "080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b719643e";
    const char *paths[2] = {g->durable_path, g->scratch_path};
    json_t *vals = json_object();
    int failed = 0;
    char msg[512] = "";
    for (int i = 0; i < 2; i++) {
        double rate[2] = {0, 0};
        const char *out = r[i].out ? r[i].out : "";
        int ok = r[i].ran && r[i].exit_status == 0;
        int sum_ok = strstr(out, zeros16m) != NULL;
        int nrates = dd_rates(out, rate);
        json_object_set_new(vals, i == 0 ? "durable" : "scratch",
                            json_pack("{s:s, s:f, s:f, s:b}", "path", paths[i], "write_fsync_mbps",
                                      rate[0], "read_mbps", nrates > 1 ? rate[1] : 0.0,
                                      "checksum_ok", sum_ok));
        size_t used = strlen(msg);
        if (!ok || !sum_ok || nrates < 2) {
            char line[160];
            first_line(ok ? "the data read back differs" : text_of(&r[i]), line, sizeof line);
            snprintf(msg + used, sizeof msg - used, "%s%s: %s", used ? "; " : "", paths[i], line);
            failed = 1;
        } else if (rate[0] < g->storage_min_mbps) {
            snprintf(msg + used, sizeof msg - used, "%s%s writes %.0f MB/s with fsync, below %.0f",
                     used ? "; " : "", paths[i], rate[0], g->storage_min_mbps);
            failed = 1;
        } else {
            snprintf(msg + used, sizeof msg - used, "%s%s %.0f MB/s write+fsync, %.0f MB/s read",
                     used ? "; " : "", paths[i], rate[0], rate[1]);
        }
    }
    o->values = vals;
    set(o, failed ? PLAN_CHECK_FAIL : PLAN_CHECK_PASS, 0, "%s%s", msg, NULL);
}

static void eval_observability(const struct prov_gate *g, const struct prov_cmd_result *r,
                               struct prov_check_out *o)
{
    char line[200];
    first_line(r->out, line, sizeof line);
    o->values = json_pack("{s:s, s:s}", "url", g->observability_url, "http_status", line);
    if (r->ran && r->exit_status == 0 && line[0] == '2')
        set(o, PLAN_CHECK_PASS, 0, "%s answered %s", g->observability_url, line);
    else {
        first_line(text_of(r), line, sizeof line);
        set(o, PLAN_CHECK_FAIL, 0, "%s is not reachable from the host: %s", g->observability_url,
            line);
    }
}

static void eval_diagnostics(const struct prov_gate *g, const struct prov_cmd_result *r,
                             struct prov_check_out *o)
{
    (void)g;
    prov_diag_t d;
    prov_err_t perr;
    const char *out = r->out ? r->out : "";
    if (!r->ran || prov_diag_parse(out, strlen(out), &d, &perr) != 0) {
        char line[200];
        first_line(r->ran ? perr.msg : text_of(r), line, sizeof line);
        set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag gave no readable result: %s%s", line, NULL);
        return;
    }
    o->values = prov_diag_to_json(&d);
    /* A test that failed on a GPU is hardware evidence, even where dcgmi also printed an
     * Error row for it (e.g. "GPU 3 has uncorrectable memory errors and row remappings are
     * pending"); errors outside any failing test only mean the run did not complete. */
    char failing[300] = "";
    int hw = 0;
    for (size_t i = 0; i < d.ntests; i++) {
        const prov_diag_test_t *t = &d.tests[i];
        int failed = t->result == PROV_DIAG_FAIL;
        for (size_t k = 0; k < t->ngpu_results; k++)
            failed |= t->gpu_results[k].result == PROV_DIAG_FAIL;
        if (!failed)
            continue;
        hw = 1;
        size_t used = strlen(failing);
        snprintf(failing + used, sizeof failing - used, "%s%s", used ? ", " : "", t->name);
    }
    if (hw)
        set(o, PLAN_CHECK_FAIL, 1, "failed tests: %s%s", failing, NULL);
    else if (d.verdict == PROV_DIAG_PASS)
        set(o, PLAN_CHECK_PASS, 0, "every diagnostic test passed%s%s", NULL, NULL);
    else if (d.verdict == PROV_DIAG_WARN)
        set(o, PLAN_CHECK_WARN, 0, "diagnostics passed with warnings%s%s", NULL, NULL);
    else
        set(o, PLAN_CHECK_FAIL, 0, "diagnostics did not complete (errors)%s%s", NULL, NULL);
    prov_diag_free(&d);
}

void prov_check_eval(const struct prov_gate *g, enum prov_check c,
                     const struct prov_cmd_result *results, int n, struct prov_check_out *out)
{
    memset(out, 0, sizeof *out);
    (void)n;
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY: eval_inventory(g, results, out); break;
    case PROV_CHECK_CONTAINER_GPU: eval_container(g, results, out); break;
    case PROV_CHECK_WORKLOAD: eval_workload(g, results, out); break;
    case PROV_CHECK_TOPOLOGY: eval_topology(g, results, out); break;
    case PROV_CHECK_STORAGE: eval_storage(g, results, out); break;
    case PROV_CHECK_OBSERVABILITY: eval_observability(g, results, out); break;
    case PROV_CHECK_DIAGNOSTICS: eval_diagnostics(g, results, out); break;
    default: set(out, PLAN_CHECK_SKIP, 0, "unknown check%s%s", NULL, NULL);
    }
}
