/* gate_checks.c — see gate_checks.h. */
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/jobs/gate_bandwidth.h"
#include "provisioner/jobs/gate_judges.h"
#include "provisioner/jobs/gate_storage.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/sbuf.h"
#include "common/utf8.h"
#include "provisioner/shell.h"

#define STORAGE_MIB 16 /* written, fsynced, read back and checksummed in each path */

int prov_check_applies(const struct prov_gate *g, enum prov_check c, char *why, size_t n)
{
    if (c != PROV_CHECK_DIAGNOSTICS && c != PROV_CHECK_STORAGE_THROUGHPUT && g->checks != 0 &&
        !(g->checks & (1u << c))) {
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
    case PROV_CHECK_BANDWIDTH: return gate_bw_applies(g, why, n);
    case PROV_CHECK_STORAGE_THROUGHPUT: return gate_storage_applies(g, why, n);
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
    case PROV_CHECK_BANDWIDTH: return gate_bw_ncmds(g);
    case PROV_CHECK_STORAGE_THROUGHPUT: return 2;
    default: return 1;
    }
}

int prov_check_timeout(const struct prov_gate *g, enum prov_check c, int i)
{
    (void)i;
    if (c == PROV_CHECK_WORKLOAD)
        return g->workload_timeout_s > 0 ? g->workload_timeout_s : 300;
    if (c == PROV_CHECK_BANDWIDTH)
        return gate_bw_timeout(g, i);
    if (c == PROV_CHECK_STORAGE_THROUGHPUT)
        return gate_storage_timeout(g, i);
    return 0;
}

enum prov_cmd_class prov_check_cmd_class(const struct prov_gate *g, enum prov_check c, int i)
{
    switch (c) {
    case PROV_CHECK_BANDWIDTH: return gate_bw_is_tool(g, i) ? PROV_CMD_WORKLOAD : PROV_CMD_QUERY;
    case PROV_CHECK_CONTAINER_GPU:
    case PROV_CHECK_WORKLOAD: return PROV_CMD_WORKLOAD; /* docker run of the pinned image */
    case PROV_CHECK_STORAGE_THROUGHPUT: return PROV_CMD_WORKLOAD; /* its own timeout, no retry */
    case PROV_CHECK_DIAGNOSTICS: return PROV_CMD_DIAG;
    default: return PROV_CMD_QUERY;
    }
}

void prov_timeout_message(char *buf, size_t n, const char *cmd, int seconds)
{
    const char *p = cmd ? cmd : "";
    p += strspn(p, " \t\r\n");
    size_t len = strcspn(p, " \t\r\n;|&");
    char word[64];
    utf8_clean(p, len, word, sizeof word);
    for (char *w = word; *w; w++)
        if ((unsigned char)*w < 0x20 || *w == 0x7f || *w == '`')
            *w = '?';
    const char *base = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
    char msg[160];
    if (strcmp(base, "nvidia-smi") == 0)
        snprintf(msg, sizeof msg,
                 "nvidia-smi did not answer in %d s: the GPU may have fallen off the bus", seconds);
    else if (strcmp(base, "docker") == 0)
        snprintf(msg, sizeof msg,
                 "docker did not answer in %d s: the container runtime may be hung", seconds);
    else if (word[0] == '\0')
        snprintf(msg, sizeof msg, "the command did not answer in %d s", seconds);
    else
        snprintf(msg, sizeof msg, "`%s` did not answer in %d s", word, seconds);
    utf8_clean(msg, strlen(msg), buf, n);
}

/* "docker run --rm --gpus all -- IMAGE arg…" with every argument quoted; -- ends docker's
 * options, so neither the image nor anything after it is taken for one. A drill's restored
 * copy (mount, a validated absolute path, or NULL) is mounted read-only. */
static char *docker_run(const char *image, const json_t *args, const char *mount)
{
    struct sbuf b;
    sbuf_init(&b, 256);
    sbuf_adds(&b, "docker run --rm --gpus all ");
    if (mount != NULL) {
        if (!prov_valid_abs_path(mount)) {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
        char vol[600];
        snprintf(vol, sizeof vol, "%s:/gpufleet/restored:ro", mount);
        sbuf_adds(&b, "-v ");
        prov_sh_quote(&b, vol);
        sbuf_adds(&b, " -e GPUFLEET_RESTORED_DIR=/gpufleet/restored ");
    }
    sbuf_adds(&b, "-- ");
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
    return prov_sh_template("dd if=/dev/zero of=%s bs=1M count="
                            "16"
                            " conv=fsync 2>&1"
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
        char *cmd = docker_run(g->image_ref, args, g->restore_dir);
        json_decref(args);
        return cmd;
    }
    case PROV_CHECK_WORKLOAD: return docker_run(g->image_ref, g->workload_command, g->restore_dir);
    case PROV_CHECK_TOPOLOGY: return strdup(i == 0 ? "nvidia-smi topo -m" : "nvidia-smi nvlink -s");
    case PROV_CHECK_STORAGE: return storage_cmd(i == 0 ? g->durable_path : g->scratch_path);
    case PROV_CHECK_STORAGE_THROUGHPUT: return gate_storage_cmd(g, i);
    case PROV_CHECK_OBSERVABILITY: {
        const char *args[1] = {g->observability_url};
        return prov_sh_template("curl -g -fsS -m 5 -o /dev/null -w '%%{http_code}' -- %s", 1, args);
    }
    case PROV_CHECK_BANDWIDTH: return gate_bw_cmd(g, i);
    case PROV_CHECK_DIAGNOSTICS: {
        char level[4];
        snprintf(level, sizeof level, "%d",
                 g->diag_level >= 1 && g->diag_level <= 3 ? g->diag_level : 1);
        const char *args[1] = {level};
        return prov_sh_template("dcgmi diag -r %s", 1, args);
    }
    default: return NULL;
    }
}

void prov_check_eval(const struct prov_gate *g, enum prov_check c,
                     const struct prov_cmd_result *results, int n, struct prov_check_out *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)c >= PROV_CHECK__COUNT) {
        gate_set(out, PLAN_CHECK_FAIL, 0, "unknown check");
        return;
    }
    if (results == NULL || n < prov_check_ncmds(g, c)) {
        gate_set(out, PLAN_CHECK_FAIL, 0, "%s: %d result(s) for %d command(s)", prov_check_names[c],
                 results ? n : 0, prov_check_ncmds(g, c));
        return;
    }
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY: gate_eval_inventory(g, results, out); break;
    case PROV_CHECK_CONTAINER_GPU: gate_eval_container(g, results, out); break;
    case PROV_CHECK_WORKLOAD: gate_eval_workload(g, results, out); break;
    case PROV_CHECK_TOPOLOGY: gate_eval_topology(g, results, out); break;
    case PROV_CHECK_STORAGE: gate_eval_storage(g, results, out); break;
    case PROV_CHECK_STORAGE_THROUGHPUT: gate_eval_storage_throughput(g, results, out); break;
    case PROV_CHECK_OBSERVABILITY: gate_eval_observability(g, results, out); break;
    case PROV_CHECK_BANDWIDTH: gate_eval_bandwidth(g, results, out); break;
    case PROV_CHECK_DIAGNOSTICS: gate_eval_diagnostics(g, results, out); break;
    default: break;
    }
}

static double finite_or_0(double v)
{
    return isfinite(v) ? v : 0.0;
}

json_t *prov_check_entry(const char *check_name, const struct prov_check_out *o,
                         const char *evidence, size_t evidence_len, double command_ms,
                         double parse_ms)
{
    int known = o->status >= PLAN_CHECK_PASS && o->status <= PLAN_CHECK_TIMEOUT;
    const char *status = plan_check_status_names[known ? o->status : PLAN_CHECK_FAIL];
    json_t *name = gate_jtext(check_name ? check_name : "");
    json_t *message = utf8_json(o->message, strnlen(o->message, sizeof o->message));
    char *tail = utf8_dup_tail(evidence, evidence ? evidence_len : 0, GATE_EVIDENCE_MAX);
    json_t *ev = tail ? json_string(tail) : NULL;
    free(tail);
    command_ms = finite_or_0(command_ms);
    parse_ms = finite_or_0(parse_ms);
    if (name == NULL || message == NULL || ev == NULL) {
        json_decref(name);
        json_decref(message);
        json_decref(ev);
        return NULL;
    }
    return json_pack("{s:o, s:s, s:b, s:o, s:o, s:O?, s:f, s:{s:f, s:f}}", "name", name, "status",
                     status, "hardware_evidence", o->hardware_evidence != 0, "message", message,
                     "evidence", ev, "values", o->values, "duration_ms", command_ms + parse_ms,
                     "phases", "command_ms", command_ms, "parse_ms", parse_ms);
}
