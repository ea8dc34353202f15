/* gate_bandwidth.c — see gate_bandwidth.h. Verdict policy (docs/hosts-and-gates.md):
 * a bandwidth below its minimum, wrong results or a tool failure fail the check without
 * hardware evidence (investigate): a low busbw alone does not say which part is at fault
 * (a contended or misconfigured run, NVLS off, a degraded link); the topology check in
 * the same gate isolates a degraded NVLink it can see. A timeout is the check's timeout
 * (investigate), a missing tool a skip with its reason, or a failure when required. */
#include "provisioner/jobs/gate_bandwidth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "planner/bw_reference.h"
#include "provisioner/parse/parse.h"
#include "provisioner/parse/parse_perf.h"
#include "provisioner/shell.h"

#define D2D_TEST "device_to_device_memcpy_read_ce"
#define H2D_TEST "host_to_device_memcpy_ce"

static int num_or(const json_t *o, const char *k, int dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

void gate_bw_config(struct prov_gate *g, const json_t *pool)
{
    const json_t *bw = json_object_get(json_object_get(pool, "gate"), "bandwidth");
    const char *tool = json_string_value(json_object_get(bw, "tool"));
    struct prov_bw_cfg *c = &g->bw;
    memset(c, 0, sizeof *c);
    c->tool = tool && !strcmp(tool, "nvbandwidth") ? PROV_BW_NVBW
              : tool && !strcmp(tool, "both")      ? PROV_BW_NCCL | PROV_BW_NVBW
                                                   : PROV_BW_NCCL;
    c->path = json_string_value(json_object_get(bw, "path"));
    c->require = json_is_true(json_object_get(bw, "require"));
    c->host_to_device = json_is_true(json_object_get(bw, "host_to_device"));
    c->min_allreduce = json_number_value(json_object_get(bw, "min_allreduce_busbw_gbps"));
    c->min_d2d = json_number_value(json_object_get(bw, "min_d2d_gbps"));
    c->min_mib = num_or(bw, "min_bytes_mib", 8);
    c->max_mib = num_or(bw, "max_bytes_mib", 1024);
    c->iters = num_or(bw, "iterations", 20);
    c->timeout_s = num_or(bw, "timeout_seconds", 300);
    c->expect_numa_nodes = num_or(bw, "expect_numa_nodes", 0);
    c->gpu_model = json_string_value(json_object_get(pool, "gpu_model"));
    c->interconnect = json_string_value(json_object_get(pool, "interconnect"));
}

static int run_nccl(const struct prov_gate *g)
{
    return g->expected_gpus > 1 && (g->bw.tool & PROV_BW_NCCL);
}
static int run_nvbw(const struct prov_gate *g)
{
    return (g->expected_gpus > 1 && (g->bw.tool & PROV_BW_NVBW)) || g->bw.host_to_device;
}
/* The tools in command order; returns their count. */
static int tools_of(const struct prov_gate *g, int tl[2])
{
    int n = 0;
    if (run_nccl(g))
        tl[n++] = PROV_BW_NCCL;
    if (run_nvbw(g))
        tl[n++] = PROV_BW_NVBW;
    return n;
}

int gate_bw_applies(const struct prov_gate *g, char *why, size_t n)
{
    int tl[2];
    if (tools_of(g, tl) == 0) {
        snprintf(why, n,
                 "a single GPU has no GPU-to-GPU bandwidth (gate.bandwidth.host_to_device "
                 "is off)");
        return 0;
    }
    return 1;
}

int gate_bw_ncmds(const struct prov_gate *g)
{
    int tl[2];
    return tools_of(g, tl) + 2;
}

int gate_bw_is_tool(const struct prov_gate *g, int i)
{
    int tl[2];
    return i >= 2 && i - 2 < tools_of(g, tl);
}

int gate_bw_timeout(const struct prov_gate *g, int i)
{
    if (!gate_bw_is_tool(g, i))
        return 0;
    return g->bw.timeout_s > 0 ? g->bw.timeout_s : 300;
}

/* The tool with its arguments: from the pool's directory (127 when it is not there), or
 * inside the stack's pinned image. Every value is quoted. */
static char *tool_cmd(const struct prov_gate *g, const char *tool, const char *const *argv)
{
    struct sbuf b;
    sbuf_init(&b, 256);
    if (g->bw.path != NULL) {
        char full[600];
        snprintf(full, sizeof full, "%s/%s", g->bw.path, tool);
        if (!prov_valid_abs_path(g->bw.path) || !prov_valid_abs_path(full)) {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
        sbuf_adds(&b, "t=");
        prov_sh_quote(&b, full);
        sbuf_adds(&b, "; if [ -x \"$t\" ]; then exec \"$t\"");
    } else {
        if (g->image_ref == NULL) {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
        sbuf_adds(&b, "docker run --rm --gpus all --ipc host -- ");
        prov_sh_quote(&b, g->image_ref);
        sbuf_add(&b, " ", 1);
        prov_sh_quote(&b, tool);
    }
    for (int i = 0; argv[i] != NULL; i++) {
        sbuf_add(&b, " ", 1);
        prov_sh_quote(&b, argv[i]);
    }
    if (g->bw.path != NULL)
        sbuf_adds(&b, "; fi; printf '%s: not found\\n' \"$t\" >&2; exit 127");
    return sbuf_take(&b, NULL);
}

char *gate_bw_cmd(const struct prov_gate *g, int i)
{
    int tl[2];
    int nt = tools_of(g, tl);
    if (i == 0)
        return strdup("nvidia-smi topo -m");
    if (i == 1)
        return strdup("numactl -H 2>/dev/null || lscpu");
    if (i < 0 || i > nt + 1)
        return NULL;
    i -= 2;
    char b[16], e[16], n[16], gpus[16];
    snprintf(b, sizeof b, "%dM", g->bw.min_mib > 0 ? g->bw.min_mib : 8);
    snprintf(e, sizeof e, "%dM", g->bw.max_mib > 0 ? g->bw.max_mib : 1024);
    snprintf(n, sizeof n, "%d", g->bw.iters > 0 ? g->bw.iters : 20);
    snprintf(gpus, sizeof gpus, "%d", g->expected_gpus > 0 ? g->expected_gpus : 1);
    if (tl[i] == PROV_BW_NCCL) {
        const char *argv[] = {"-b", b, "-e", e,   "-f", "2", "-g", gpus,
                              "-n", n, "-w", "5", "-c", "1", NULL};
        return tool_cmd(g, "all_reduce_perf", argv);
    }
    const char *argv[6] = {"-i", n, "-t", NULL, NULL, NULL};
    int k = 3;
    if (g->expected_gpus > 1 && (g->bw.tool & PROV_BW_NVBW))
        argv[k++] = D2D_TEST;
    if (g->bw.host_to_device)
        argv[k++] = H2D_TEST;
    return tool_cmd(g, "nvbandwidth", argv);
}

/* ---- judging */

struct bw_judge {
    const struct prov_gate *g;
    json_t *values;
    char fails[400], notes[400], seen[300];
    int failed, missing, no_min;
    double min_allreduce, min_d2d;
};

static void fail(struct bw_judge *j, const char *fmt, const char *a, double x, double y)
{
    char part[300];
    snprintf(part, sizeof part, fmt, a ? a : "", x, y);
    gate_addf(j->fails, sizeof j->fails, "%s", part);
    j->failed++;
}

static int tool_missing(const struct prov_cmd_result *r)
{
    const char *e = r->err ? r->err : "";
    return r->ran && (r->exit_status == 127 || ((r->exit_status == 126 || r->exit_status == 125) &&
                                                strstr(e, "executable file not found") != NULL));
}

static const char *min_text(double min, char *buf, size_t n)
{
    if (min > 0)
        snprintf(buf, n, "minimum %.2f", min);
    else
        snprintf(buf, n, "no minimum");
    return buf;
}

static void set_num(json_t *o, const char *k, double v)
{
    json_object_set_new(o, k, json_real(v));
}

static void judge_nccl(struct bw_judge *j, const struct prov_cmd_result *r)
{
    prov_nccl_t n, e;
    char q[200];
    const char *out = gate_out_of(r), *err = r->err ? r->err : "";
    int rc = prov_nccl_parse(out, strlen(out), &n);
    (void)prov_nccl_parse(err, strlen(err), &e);
    if (n.errors == 0 && e.errors > 0) {
        n.errors = e.errors;
        memcpy(n.first_error, e.first_error, sizeof n.first_error);
    }
    if (rc != 0) {
        fail(j, "all_reduce_perf printed no result table: %s",
             gate_quote(n.errors ? n.first_error : gate_text_of(r), q, sizeof q), 0, 0);
        return;
    }
    set_num(j->values, "allreduce_busbw_gbps", n.busbw_at_max);
    set_num(j->values, "allreduce_peak_busbw_gbps", n.peak_busbw);
    if (n.has_avg)
        set_num(j->values, "allreduce_avg_busbw_gbps", n.avg_busbw);
    json_object_set_new(j->values, "allreduce_max_bytes", json_real(n.max_size));
    json_object_set_new(j->values, "allreduce_ranks", json_integer(n.nranks));
    json_object_set_new(j->values, "allreduce_wrong", json_integer(n.wrong));
    if (n.errors > 0)
        fail(j, "all_reduce_perf failed: %s", gate_quote(n.first_error, q, sizeof q), 0, 0);
    else if (n.wrong > 0 || n.oob_failed)
        fail(j, "all_reduce_perf found wrong results%s (#wrong %.0f, out of bounds values %.0f)",
             "", (double)n.wrong, (double)n.oob_values);
    else if (!n.has_avg)
        fail(j,
             "all_reduce_perf output ends before its trailer%s (cut after %.0f rows): not read "
             "to the end",
             "", n.nrows, 0);
    else if (r->exit_status != 0)
        fail(j, "all_reduce_perf exited %s%.0f", "", r->exit_status, 0);
    else if (n.unsorted_rows > 0)
        fail(j,
             "all_reduce_perf rows repeat or are out of order%s (%.0f): independent 1-rank runs "
             "(a build without MPI launched several times), not one collective",
             "", n.unsorted_rows, 0);
    else if (n.nranks < j->g->expected_gpus)
        fail(j, "all_reduce_perf ran on %s%.0f rank(s), the pool has %.0f GPUs", "", n.nranks,
             j->g->expected_gpus);
    else if (n.busbw_at_max <= 0)
        fail(j, "all_reduce_perf bus bandwidth is 0%s over %.0f ranks", "", n.nranks, 0);
    else if (j->min_allreduce > 0 && n.busbw_at_max < j->min_allreduce)
        fail(j, "all_reduce bus bandwidth %s%.2f GB/s at the largest size, below the minimum %.2f",
             "", n.busbw_at_max, j->min_allreduce);
    else if (j->min_allreduce <= 0)
        j->no_min++;
    char m[40];
    if (n.busbw_at_max > 0)
        gate_addf(j->seen, sizeof j->seen, "all_reduce busbw %.2f GB/s at %.0f MiB (%s)",
                  n.busbw_at_max, n.max_size / 1048576.0, min_text(j->min_allreduce, m, sizeof m));
}

static void judge_nvbw(struct bw_judge *j, const struct prov_cmd_result *r)
{
    prov_nvbw_t *b = malloc(sizeof *b), *e = malloc(sizeof *e);
    char q[200];
    if (b == NULL || e == NULL) {
        free(b);
        free(e);
        fail(j, "out of memory reading nvbandwidth%s", "", 0, 0);
        return;
    }
    const char *out = gate_out_of(r), *err = r->err ? r->err : "";
    (void)prov_nvbw_parse(out, strlen(out), b);
    (void)prov_nvbw_parse(err, strlen(err), e);
    const prov_nvbw_t *fb = b->failures ? b : e->failures ? e : NULL;
    const prov_nvbw_test_t *d2d = prov_nvbw_find(b, D2D_TEST), *h2d = prov_nvbw_find(b, H2D_TEST);
    if (fb != NULL) {
        fail(j, "nvbandwidth failed: %s", gate_quote(fb->first_failure, q, sizeof q), 0, 0);
    } else if (r->exit_status != 0) {
        fail(j, "nvbandwidth exited %s%.0f", "", r->exit_status, 0);
    }
    if (j->g->expected_gpus > 1 && (j->g->bw.tool & PROV_BW_NVBW) && fb == NULL) {
        if (d2d == NULL)
            fail(j, "nvbandwidth printed no %s result (cut or not run)", D2D_TEST, 0, 0);
        else if (d2d->waived) {
            json_object_set_new(j->values, "p2p", json_false());
            if (j->min_d2d > 0)
                fail(j, "nvbandwidth waived %s: no peer-to-peer access between the GPUs", D2D_TEST,
                     0, 0);
            else
                gate_addf(j->notes, sizeof j->notes,
                          "nvbandwidth waived %s: no peer-to-peer access", D2D_TEST);
        } else if (!d2d->has_sum || d2d->ncells == 0)
            fail(j, "nvbandwidth %s ends before its SUM line: not read to the end", D2D_TEST, 0, 0);
        else {
            set_num(j->values, "d2d_min_gbps", d2d->min);
            set_num(j->values, "d2d_median_gbps", d2d->median);
            char m[40];
            gate_addf(j->seen, sizeof j->seen, "D2D %.2f GB/s on the slowest pair (%s)", d2d->min,
                      min_text(j->min_d2d, m, sizeof m));
            if (j->min_d2d > 0 && d2d->min < j->min_d2d)
                fail(j,
                     "device-to-device copy %s%.2f GB/s on the slowest GPU pair, below the "
                     "minimum %.2f",
                     "", d2d->min, j->min_d2d);
            else if (j->min_d2d <= 0)
                j->no_min++;
        }
    }
    if (j->g->bw.host_to_device && fb == NULL) {
        if (h2d == NULL || h2d->waived || !h2d->has_sum || h2d->ncells == 0)
            fail(j, "nvbandwidth %s was not read to its SUM line", H2D_TEST, 0, 0);
        else
            set_num(j->values, "h2d_gbps", h2d->min);
    }
    free(b);
    free(e);
}

static int link_rank(const char *l)
{
    static const char *const order[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    for (int i = 0; i < 5; i++)
        if (strcmp(l, order[i]) == 0)
            return i;
    return 99;
}

/* values.affinity from topo -m and numactl/lscpu; the pool's NUMA expectation. */
static void affinity(struct bw_judge *j, const struct prov_cmd_result *rt,
                     const struct prov_cmd_result *rn)
{
    json_t *a = json_object(), *gpus = json_array();
    prov_topo_t t;
    prov_err_t perr;
    const char *tout = gate_out_of(rt);
    if (rt->ran && rt->exit_status == 0 && prov_topo_parse(tout, strlen(tout), &t, &perr) == 0) {
        for (size_t i = 0; i < t.ngpus && i < 64; i++) {
            json_t *e = json_pack("{s:I}", "gpu", (json_int_t)i);
            if (t.has_cpu_affinity)
                json_object_set_new(e, "cpu_affinity", gate_jtext(t.cpu_affinity[i]));
            if (t.has_numa_affinity)
                json_object_set_new(e, "numa_affinity", gate_jtext(t.numa_affinity[i]));
            size_t best = 0;
            int rank = 99;
            for (size_t n = 0; n < t.nnics; n++) {
                int r = link_rank(prov_topo_gpu_nic_link(&t, i, n));
                if (r < rank) {
                    rank = r;
                    best = n;
                }
            }
            if (rank < 99) {
                const char *dev = t.nic_devs[best][0] ? t.nic_devs[best] : t.nic_names[best];
                json_object_set_new(e, "nearest_nic", gate_jtext(dev));
                json_object_set_new(e, "nic_link", gate_jtext(prov_topo_gpu_nic_link(&t, i, best)));
            }
            json_array_append_new(gpus, e);
        }
        json_object_set_new(a, "nics", json_integer((json_int_t)t.nnics));
        prov_topo_free(&t);
    }
    json_object_set_new(a, "gpus", gpus);
    prov_numa_t nm;
    const char *nout = gate_out_of(rn);
    int numa_ok = rn->ran && rn->exit_status == 0 && prov_numa_parse(nout, strlen(nout), &nm) == 0;
    if (numa_ok) {
        json_object_set_new(a, "numa_nodes", json_integer(nm.nnodes));
        json_object_set_new(a, "numa_nodes_with_cpus", json_integer(nm.nodes_with_cpus));
        json_object_set_new(a, "numa_source", json_string(nm.from_numactl ? "numactl" : "lscpu"));
        json_t *cpus = json_object();
        for (int n = 0; n < PROV_NUMA_NODES; n++)
            if (nm.cpus[n][0]) {
                char key[16];
                snprintf(key, sizeof key, "%d", n);
                json_object_set_new(cpus, key, gate_jtext(nm.cpus[n]));
            }
        json_object_set_new(a, "numa_cpus", cpus);
    }
    int want = j->g->bw.expect_numa_nodes;
    if (want > 0) {
        json_object_set_new(a, "expect_numa_nodes", json_integer(want));
        if (!numa_ok)
            fail(j,
                 "the NUMA layout (numactl -H, lscpu) was not read%s; the pool expects %.0f "
                 "nodes with CPUs",
                 "", want, 0);
        else if (nm.nodes_with_cpus != want)
            fail(j, "the host has %s%.0f NUMA node(s) with CPUs, the pool expects %.0f", "",
                 nm.nodes_with_cpus, want);
    }
    json_object_set_new(j->values, "affinity", a);
}

static const char *tool_name(int tool)
{
    return tool == (PROV_BW_NCCL | PROV_BW_NVBW) ? "both"
           : tool == PROV_BW_NVBW                ? "nvbandwidth"
                                                 : "nccl";
}

void gate_eval_bandwidth(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o)
{
    struct bw_judge j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.values = json_pack("{s:s, s:i}", "tool", tool_name(g->bw.tool), "gpus", g->expected_gpus);
    json_t *exp = json_object();
    const struct plan_bw_reference *ref =
        plan_bw_reference_find(g->bw.gpu_model, g->bw.interconnect, g->expected_gpus);
    j.min_allreduce = g->bw.min_allreduce > 0 ? g->bw.min_allreduce
                      : ref                   ? ref->min_allreduce_busbw_gbps
                                              : 0;
    j.min_d2d = g->bw.min_d2d > 0 ? g->bw.min_d2d : ref ? ref->min_d2d_gbps : 0;
    if (j.min_allreduce > 0)
        set_num(exp, "min_allreduce_busbw_gbps", j.min_allreduce);
    if (j.min_d2d > 0)
        set_num(exp, "min_d2d_gbps", j.min_d2d);
    int from_pool = g->bw.min_allreduce > 0 || g->bw.min_d2d > 0;
    if (from_pool || ref != NULL)
        json_object_set_new(exp, "source", json_string(from_pool ? "pool" : "catalog"));
    if (ref != NULL && !from_pool)
        set_num(exp, "reference_allreduce_busbw_gbps", ref->reference_allreduce_busbw_gbps);
    json_object_set_new(j.values, "expected", exp);

    int tl[2];
    int nt = tools_of(g, tl);
    char where[300];
    snprintf(where, sizeof where, "%s", g->bw.path ? g->bw.path : "the stack's image");
    for (int k = 0; k < nt; k++) {
        const char *name = tl[k] == PROV_BW_NCCL ? "all_reduce_perf" : "nvbandwidth";
        const struct prov_cmd_result *rk = &r[2 + k];
        if (!rk->ran)
            fail(&j, "%s did not run (the session closed)", name, 0, 0);
        else if (tool_missing(rk)) {
            j.missing++;
            char part[400];
            snprintf(part, sizeof part, "%s not found in %s", name, where);
            gate_addf(j.notes, sizeof j.notes, "%s", part);
        } else if (tl[k] == PROV_BW_NCCL)
            judge_nccl(&j, rk);
        else
            judge_nvbw(&j, rk);
    }
    affinity(&j, &r[0], &r[1]);
    o->values = j.values;
    if (j.missing > 0 && g->bw.require)
        gate_addf(j.fails, sizeof j.fails, "required (gate.bandwidth.require): %s", j.notes);
    if (j.failed > 0 || (j.missing > 0 && g->bw.require))
        gate_set(o, PLAN_CHECK_FAIL, 0, "%s", j.fails);
    else if (j.missing == nt)
        gate_set(o, PLAN_CHECK_SKIP, 0, "%s; the pool does not require it (gate.bandwidth.require)",
                 j.notes);
    else if (j.no_min > 0 || j.notes[0])
        gate_set(o, PLAN_CHECK_WARN, 0, "%s%s%s%s", j.seen[0] ? j.seen : "measured",
                 j.no_min ? ", but no minimum is known "
                            "for this pool (set gate."
                            "bandwidth minimums)"
                          : "",
                 j.notes[0] ? "; " : "", j.notes);
    else
        gate_set(o, PLAN_CHECK_PASS, 0, "%s; minimums from the %s", j.seen,
                 from_pool ? "pool" : "catalog");
}
