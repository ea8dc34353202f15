/* gate_inventory.c — the gpu_inventory judge: the --query-gpu rows and the default table,
 * every field read or named as unread, the catalog's not-applicable fields. */
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

#define NINV PROV_INV_NFIELDS

static int bad_state(prov_vstate_t st)
{
    return st == PROV_V_UNKNOWN_ERROR || st == PROV_V_ERR;
}

/* 1 when field is in the gate's comma-separated na_fields. */
static int na_allowed(const struct prov_gate *g, const char *field)
{
    size_t fl = strlen(field);
    for (const char *p = g->na_fields; p && *p;) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, ","), m = n;
        while (m > 0 && p[m - 1] == ' ')
            m--;
        if (m == fl && strncmp(p, field, fl) == 0)
            return 1;
        p += n;
    }
    return 0;
}

/* The inventory's findings, each part of the message naming the GPU. */
struct inv {
    const struct prov_gate *g;
    const prov_qgpu_t *q;
    char hw[400], unread[400], config[400];
    json_t *not_applicable; /* field names, each once */
    json_t *unread_list;    /* {gpu, field, read} */
};

enum reading { READ, NOT_APPLICABLE, NOT_READ };

static int index_ok(const prov_qgpu_row_t *row)
{
    return row->index.st == PROV_V_OK && row->index.v >= 0 && row->index.v < 4096 &&
           row->index.v == floor(row->index.v);
}

/* "GPU-…" or "MIG-…" with hex digits and dashes. */
static int uuid_ok(const char *u)
{
    return (strncmp(u, "GPU-", 4) == 0 || strncmp(u, "MIG-", 4) == 0) && u[4] != '\0' &&
           strspn(u + 4, "0123456789abcdefABCDEF-") == strlen(u + 4);
}

/* Whether the value of field in row i can be judged: read (state OK and usable), not
 * applicable (an N/A the catalog allows for this model: noted), or not read (noted, to
 * investigate: [N/A], [Not Supported], [Unknown Error], garbage — never hardware). */
static enum reading reading(struct inv *v, size_t i, const char *label, int field, prov_vstate_t st,
                            int usable)
{
    const char *name = prov_inv_fields[field];
    if (st == PROV_V_OK && usable)
        return READ;
    if ((st == PROV_V_NA || st == PROV_V_NOT_SUPPORTED) && na_allowed(v->g, name)) {
        size_t k;
        json_t *e;
        json_array_foreach(v->not_applicable, k, e)
        {
            if (strcmp(json_string_value(e), name) == 0)
                return NOT_APPLICABLE;
        }
        json_array_append_new(v->not_applicable, json_string(name));
        return NOT_APPLICABLE;
    }
    char buf[48];
    const char *raw = gate_quote(prov_qgpu_cell(v->q, i, name), buf, sizeof buf);
    /* Not read is not evidence either way: investigate, whatever the field. Hardware
     * evidence needs a reading that says so (ERR! in the default table, a count > 0, a
     * pending Yes). */
    gate_addf(v->unread, sizeof v->unread, "%s: %s read %s", label, name, raw);
    json_array_append_new(v->unread_list, json_pack("{s:s, s:s, s:o}", "gpu", label, "field", name,
                                                    "read", gate_jtext(raw)));
    return NOT_READ;
}

/* A field a rule compares with the gate's expectation: 1 when it was read, so the
 * comparison can be made. Without an expectation no rule needs it. */
static int compared(struct inv *v, size_t i, const char *label, int field, prov_vstate_t st,
                    int expected, int usable)
{
    return expected && reading(v, i, label, field, st, usable) == READ;
}

static json_t *inv_row(struct inv *v, size_t i)
{
    const struct prov_gate *g = v->g;
    const prov_qgpu_row_t *row = &v->q->rows[i];
    char label[40], name[PROV_NAME_MAX], driver[PROV_VER_MAX];
    if (index_ok(row))
        snprintf(label, sizeof label, "GPU %d", (int)row->index.v);
    else
        snprintf(label, sizeof label, "the GPU in row %zu", i + 1);
    utf8_clean(row->name, strlen(row->name), name, sizeof name);
    utf8_clean(row->driver_version, strlen(row->driver_version), driver, sizeof driver);

    int idx = reading(v, i, label, F_INDEX, row->index.st, index_ok(row)) == READ;
    int uuid = reading(v, i, label, F_UUID, row->uuid_st, uuid_ok(row->uuid)) == READ;
    for (size_t k = 0; k < i; k++) {
        const prov_qgpu_row_t *o = &v->q->rows[k];
        if (idx && index_ok(o) && o->index.v == row->index.v)
            gate_addf(v->unread, sizeof v->unread, "GPU index %d appears twice", (int)row->index.v);
        if (uuid && strcmp(o->uuid, row->uuid) == 0)
            gate_addf(v->unread, sizeof v->unread, "%s: uuid %s appears twice", label, row->uuid);
    }
    if (compared(v, i, label, F_NAME, row->name_st, g->expected_gpu_name != NULL, 1) &&
        strcmp(row->name, g->expected_gpu_name) != 0)
        gate_addf(v->config, sizeof v->config, "%s is %s, expected %s", label, name,
                  g->expected_gpu_name);
    const prov_num_t *mem = &row->mem_total_mib;
    double want = (double)g->expected_memory_mib;
    if (compared(v, i, label, F_MEMORY, mem->st, want > 0, mem->v > 0) &&
        fabs(mem->v - want) > 0.02 * want)
        gate_addf(v->config, sizeof v->config, "%s has %.0f MiB, expected %ld", label, mem->v,
                  g->expected_memory_mib);
    if (compared(v, i, label, F_DRIVER, row->driver_st, g->driver_version != NULL, 1) &&
        strcmp(row->driver_version, g->driver_version) != 0)
        gate_addf(v->config, sizeof v->config, "%s runs driver %s, the stack pins %s", label,
                  driver, g->driver_version);
    /* health: always needed */
    const prov_num_t *ecc = &row->ecc_uncorr_volatile;
    int ecc_bad = reading(v, i, label, F_ECC, ecc->st, ecc->v >= 0) == READ && ecc->v > 0;
    int retired = reading(v, i, label, F_RETIRED, row->retired_pending.st, 1) == READ &&
                  row->retired_pending.v;
    int remapped = reading(v, i, label, F_REMAPPED, row->remapped_pending.st, 1) == READ &&
                   row->remapped_pending.v;
    if (ecc_bad)
        gate_addf(v->hw, sizeof v->hw, "%s: %.0f uncorrectable ECC errors", label, ecc->v);
    if (retired)
        gate_addf(v->hw, sizeof v->hw, "%s: pending page retirement", label);
    if (remapped)
        gate_addf(v->hw, sizeof v->hw, "%s: pending row remap", label);
    int errors = bad_state(ecc->st) || bad_state(row->retired_pending.st) ||
                 bad_state(row->remapped_pending.st) || bad_state(mem->st);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b}", "index",
                     idx ? json_integer((json_int_t)row->index.v) : json_null(), "name",
                     row->name_st == PROV_V_OK ? gate_jtext(name) : json_null(), "uuid",
                     row->uuid_st == PROV_V_OK ? gate_jtext(row->uuid) : json_null(), "memory_mib",
                     mem->st == PROV_V_OK && fabs(mem->v) < 1e15 ? json_integer((json_int_t)mem->v)
                                                                 : json_null(),
                     "driver_version",
                     row->driver_st == PROV_V_OK ? gate_jtext(driver) : json_null(),
                     "uncorrectable_ecc", ecc_bad, "retired_pages_pending", retired,
                     "remapped_rows_pending", remapped, "error_readings", errors);
}

/* Closed GPU blocks of the default table: "+---+---+---+" borders after the "|===" header
 * line, before "MIG devices:" or "Processes:". A block without its border was cut off. */
static size_t smi_closed_blocks(const char *t)
{
    size_t n = 0;
    int in_gpus = 0;
    for (const char *l = t; *l; l += strcspn(l, "\n"), l += *l == '\n') {
        size_t len = strcspn(l, "\n");
        if (!in_gpus) {
            in_gpus = len >= 2 && l[0] == '|' && l[1] == '=';
            continue;
        }
        if (memmem(l, len, "MIG devices:", 12) || memmem(l, len, "Processes:", 10))
            break;
        size_t plus = 0;
        for (size_t k = 0; k < len; k++)
            plus += l[k] == '+';
        n += l[0] == '+' && plus >= 3;
    }
    return n;
}

/* The default table: ERR! cells (hardware), or what could not be read of it. */
static json_t *inv_table(struct inv *v, const struct prov_cmd_result *r, size_t nquery)
{
    json_t *err_gpus = json_array();
    char line[160];
    prov_smi_t smi;
    prov_err_t perr;
    const char *t = gate_out_of(r);
    if (!r->ran || r->exit_status != 0) {
        gate_addf(v->unread, sizeof v->unread, "the nvidia-smi table was not read (exit %d): %s",
                  r->exit_status, gate_quote(gate_text_of(r), line, sizeof line));
        return err_gpus;
    }
    if (prov_smi_parse(t, strlen(t), &smi, &perr) != 0) {
        gate_addf(v->unread, sizeof v->unread, "the nvidia-smi table is unreadable: %s",
                  gate_quote(perr.msg, line, sizeof line));
        return err_gpus;
    }
    for (size_t i = 0; i < smi.ngpus; i++)
        if (smi.gpus[i].err)
            json_array_append_new(err_gpus, json_integer(smi.gpus[i].index));
    size_t closed = smi_closed_blocks(t);
    if (smi.ngpus != nquery)
        gate_addf(v->unread, sizeof v->unread,
                  "the nvidia-smi table shows %zu GPU(s), the query %zu", smi.ngpus, nquery);
    else if (closed < smi.ngpus)
        gate_addf(v->unread, sizeof v->unread,
                  "the nvidia-smi table is cut off after %zu of %zu GPU(s)", closed, smi.ngpus);
    prov_smi_free(&smi);
    if (json_array_size(err_gpus) > 0)
        gate_addf(v->hw, sizeof v->hw, "ERR! on %zu GPU(s) in nvidia-smi",
                  json_array_size(err_gpus));
    else if (strstr(t, "ERR!") != NULL)
        gate_addf(v->unread, sizeof v->unread,
                  "ERR! in the nvidia-smi table outside the GPUs it lists");
    return err_gpus;
}

/* ", model, memory and driver as expected" — what this gate compared. */
static void compared_list(const struct prov_gate *g, char *buf, size_t n)
{
    const char *items[3];
    int k = 0;
    if (g->expected_gpu_name)
        items[k++] = "model";
    if (g->expected_memory_mib > 0)
        items[k++] = "memory";
    if (g->driver_version)
        items[k++] = "driver";
    if (k == 0)
        snprintf(buf, n, "%s", "");
    else if (k == 1)
        snprintf(buf, n, ", %s as expected", items[0]);
    else if (k == 2)
        snprintf(buf, n, ", %s and %s as expected", items[0], items[1]);
    else
        snprintf(buf, n, ", %s, %s and %s as expected", items[0], items[1], items[2]);
}

void gate_eval_inventory(const struct prov_gate *g, const struct prov_cmd_result *r,
                         struct prov_check_out *o)
{
    char line[200];
    if (!r[0].ran || r[0].exit_status != 0) {
        prov_nvsmi_error_t e;
        const char *t = gate_text_of(&r[0]);
        prov_nvsmi_error_classify(t, strlen(t), r[0].ran ? r[0].exit_status : -1, &e);
        int hw = e.reason == PROV_NVSMI_NO_DEVICES || e.reason == PROV_NVSMI_GPU_LOST;
        o->values = json_pack("{s:s}", "nvidia_smi_error", prov_nvsmi_reason_name(e.reason));
        gate_set(o, PLAN_CHECK_FAIL, hw, "nvidia-smi failed (%s): %s",
                 prov_nvsmi_reason_name(e.reason), gate_quote(t, line, sizeof line));
        return;
    }
    prov_qgpu_t q;
    prov_err_t perr;
    const char *out = gate_out_of(&r[0]);
    if (prov_qgpu_parse(out, strlen(out), prov_inv_fields, NINV, &q, &perr) != 0) {
        gate_set(o, PLAN_CHECK_FAIL, 0, "cannot parse the GPU inventory: %s",
                 gate_quote(perr.msg, line, sizeof line));
        return;
    }
    struct inv v = {.g = g, .q = &q};
    v.not_applicable = json_array();
    v.unread_list = json_array();
    json_t *gpus = json_array();
    size_t n = q.nrows;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(gpus, inv_row(&v, i));
    prov_qgpu_free(&q);
    json_t *err_gpus = inv_table(&v, &r[1], n);
    o->values = json_pack("{s:I, s:i, s:o, s:o, s:o, s:o}", "gpu_count", (json_int_t)n,
                          "expected_gpus", g->expected_gpus, "gpus", gpus, "err_gpus", err_gpus,
                          "not_applicable", v.not_applicable, "unread", v.unread_list);
    char counts[96], rest[1300] = "";
    snprintf(counts, sizeof counts, "%zu of %d expected GPU(s)", n, g->expected_gpus);
    if (v.hw[0])
        gate_addf(rest, sizeof rest, "%s", v.hw);
    if (v.unread[0])
        gate_addf(rest, sizeof rest, "%s", v.unread);
    if (v.config[0])
        gate_addf(rest, sizeof rest, "%s", v.config);
    if (n == 0) {
        gate_set(o, PLAN_CHECK_FAIL, 0, "nvidia-smi --query-gpu listed no GPU%s%s",
                 rest[0] ? "; " : "", rest);
    } else if ((int)n < g->expected_gpus) {
        gate_set(o, PLAN_CHECK_FAIL, 1, "missing GPU: %s%s%s", counts, rest[0] ? "; " : "", rest);
    } else if (v.hw[0]) {
        gate_set(o, PLAN_CHECK_FAIL, 1, "%s: %s", counts, rest);
    } else if (rest[0] || (int)n > g->expected_gpus) {
        gate_set(o, PLAN_CHECK_FAIL, 0, "%s: %s", counts,
                 rest[0] ? rest : "more GPUs than the pool expects");
    } else {
        char what[64], na[300] = "";
        compared_list(g, what, sizeof what);
        size_t k;
        json_t *e;
        json_array_foreach(v.not_applicable, k, e)
        {
            gate_addf(na, sizeof na, "%s", json_string_value(e));
        }
        gate_set(o, PLAN_CHECK_PASS, 0, "%s%s, no error readings%s%s", counts, what,
                 na[0] ? "; not reported by this model (allowed by the catalog): " : "", na);
    }
}
