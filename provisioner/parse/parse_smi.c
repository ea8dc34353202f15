/* Plain `nvidia-smi` (the default table).
 *
 * Column widths move between driver layouts (79-col 525, 87-col 530/535,
 * 89-col 550+, Windows with Driver-Model instead of Persistence-M), so
 * nothing here relies on column positions: the header values are found by
 * their labels, and each table row is split on '|' and then on whitespace.
 * A GPU is a row whose first cell starts with an index; its next row holds
 * fan/temp/perf/power, memory and utilisation; an optional third row (cell 0
 * empty) holds the MIG mode.  "ERR!" anywhere in a GPU's rows flags it. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

enum section { SEC_NONE, SEC_GPU_HDR, SEC_GPU, SEC_MIG_HDR, SEC_MIG, SEC_PROC_HDR, SEC_PROC };

#define MAX_CELLS 8
#define MAX_TOK   32

typedef struct smi_ctx {
    prov_smi_t *out;
    size_t gcap, mcap, pcap;
    int gpu_row; /* which row of the current GPU comes next: 2, 3 or 0 */
    bool proc_has_gi;
} smi_ctx_t;

/* "| a | b |" -> cells " a ", " b " (without the outer pipes). */
static size_t split_cells(prov_span_t line, prov_span_t *cells)
{
    prov_span_t s = prov_rtrim(line);
    if (s.n && s.p[0] == '|')
        s = prov_span_from(s, 1);
    if (s.n && s.p[s.n - 1] == '|')
        s.n--;
    return prov_split_ch(s, '|', cells, MAX_CELLS);
}

static unsigned count_err(prov_span_t line)
{
    unsigned n = 0;
    for (;;) {
        long at = prov_span_find(line, "ERR!");
        if (at < 0)
            return n;
        n++;
        line = prov_span_from(line, (size_t)at + 4);
    }
}

/* Value after `label` up to whitespace, e.g. "Driver Version:" -> "550.54.15". */
static bool labelled(prov_span_t line, const char *label, char *dst, size_t cap)
{
    long at = prov_span_find(line, label);
    if (at < 0)
        return false;
    prov_span_t v = prov_trim(prov_span_from(line, (size_t)at + strlen(label)));
    v = prov_span_until_ws(v);
    if (v.n == 0 || prov_span_ieq(v, "N/A") || v.p[0] == '|')
        return true;
    prov_span_copy(dst, cap, v);
    return true;
}

static void mark_err(smi_ctx_t *c, prov_span_t line)
{
    prov_smi_t *o = c->out;
    if (o->ngpus == 0)
        return;
    unsigned e = count_err(line);
    if (e) {
        o->gpus[o->ngpus - 1].err = true;
        o->gpus[o->ngpus - 1].err_fields += e;
    }
}

static int gpu_row1(smi_ctx_t *c, prov_span_t *cells, size_t nc)
{
    prov_smi_t *o = c->out;
    prov_span_t tok[MAX_TOK];
    size_t nt = prov_split_ws(cells[0], tok, MAX_TOK);
    long idx = nt >= 2 ? prov_parse_uint(tok[0]) : -1;
    if (idx < 0)
        return 0;
    if (prov_grow((void **)&o->gpus, &c->gcap, o->ngpus + 1, sizeof *o->gpus))
        return -1;
    prov_smi_gpu_t *g = &o->gpus[o->ngpus++];
    g->index = (int)idx;
    size_t name_end = nt >= 3 ? nt - 1 : nt;
    if (nt >= 3)
        prov_span_copy(g->mode, sizeof g->mode, tok[nt - 1]);
    prov_span_t name =
        prov_span(tok[1].p, (size_t)(tok[name_end - 1].p + tok[name_end - 1].n - tok[1].p));
    prov_span_copy(g->name, sizeof g->name, name);
    g->name_truncated = name.n >= 3 && memcmp(name.p + name.n - 3, "...", 3) == 0;
    if (nc >= 2) {
        nt = prov_split_ws(cells[1], tok, MAX_TOK);
        if (nt >= 1)
            prov_span_copy(g->bus_id, sizeof g->bus_id, tok[0]);
    }
    g->ecc_uncorr = nc >= 3 ? prov_parse_num(cells[2]) : (prov_num_t){PROV_V_ABSENT, 0};
    /* In MIG mode this column shows "On"/"Off", not a count. */
    if (g->ecc_uncorr.st == PROV_V_INVALID)
        g->ecc_uncorr.st = PROV_V_NA;
    g->mig_enabled.st = PROV_V_ABSENT;
    c->gpu_row = 2;
    return 0;
}

static void gpu_row2(smi_ctx_t *c, prov_span_t *cells, size_t nc)
{
    prov_smi_gpu_t *g = &c->out->gpus[c->out->ngpus - 1];
    prov_span_t tok[MAX_TOK];
    size_t nt = prov_split_ws(cells[0], tok, MAX_TOK);
    if (nt >= 1)
        g->fan_pct = prov_parse_num(tok[0]);
    if (nt >= 2)
        g->temperature_c = prov_parse_num(tok[1]);
    if (nt >= 3)
        prov_span_copy(g->perf, sizeof g->perf, tok[2]);
    for (size_t i = 1; i + 1 < nt; i++) {
        if (prov_span_eq(tok[i], "/")) {
            g->power_w = prov_parse_num(tok[i - 1]);
            g->power_cap_w = prov_parse_num(tok[i + 1]);
            break;
        }
    }
    if (nc >= 2) {
        prov_span_t mem[2];
        if (prov_split_ch(cells[1], '/', mem, 2) == 2) {
            g->mem_used_mib = prov_parse_num(mem[0]);
            g->mem_total_mib = prov_parse_num(mem[1]);
        }
    }
    if (nc >= 3) {
        nt = prov_split_ws(cells[2], tok, MAX_TOK);
        if (nt >= 1)
            g->util_gpu_pct = prov_parse_num(tok[0]);
    }
    c->gpu_row = 3;
}

static void gpu_row3(smi_ctx_t *c, prov_span_t *cells, size_t nc)
{
    prov_smi_gpu_t *g = &c->out->gpus[c->out->ngpus - 1];
    if (nc >= 3)
        g->mig_enabled = prov_parse_flag(cells[2]);
    c->gpu_row = 0;
}

static int mig_row(smi_ctx_t *c, prov_span_t *cells, size_t nc)
{
    prov_smi_t *o = c->out;
    prov_span_t tok[MAX_TOK];
    size_t nt = prov_split_ws(cells[0], tok, MAX_TOK);
    if (nt != 4)
        return 0;
    long v[4];
    for (size_t i = 0; i < 4; i++)
        if ((v[i] = prov_parse_uint(tok[i])) < 0)
            return 0;
    if (prov_grow((void **)&o->mig, &c->mcap, o->nmig + 1, sizeof *o->mig))
        return -1;
    prov_smi_mig_t *m = &o->mig[o->nmig++];
    m->gpu = (int)v[0];
    m->gi = (int)v[1];
    m->ci = (int)v[2];
    m->mig_dev = (int)v[3];
    if (nc >= 2) {
        prov_span_t mem[2];
        if (prov_split_ch(cells[1], '/', mem, 2) == 2) {
            m->mem_used_mib = prov_parse_num(mem[0]);
            m->mem_total_mib = prov_parse_num(mem[1]);
        }
    }
    if (nc >= 3 && prov_split_ws(cells[2], tok, MAX_TOK) >= 1)
        m->sm = prov_parse_num(tok[0]);
    return 0;
}

static int proc_row(smi_ctx_t *c, prov_span_t *cells, size_t nc)
{
    prov_smi_t *o = c->out;
    (void)nc;
    prov_span_t tok[MAX_TOK];
    size_t nt = prov_split_ws(cells[0], tok, MAX_TOK);
    size_t ids = c->proc_has_gi ? 3 : 1;
    if (nt < ids + 3)
        return 0; /* "No running processes found" and friends */
    long gpu = prov_parse_uint(tok[0]);
    if (gpu < 0)
        return 0;
    if (prov_grow((void **)&o->procs, &c->pcap, o->nprocs + 1, sizeof *o->procs))
        return -1;
    prov_smi_proc_t *p = &o->procs[o->nprocs++];
    p->gpu = (int)gpu;
    if (c->proc_has_gi) {
        p->gi = prov_parse_num(tok[1]);
        p->ci = prov_parse_num(tok[2]);
    }
    p->pid = prov_parse_num(tok[ids]);
    prov_span_copy(p->type, sizeof p->type, tok[ids + 1]);
    prov_span_t last = tok[nt - 1];
    p->mem_mib = prov_parse_num(last);
    if (nt > ids + 3) {
        const char *st = tok[ids + 2].p;
        prov_span_copy(p->name, sizeof p->name, prov_trim(prov_span(st, (size_t)(last.p - st))));
    }
    return 0;
}

int prov_smi_parse(const char *text, size_t len, prov_smi_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    smi_ctx_t c = {.out = out};
    enum section sec = SEC_NONE;
    int rc = -1;
    bool have_hdr = false;
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        if (!have_hdr && prov_span_find(t, "Driver Version:") >= 0) {
            labelled(t, "NVIDIA-SMI ", out->smi_version, sizeof out->smi_version);
            labelled(t, "Driver Version:", out->driver_version, sizeof out->driver_version);
            labelled(t, "CUDA Version:", out->cuda_version, sizeof out->cuda_version);
            have_hdr = out->driver_version[0] != '\0';
            continue;
        }
        if (t.n == 0 || (t.p[0] != '|' && t.p[0] != '+')) {
            sec = SEC_NONE; /* blank or foreign line ends a table */
            continue;
        }
        if (prov_span_find(t, "MIG devices:") >= 0) {
            sec = SEC_MIG_HDR;
            continue;
        }
        if (prov_span_find(t, "Processes:") >= 0) {
            sec = SEC_PROC_HDR;
            c.proc_has_gi = false;
            continue;
        }
        if (sec == SEC_NONE && prov_span_find(t, "GPU  Name") >= 0) {
            sec = SEC_GPU_HDR;
            continue;
        }
        if (prov_span_starts(t, "|=") || prov_span_starts(t, "+=")) {
            if (sec == SEC_GPU_HDR)
                sec = SEC_GPU;
            else if (sec == SEC_MIG_HDR)
                sec = SEC_MIG;
            else if (sec == SEC_PROC_HDR) {
                sec = SEC_PROC;
                out->procs_section = true;
            }
            continue;
        }
        if (sec == SEC_PROC_HDR && prov_span_find(t, " GI ") >= 0)
            c.proc_has_gi = true;
        if (prov_span_starts(t, "+-") || prov_span_starts(t, "|-")) {
            c.gpu_row = 0;
            continue;
        }
        if (t.p[0] != '|')
            continue;
        prov_span_t cells[MAX_CELLS];
        size_t nc = split_cells(t, cells);
        int r = 0;
        switch (sec) {
        case SEC_GPU:
            if (c.gpu_row == 0 || c.gpu_row == 3) {
                size_t before = out->ngpus;
                if (gpu_row1(&c, cells, nc) < 0) {
                    r = -1;
                } else if (out->ngpus > before) {
                    mark_err(&c, t);
                } else if (c.gpu_row == 3 && out->ngpus) {
                    mark_err(&c, t);
                    gpu_row3(&c, cells, nc);
                }
            } else if (c.gpu_row == 2) {
                mark_err(&c, t);
                gpu_row2(&c, cells, nc);
            }
            break;
        case SEC_MIG: r = mig_row(&c, cells, nc); break;
        case SEC_PROC: r = proc_row(&c, cells, nc); break;
        default: break;
        }
        if (r < 0) {
            prov_err_set(err, it.lineno, 0, "too many table rows");
            goto cleanup;
        }
    }
    if (!have_hdr) {
        prov_err_set(err, 0, 0, "not nvidia-smi table output: no 'Driver Version:' header found");
        goto cleanup;
    }
    if (out->ngpus == 0) {
        prov_err_set(err, 0, 0, "no GPU rows found in the nvidia-smi table");
        goto cleanup;
    }
    for (size_t i = 0; i < out->ngpus; i++)
        if (out->gpus[i].err)
            out->gpus_with_err++;
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_smi_free);
}

void prov_smi_free(prov_smi_t *s)
{
    PROV_RELEASE(s, s->gpus, s->mig, s->procs);
}

json_t *prov_smi_to_json(const prov_smi_t *s)
{
    assert(s);
    json_t *root = json_object(), *gpus = json_array(), *mig = json_array(), *procs = json_array();
    if (!root || !gpus || !mig || !procs) {
        json_decref(root);
        json_decref(gpus);
        json_decref(mig);
        json_decref(procs);
        return NULL;
    }
    json_object_set_new(root, "smi_version", prov_str_json(s->smi_version));
    json_object_set_new(root, "driver_version", prov_str_json(s->driver_version));
    json_object_set_new(root, "cuda_version", prov_str_json(s->cuda_version));
    for (size_t i = 0; i < s->ngpus; i++) {
        const prov_smi_gpu_t *g = &s->gpus[i];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer(g->index));
        json_object_set_new(o, "name", prov_str_json(g->name));
        json_object_set_new(o, "name_truncated", json_boolean(g->name_truncated));
        json_object_set_new(o, "bus_id", prov_str_json(g->bus_id));
        json_object_set_new(o, "mode", prov_str_json(g->mode));
        json_object_set_new(o, "memory_used_mib", prov_num_json(g->mem_used_mib));
        json_object_set_new(o, "memory_total_mib", prov_num_json(g->mem_total_mib));
        json_object_set_new(o, "temperature_c", prov_num_json(g->temperature_c));
        json_object_set_new(o, "utilization_gpu_pct", prov_num_json(g->util_gpu_pct));
        json_object_set_new(o, "power_w", prov_num_json(g->power_w));
        json_object_set_new(o, "power_cap_w", prov_num_json(g->power_cap_w));
        json_object_set_new(o, "ecc_uncorrected", prov_num_json(g->ecc_uncorr));
        json_object_set_new(o, "mig_enabled", prov_flag_json(g->mig_enabled));
        json_object_set_new(o, "err", json_boolean(g->err));
        json_object_set_new(o, "err_fields", json_integer(g->err_fields));
        json_array_append_new(gpus, o);
    }
    for (size_t i = 0; i < s->nmig; i++) {
        const prov_smi_mig_t *m = &s->mig[i];
        json_array_append_new(mig, json_pack("{s:i,s:i,s:i,s:i,s:o,s:o,s:o}", "gpu", m->gpu, "gi",
                                             m->gi, "ci", m->ci, "mig_dev", m->mig_dev,
                                             "memory_used_mib", prov_num_json(m->mem_used_mib),
                                             "memory_total_mib", prov_num_json(m->mem_total_mib),
                                             "sm", prov_num_json(m->sm)));
    }
    for (size_t i = 0; i < s->nprocs; i++) {
        const prov_smi_proc_t *p = &s->procs[i];
        json_array_append_new(
            procs, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "gpu", p->gpu, "gi",
                             prov_num_json(p->gi), "ci", prov_num_json(p->ci), "pid",
                             prov_num_json(p->pid), "type", prov_str_json(p->type), "name",
                             prov_str_json(p->name), "memory_mib", prov_num_json(p->mem_mib)));
    }
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "gpus_with_err", json_integer(s->gpus_with_err));
    json_object_set_new(root, "mig_devices", mig);
    json_object_set_new(root, "processes", procs);
    return root;
}
