/* gate_checks.c — see gate_checks.h. */
#include "provisioner/gate_checks.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/sbuf.h"
#include "common/utf8.h"
#include "provisioner/parse.h"
#include "provisioner/shell.h"

const char *const prov_check_names[] = {"gpu_inventory", "container_gpu", "workload",   "topology",
                                        "storage",       "observability", "diagnostics"};

#define STORAGE_MIB 16 /* written, fsynced, read back and checksummed in each path */

const char *const prov_inv_fields[] = {"index",
                                       "name",
                                       "uuid",
                                       "memory.total",
                                       "driver_version",
                                       "pci.bus_id",
                                       "ecc.errors.uncorrected.volatile.total",
                                       "retired_pages.pending",
                                       "remapped_rows.pending"};
#define NINV PROV_INV_NFIELDS

/* Indexes into prov_inv_fields. */
enum { F_INDEX, F_NAME, F_UUID, F_MEMORY, F_DRIVER, F_BUS, F_ECC, F_RETIRED, F_REMAPPED };

static const char *text_of(const struct prov_cmd_result *r)
{
    return r->err && *r->err ? r->err : r->out ? r->out : "";
}

static const char *out_of(const struct prov_cmd_result *r)
{
    return r->out ? r->out : "";
}

/* The message is formatted, then cleaned: valid UTF-8 whatever went into it. */
static void set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt, ...)
{
    char buf[2 * sizeof o->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->status = st;
    o->hardware_evidence = hw;
    utf8_clean(buf, strlen(buf), o->message, sizeof o->message);
}

/* Appends one part to the "; "-separated text in buf[cap]; a part that does not fit is
 * left out, marked once by "…" (room for which is always kept). Parts are never cut. */
static void addf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void addf(char *buf, size_t cap, const char *fmt, ...)
{
    static const char more[] = "…";
    char part[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof part, fmt, ap);
    va_end(ap);
    size_t used = strlen(buf), len = strlen(part);
    int marked = used >= sizeof more - 1 && strcmp(buf + used - (sizeof more - 1), more) == 0;
    if (used + 2 + len + sizeof more <= cap)
        snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", part);
    else if (!marked && used + 2 + sizeof more <= cap)
        snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", more);
}

/* Host text as a JSON string (cleaned), or null for NULL. */
static json_t *jtext(const char *s)
{
    return s ? utf8_json(s, strlen(s)) : json_null();
}

/* Host text bounded to a short cleaned quote; "nothing" when empty. */
static const char *quote(const char *s, char *buf, size_t n)
{
    utf8_first_line(s, buf, n);
    return buf[0] ? buf : "nothing";
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

enum prov_cmd_class prov_check_cmd_class(const struct prov_gate *g, enum prov_check c, int i)
{
    (void)g;
    (void)i;
    switch (c) {
    case PROV_CHECK_CONTAINER_GPU:
    case PROV_CHECK_WORKLOAD: return PROV_CMD_WORKLOAD; /* docker run of the pinned image */
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
        snprintf(level, sizeof level, "%d",
                 g->diag_level >= 1 && g->diag_level <= 3 ? g->diag_level : 1);
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
    const char *raw = quote(prov_qgpu_cell(v->q, i, name), buf, sizeof buf);
    /* Not read is not evidence either way: investigate, whatever the field. Hardware
     * evidence needs a reading that says so (ERR! in the default table, a count > 0, a
     * pending Yes). */
    addf(v->unread, sizeof v->unread, "%s: %s read %s", label, name, raw);
    json_array_append_new(v->unread_list, json_pack("{s:s, s:s, s:o}", "gpu", label, "field", name,
                                                    "read", jtext(raw)));
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
            addf(v->unread, sizeof v->unread, "GPU index %d appears twice", (int)row->index.v);
        if (uuid && strcmp(o->uuid, row->uuid) == 0)
            addf(v->unread, sizeof v->unread, "%s: uuid %s appears twice", label, row->uuid);
    }
    if (compared(v, i, label, F_NAME, row->name_st, g->expected_gpu_name != NULL, 1) &&
        strcmp(row->name, g->expected_gpu_name) != 0)
        addf(v->config, sizeof v->config, "%s is %s, expected %s", label, name,
             g->expected_gpu_name);
    const prov_num_t *mem = &row->mem_total_mib;
    double want = (double)g->expected_memory_mib;
    if (compared(v, i, label, F_MEMORY, mem->st, want > 0, mem->v > 0) &&
        fabs(mem->v - want) > 0.02 * want)
        addf(v->config, sizeof v->config, "%s has %.0f MiB, expected %ld", label, mem->v,
             g->expected_memory_mib);
    if (compared(v, i, label, F_DRIVER, row->driver_st, g->driver_version != NULL, 1) &&
        strcmp(row->driver_version, g->driver_version) != 0)
        addf(v->config, sizeof v->config, "%s runs driver %s, the stack pins %s", label, driver,
             g->driver_version);
    /* health: always needed */
    const prov_num_t *ecc = &row->ecc_uncorr_volatile;
    int ecc_bad = reading(v, i, label, F_ECC, ecc->st, ecc->v >= 0) == READ && ecc->v > 0;
    int retired = reading(v, i, label, F_RETIRED, row->retired_pending.st, 1) == READ &&
                  row->retired_pending.v;
    int remapped = reading(v, i, label, F_REMAPPED, row->remapped_pending.st, 1) == READ &&
                   row->remapped_pending.v;
    if (ecc_bad)
        addf(v->hw, sizeof v->hw, "%s: %.0f uncorrectable ECC errors", label, ecc->v);
    if (retired)
        addf(v->hw, sizeof v->hw, "%s: pending page retirement", label);
    if (remapped)
        addf(v->hw, sizeof v->hw, "%s: pending row remap", label);
    int errors = bad_state(ecc->st) || bad_state(row->retired_pending.st) ||
                 bad_state(row->remapped_pending.st) || bad_state(mem->st);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b}", "index",
                     idx ? json_integer((json_int_t)row->index.v) : json_null(), "name",
                     row->name_st == PROV_V_OK ? jtext(name) : json_null(), "uuid",
                     row->uuid_st == PROV_V_OK ? jtext(row->uuid) : json_null(), "memory_mib",
                     mem->st == PROV_V_OK && fabs(mem->v) < 1e15 ? json_integer((json_int_t)mem->v)
                                                                 : json_null(),
                     "driver_version", row->driver_st == PROV_V_OK ? jtext(driver) : json_null(),
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
    const char *t = out_of(r);
    if (!r->ran || r->exit_status != 0) {
        addf(v->unread, sizeof v->unread, "the nvidia-smi table was not read (exit %d): %s",
             r->exit_status, quote(text_of(r), line, sizeof line));
        return err_gpus;
    }
    if (prov_smi_parse(t, strlen(t), &smi, &perr) != 0) {
        addf(v->unread, sizeof v->unread, "the nvidia-smi table is unreadable: %s",
             quote(perr.msg, line, sizeof line));
        return err_gpus;
    }
    for (size_t i = 0; i < smi.ngpus; i++)
        if (smi.gpus[i].err)
            json_array_append_new(err_gpus, json_integer(smi.gpus[i].index));
    size_t closed = smi_closed_blocks(t);
    if (smi.ngpus != nquery)
        addf(v->unread, sizeof v->unread, "the nvidia-smi table shows %zu GPU(s), the query %zu",
             smi.ngpus, nquery);
    else if (closed < smi.ngpus)
        addf(v->unread, sizeof v->unread, "the nvidia-smi table is cut off after %zu of %zu GPU(s)",
             closed, smi.ngpus);
    prov_smi_free(&smi);
    if (json_array_size(err_gpus) > 0)
        addf(v->hw, sizeof v->hw, "ERR! on %zu GPU(s) in nvidia-smi", json_array_size(err_gpus));
    else if (strstr(t, "ERR!") != NULL)
        addf(v->unread, sizeof v->unread, "ERR! in the nvidia-smi table outside the GPUs it lists");
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

static void eval_inventory(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o)
{
    char line[200];
    if (!r[0].ran || r[0].exit_status != 0) {
        prov_nvsmi_error_t e;
        const char *t = text_of(&r[0]);
        prov_nvsmi_error_classify(t, strlen(t), r[0].ran ? r[0].exit_status : -1, &e);
        int hw = e.reason == PROV_NVSMI_NO_DEVICES || e.reason == PROV_NVSMI_GPU_LOST;
        o->values = json_pack("{s:s}", "nvidia_smi_error", prov_nvsmi_reason_name(e.reason));
        set(o, PLAN_CHECK_FAIL, hw, "nvidia-smi failed (%s): %s", prov_nvsmi_reason_name(e.reason),
            quote(t, line, sizeof line));
        return;
    }
    prov_qgpu_t q;
    prov_err_t perr;
    const char *out = out_of(&r[0]);
    if (prov_qgpu_parse(out, strlen(out), prov_inv_fields, NINV, &q, &perr) != 0) {
        set(o, PLAN_CHECK_FAIL, 0, "cannot parse the GPU inventory: %s",
            quote(perr.msg, line, sizeof line));
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
        addf(rest, sizeof rest, "%s", v.hw);
    if (v.unread[0])
        addf(rest, sizeof rest, "%s", v.unread);
    if (v.config[0])
        addf(rest, sizeof rest, "%s", v.config);
    if (n == 0) {
        set(o, PLAN_CHECK_FAIL, 0, "nvidia-smi --query-gpu listed no GPU%s%s", rest[0] ? "; " : "",
            rest);
    } else if ((int)n < g->expected_gpus) {
        set(o, PLAN_CHECK_FAIL, 1, "missing GPU: %s%s%s", counts, rest[0] ? "; " : "", rest);
    } else if (v.hw[0]) {
        set(o, PLAN_CHECK_FAIL, 1, "%s: %s", counts, rest);
    } else if (rest[0] || (int)n > g->expected_gpus) {
        set(o, PLAN_CHECK_FAIL, 0, "%s: %s", counts,
            rest[0] ? rest : "more GPUs than the pool expects");
    } else {
        char what[64], na[300] = "";
        compared_list(g, what, sizeof what);
        size_t k;
        json_t *e;
        json_array_foreach(v.not_applicable, k, e)
        {
            addf(na, sizeof na, "%s", json_string_value(e));
        }
        set(o, PLAN_CHECK_PASS, 0, "%s%s, no error readings%s%s", counts, what,
            na[0] ? "; not reported by this model (allowed by the catalog): " : "", na);
    }
}

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

static void eval_container(const struct prov_gate *g, const struct prov_cmd_result *r,
                           struct prov_check_out *o)
{
    char line[200];
    if (!r->ran || r->exit_status != 0) {
        prov_ctr_error_t e;
        const char *t = text_of(r);
        prov_ctr_classify(t, strlen(t), r->ran ? r->exit_status : -1, &e);
        o->values = json_pack("{s:s}", "reason", prov_ctr_reason_name(e.reason));
        set(o, PLAN_CHECK_FAIL, 0, "a container cannot use the GPUs (%s): %s",
            prov_ctr_reason_name(e.reason), quote(e.matched[0] ? e.matched : t, line, sizeof line));
        return;
    }
    prov_list_t l;
    prov_err_t perr;
    const char *out = out_of(r);
    if (prov_list_parse(out, strlen(out), &l, &perr) != 0) {
        o->values = json_pack("{s:n, s:i}", "gpus_seen", "expected_gpus", g->expected_gpus);
        char first[100];
        set(o, PLAN_CHECK_FAIL, 0,
            "the container's nvidia-smi -L output could not be read (%s): %s",
            quote(perr.msg, line, sizeof line), quote(out, first, sizeof first));
        return;
    }
    size_t n = l.ngpus, complete = list_complete_lines(out);
    prov_list_free(&l);
    o->values =
        json_pack("{s:I, s:i}", "gpus_seen", (json_int_t)n, "expected_gpus", g->expected_gpus);
    if (complete != n)
        set(o, PLAN_CHECK_FAIL, 0,
            "the container's nvidia-smi -L lists %zu GPU(s), %zu of them without a readable "
            "(UUID: …)",
            n, n - (complete < n ? complete : n));
    else if ((int)n != g->expected_gpus)
        set(o, PLAN_CHECK_FAIL, 0, "a container from the pinned image sees %zu of %d GPU(s)", n,
            g->expected_gpus);
    else
        set(o, PLAN_CHECK_PASS, 0, "a container from the pinned image sees %zu of %d GPU(s)", n,
            g->expected_gpus);
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
    const char *metric =
        g->workload_metric && *g->workload_metric ? g->workload_metric : "throughput";
    if (!r->ran || r->exit_status != 0) {
        set(o, PLAN_CHECK_FAIL, 0, "the workload failed: %s", quote(text_of(r), line, sizeof line));
        return;
    }
    double v;
    if (!find_metric(out_of(r), metric, &v)) {
        o->values = json_pack("{s:o, s:n}", "metric", jtext(metric), "value");
        set(o, PLAN_CHECK_FAIL, 0, "the workload did not report %s (expected a line %s=<number>)",
            metric, metric);
        return;
    }
    o->values = json_pack("{s:o, s:f, s:f}", "metric", jtext(metric), "value", v, "min",
                          isfinite(g->workload_min) ? g->workload_min : 0.0);
    if (v >= g->workload_min)
        set(o, PLAN_CHECK_PASS, 0, "%s = %g (minimum %g)", metric, v, g->workload_min);
    else
        set(o, PLAN_CHECK_FAIL, 0, "below threshold: %s = %g (minimum %g)", metric, v,
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

static void eval_topology(const struct prov_gate *g, const struct prov_cmd_result *r,
                          struct prov_check_out *o)
{
    char line[200];
    prov_topo_t t;
    prov_err_t perr;
    const char *out = out_of(&r[0]);
    if (!r[0].ran || r[0].exit_status != 0 || prov_topo_parse(out, strlen(out), &t, &perr) != 0) {
        quote(r[0].ran && r[0].exit_status == 0 ? perr.msg : text_of(&r[0]), line, sizeof line);
        set(o, PLAN_CHECK_FAIL, 0, "nvidia-smi topo -m failed or is unreadable: %s", line);
        return;
    }
    json_t *nvlink = json_null();
    prov_nvlink_t nl;
    const char *nvout = out_of(&r[1]);
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
                          "expected_link", jtext(expected), "failing_pairs", (json_int_t)bad,
                          "unreadable_pairs", (json_int_t)unread, "min_nvlinks",
                          prov_topo_min_nvlinks(&t), "nvlink", nvlink);
    char l1[PROV_LINK_MAX * 3 + 8], l2[PROV_LINK_MAX * 3 + 8];
    if (t.p2p) {
        set(o, PLAN_CHECK_FAIL, 0,
            "nvidia-smi topo -m printed a P2P status matrix, not link "
            "classes: the links were not read");
    } else if ((int)t.ngpus != g->expected_gpus) {
        set(o, PLAN_CHECK_FAIL, 1, "the topology shows %zu GPU(s), expected %d", t.ngpus,
            g->expected_gpus);
    } else if (bad > 0) {
        set(o, PLAN_CHECK_FAIL, 1,
            "degraded link: %zu GPU pair(s) below %s, first GPU%zu-GPU%zu: %s", bad, expected, ba,
            bb, quote(prov_topo_gpu_link(&t, ba, bb), l1, sizeof l1));
    } else if (unread > 0) {
        set(o, PLAN_CHECK_FAIL, 0,
            "%zu GPU pair(s) without a readable link class, first GPU%zu-GPU%zu read %s "
            "(GPU%zu-GPU%zu %s)",
            unread, ua, ub, quote(prov_topo_gpu_link(&t, ua, ub), l1, sizeof l1), ub, ua,
            quote(prov_topo_gpu_link(&t, ub, ua), l2, sizeof l2));
    } else {
        set(o, PLAN_CHECK_PASS, 0, "every GPU pair meets %s", expected);
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

static void eval_storage(const struct prov_gate *g, const struct prov_cmd_result *r,
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
        const char *out = out_of(&r[i]);
        int ok = r[i].ran && r[i].exit_status == 0;
        int sum_ok = strstr(out, zeros16m) != NULL;
        dd_rates(out, rate);
        int rates_ok = isfinite(rate[0]) && isfinite(rate[1]);
        json_object_set_new(vals, i == 0 ? "durable" : "scratch",
                            json_pack("{s:o, s:o, s:o, s:b}", "path", jtext(paths[i]),
                                      "write_fsync_mbps", jrate(rate[0]), "read_mbps",
                                      jrate(rate[1]), "checksum_ok", sum_ok));
        char line[160];
        if (!ok)
            addf(msg, sizeof msg, "%s: %s", paths[i], quote(text_of(&r[i]), line, sizeof line));
        else if (!sum_ok)
            addf(msg, sizeof msg, "%s: the data read back differs (no matching checksum)",
                 paths[i]);
        else if (!rates_ok)
            addf(msg, sizeof msg, "%s: dd did not report both the write and the read rate",
                 paths[i]);
        else if (rate[0] < g->storage_min_mbps)
            addf(msg, sizeof msg, "%s writes %.0f MB/s with fsync, below %.0f", paths[i], rate[0],
                 g->storage_min_mbps);
        else
            addf(msg, sizeof msg, "%s %.0f MB/s write+fsync, %.0f MB/s read", paths[i], rate[0],
                 rate[1]);
        failed |= !ok || !sum_ok || !rates_ok || !(rate[0] >= g->storage_min_mbps);
    }
    o->values = vals;
    set(o, failed ? PLAN_CHECK_FAIL : PLAN_CHECK_PASS, 0, "%s", msg);
}

static void eval_observability(const struct prov_gate *g, const struct prov_cmd_result *r,
                               struct prov_check_out *o)
{
    char code[200], line[200];
    const char *url = g->observability_url ? g->observability_url : "";
    utf8_first_line(out_of(r), code, sizeof code);
    int valid = strlen(code) == 3 && strspn(code, "0123456789") == 3;
    o->values = json_pack("{s:o, s:o}", "url", jtext(url), "http_status",
                          valid ? jtext(code) : json_null());
    if (r->ran && r->exit_status == 0 && valid && code[0] == '2')
        set(o, PLAN_CHECK_PASS, 0, "%s answered %s", url, code);
    else if (r->ran && r->exit_status == 0 && valid)
        set(o, PLAN_CHECK_FAIL, 0, "%s answered %s", url, code);
    else if (r->ran && r->exit_status == 0)
        set(o, PLAN_CHECK_FAIL, 0, "%s: curl printed no HTTP status (read %s)", url,
            quote(code, line, 64));
    else
        set(o, PLAN_CHECK_FAIL, 0, "%s is not reachable from the host: %s", url,
            quote(text_of(r), line, sizeof line));
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

static void eval_diagnostics(const struct prov_gate *g, const struct prov_cmd_result *r,
                             struct prov_check_out *o)
{
    (void)g;
    prov_diag_t d;
    prov_err_t perr;
    char line[200];
    const char *out = out_of(r);
    if (!r->ran || prov_diag_parse(out, strlen(out), &d, &perr) != 0) {
        set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag gave no readable result: %s",
            quote(r->ran ? perr.msg : text_of(r), line, sizeof line));
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
        addf(failing, sizeof failing, "%s", name);
    }
    if (hw)
        set(o, PLAN_CHECK_FAIL, 1, "failed tests: %s", failing);
    else if (r->exit_status != 0)
        set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag exited %d without a failed test", r->exit_status);
    else if (diag_fail_rows(out) > 0)
        set(o, PLAN_CHECK_FAIL, 0, "dcgmi diag printed a Fail result outside the tests it listed");
    else if (passed == 0)
        set(o, PLAN_CHECK_FAIL, 0, "no diagnostic test passed (%zu listed, none with Pass)",
            d.ntests);
    else if (!d.table_complete || !diag_table_closed(out))
        set(o, PLAN_CHECK_FAIL, 0, "the dcgmi diag table is cut off after %zu test(s)", d.ntests);
    else if (d.verdict == PROV_DIAG_PASS)
        set(o, PLAN_CHECK_PASS, 0, "every diagnostic test passed");
    else if (d.verdict == PROV_DIAG_WARN)
        set(o, PLAN_CHECK_WARN, 0, "diagnostics passed with warnings");
    else
        set(o, PLAN_CHECK_FAIL, 0, "diagnostics did not complete (errors)");
    prov_diag_free(&d);
}

void prov_check_eval(const struct prov_gate *g, enum prov_check c,
                     const struct prov_cmd_result *results, int n, struct prov_check_out *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)c >= PROV_CHECK__COUNT) {
        set(out, PLAN_CHECK_FAIL, 0, "unknown check");
        return;
    }
    if (results == NULL || n < prov_check_ncmds(g, c)) {
        set(out, PLAN_CHECK_FAIL, 0, "%s: %d result(s) for %d command(s)", prov_check_names[c],
            results ? n : 0, prov_check_ncmds(g, c));
        return;
    }
    switch (c) {
    case PROV_CHECK_GPU_INVENTORY: eval_inventory(g, results, out); break;
    case PROV_CHECK_CONTAINER_GPU: eval_container(g, results, out); break;
    case PROV_CHECK_WORKLOAD: eval_workload(g, results, out); break;
    case PROV_CHECK_TOPOLOGY: eval_topology(g, results, out); break;
    case PROV_CHECK_STORAGE: eval_storage(g, results, out); break;
    case PROV_CHECK_OBSERVABILITY: eval_observability(g, results, out); break;
    case PROV_CHECK_DIAGNOSTICS: eval_diagnostics(g, results, out); break;
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
    json_t *name = jtext(check_name ? check_name : "");
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
