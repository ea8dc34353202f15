/* One monitor sample: nvidia-smi --query-gpu=<prov_sample_fields>
 * --format=csv,noheader,nounits.  The CSV itself is split by
 * prov_qgpu_parse (parse_csv.c); this file types the cells strictly: a value
 * must be a number with nothing after it but the field's own unit, inside
 * the field's range, or one of nvidia-smi's markers ([N/A], [Not Supported],
 * [Unknown Error], [GPU requires reset], ERR!, ...) -- which stay markers,
 * never 0. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

const char *const prov_sample_fields[] = {"uuid",
                                          "pci.bus_id",
                                          "utilization.gpu",
                                          "utilization.memory",
                                          "memory.used",
                                          "memory.total",
                                          "temperature.gpu",
                                          "power.draw",
                                          "clocks_event_reasons.active",
                                          "ecc.errors.uncorrected.volatile.total",
                                          "retired_pages.pending",
                                          "remapped_rows.pending",
                                          "remapped_rows.failure",
                                          "name"};
const size_t prov_sample_nfields = sizeof prov_sample_fields / sizeof prov_sample_fields[0];

/* NVML's nvmlClocksEventReason* bits (nvml.h), named as nvidia-smi's
 * clocks_event_reasons.* fields are. */
static const struct {
    uint64_t bit;
    const char *name, *label;
} clk_reasons[] = {
    {PROV_CLK_GPU_IDLE, "gpu_idle", "GPU Idle"},
    {PROV_CLK_APPLICATIONS_CLOCKS, "applications_clocks_setting", "Applications Clocks Setting"},
    {PROV_CLK_SW_POWER_CAP, "sw_power_cap", "SW Power Cap"},
    {PROV_CLK_HW_SLOWDOWN, "hw_slowdown", "HW Slowdown"},
    {PROV_CLK_SYNC_BOOST, "sync_boost", "Sync Boost"},
    {PROV_CLK_SW_THERMAL, "sw_thermal_slowdown", "SW Thermal Slowdown"},
    {PROV_CLK_HW_THERMAL, "hw_thermal_slowdown", "HW Thermal Slowdown"},
    {PROV_CLK_HW_POWER_BRAKE, "hw_power_brake_slowdown", "HW Power Brake Slowdown"},
    {PROV_CLK_DISPLAY_CLOCKS, "display_clock_setting", "Display Clock Setting"},
};
#define N_CLK (sizeof clk_reasons / sizeof clk_reasons[0])

const char *prov_clk_reason_name(uint64_t bit)
{
    for (size_t i = 0; i < N_CLK; i++)
        if (clk_reasons[i].bit == bit)
            return clk_reasons[i].name;
    return NULL;
}

const char *prov_clk_reason_label(uint64_t bit)
{
    for (size_t i = 0; i < N_CLK; i++)
        if (clk_reasons[i].bit == bit)
            return clk_reasons[i].label;
    return NULL;
}

bool prov_clk_reasons_parse(const char *s, size_t n, uint64_t *mask)
{
    prov_span_t v = prov_trim(prov_span(s, n));
    if (v.n < 3 || v.n > 18 || v.p[0] != '0' || (v.p[1] != 'x' && v.p[1] != 'X'))
        return false;
    uint64_t m = 0;
    for (size_t i = 2; i < v.n; i++) {
        int c = tolower((unsigned char)v.p[i]);
        if (!isxdigit(c))
            return false;
        m = m << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    *mask = m;
    return true;
}

json_t *prov_clk_reasons_json(uint64_t mask)
{
    json_t *a = json_array();
    for (int b = 0; a && b < 64; b++) {
        uint64_t bit = 1ULL << b;
        if (!(mask & bit))
            continue;
        const char *nm = prov_clk_reason_name(bit);
        char hex[24];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)bit);
        json_array_append_new(a, json_string(nm ? nm : hex));
    }
    return a;
}

/* Columns of the fields this parser types, looked up once per parse. */
enum scol {
    SC_UUID,
    SC_PCI,
    SC_UTIL_GPU,
    SC_UTIL_MEM,
    SC_MEM_USED,
    SC_MEM_TOTAL,
    SC_TEMP,
    SC_POWER,
    SC_CLK, /* clocks_throttle_reasons.active is an alias (parse_csv.c) */
    SC_ECC,
    SC_RETIRED,
    SC_REMAP_PENDING,
    SC_REMAP_FAILURE,
    SC_NAME,
    SC_N
};
/* prov_sample_fields is in this order. */
_Static_assert(sizeof prov_sample_fields / sizeof prov_sample_fields[0] == SC_N,
               "one column per sample field");

/* A number: "<n>" or "<n> <unit>" (unit NULL: none allowed) within [lo, hi],
 * integer-only when `integer`. */
typedef struct num_spec {
    double lo, hi;
    const char *unit;
    bool integer;
} num_spec_t;

static const num_spec_t specs[SC_N] = {
    [SC_UTIL_GPU] = {0, 100, "%", true},   [SC_UTIL_MEM] = {0, 100, "%", true},
    [SC_MEM_USED] = {0, 1e9, "MiB", true}, [SC_MEM_TOTAL] = {0, 1e9, "MiB", true},
    [SC_TEMP] = {-273, 1000, NULL, true},  [SC_POWER] = {0, 1e6, "W", false},
    [SC_ECC] = {0, 1e15, NULL, true},
};

static prov_num_t strict_num(const char *cell, const num_spec_t *sp)
{
    prov_num_t r = {PROV_V_ABSENT, 0};
    if (!cell)
        return r;
    prov_span_t v = prov_trim(prov_span(cell, strlen(cell)));
    r.st = prov_value_state(v.p, v.n);
    if (r.st != PROV_V_OK)
        return r;
    r.st = PROV_V_INVALID;
    size_t i = 0, digits = 0;
    if (v.p[0] == '-')
        i++;
    for (; i < v.n && isdigit((unsigned char)v.p[i]); i++)
        digits++;
    if (i < v.n && v.p[i] == '.' && !sp->integer)
        for (i++; i < v.n && isdigit((unsigned char)v.p[i]); i++)
            digits++;
    if (digits == 0 || digits > 15)
        return r;
    char buf[24];
    memcpy(buf, v.p, i);
    buf[i] = '\0';
    prov_span_t unit = prov_trim(prov_span_from(v, i));
    if (unit.n && !(sp->unit && prov_span_eq(unit, sp->unit)))
        return r;
    double d = strtod(buf, NULL);
    if (d < sp->lo || d > sp->hi)
        return r;
    r.st = PROV_V_OK;
    r.v = d;
    return r;
}

/* "GPU-" followed by hex digits and dashes (MIG-... is not a GPU). */
static bool uuid_shape(const char *u)
{
    size_t n = strlen(u);
    if (n < 8 || n >= PROV_ID_MAX || strncmp(u, "GPU-", 4) != 0)
        return false;
    for (size_t i = 4; i < n; i++)
        if (!isxdigit((unsigned char)u[i]) && u[i] != '-')
            return false;
    return true;
}

/* A product name ("NVIDIA H100 80GB HBM3"): valid UTF-8 without control characters (C0,
 * DEL, C1, and the line and paragraph separators U+2028/U+2029, all that monitor_store's
 * [[:cntrl:]] refuses), shorter than PROV_NAME_MAX (a longer one is not cut, it is
 * invalid). */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= PROV_NAME_MAX || !utf8_valid(s, n))
        return false;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            return false;
        if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return false;
        if (u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9))
            return false;
    }
    return true;
}

/* One row; cell[c] is NULL for a field that was not queried. */
typedef struct srow {
    const char *cell[SC_N];
    prov_sample_gpu_t *g;
} srow_t;

static prov_vstate_t note(srow_t *r, prov_vstate_t st)
{
    if (st == PROV_V_INVALID)
        r->g->invalid_cells++;
    return st;
}

static prov_num_t num_of(srow_t *r, enum scol c)
{
    prov_num_t n = strict_num(r->cell[c], &specs[c]);
    note(r, n.st);
    return n;
}

static prov_flag_t flag_of(srow_t *r, enum scol c)
{
    prov_flag_t f = {PROV_V_ABSENT, false};
    if (r->cell[c])
        f = prov_parse_flag(prov_span(r->cell[c], strlen(r->cell[c])));
    note(r, f.st);
    return f;
}

/* The state of a string cell (ABSENT when not queried). */
static prov_vstate_t str_state(const char *c)
{
    return c ? prov_value_state(c, strlen(c)) : PROV_V_ABSENT;
}

static void fill_gpu(srow_t *r)
{
    prov_sample_gpu_t *g = r->g;
    const char *const *c = r->cell;
    g->uuid_st = str_state(c[SC_UUID]);
    if (g->uuid_st == PROV_V_OK && uuid_shape(c[SC_UUID]))
        snprintf(g->uuid, sizeof g->uuid, "%s", c[SC_UUID]);
    else if (g->uuid_st == PROV_V_OK)
        g->uuid_st = PROV_V_INVALID;
    g->pci_st = str_state(c[SC_PCI]);
    if (g->pci_st == PROV_V_OK && !prov_pci_canon(c[SC_PCI], strlen(c[SC_PCI]), g->pci, NULL))
        g->pci_st = PROV_V_INVALID;
    note(r, g->uuid_st);
    note(r, g->pci_st);
    g->util_gpu_pct = num_of(r, SC_UTIL_GPU);
    g->util_mem_pct = num_of(r, SC_UTIL_MEM);
    g->mem_used_mib = num_of(r, SC_MEM_USED);
    g->mem_total_mib = num_of(r, SC_MEM_TOTAL);
    g->temperature_c = num_of(r, SC_TEMP);
    g->power_draw_w = num_of(r, SC_POWER);
    g->ecc_uncorr_volatile = num_of(r, SC_ECC);
    g->retired_pending = flag_of(r, SC_RETIRED);
    g->remapped_pending = flag_of(r, SC_REMAP_PENDING);
    g->remapped_failure = flag_of(r, SC_REMAP_FAILURE);
    g->clk_st = str_state(c[SC_CLK]);
    if (g->clk_st == PROV_V_OK &&
        !prov_clk_reasons_parse(c[SC_CLK], strlen(c[SC_CLK]), &g->clk_reasons))
        g->clk_st = PROV_V_INVALID;
    note(r, g->clk_st);
    g->name_st = str_state(c[SC_NAME]);
    if (g->name_st == PROV_V_OK && name_ok(c[SC_NAME]))
        snprintf(g->name, sizeof g->name, "%s", c[SC_NAME]);
    else if (g->name_st == PROV_V_OK)
        g->name_st = PROV_V_INVALID;
    note(r, g->name_st);
}

int prov_sample_parse(const char *text, size_t len, const char *const *fields, size_t nfields,
                      prov_sample_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    prov_qgpu_t q;
    if (prov_qgpu_parse(text, len, fields, nfields, &q, err) != 0)
        return -1;
    int rc = -1;
    if (q.nrows > PROV_MAX_ITEMS) {
        prov_err_set(err, 0, 0, "too many GPUs (%zu)", q.nrows);
        goto cleanup;
    }
    if (q.nrows) {
        out->gpus = calloc(q.nrows, sizeof *out->gpus);
        if (!out->gpus) {
            prov_err_set(err, 0, 0, "out of memory");
            goto cleanup;
        }
    }
    int col[SC_N];
    for (int c = 0; c < SC_N; c++)
        col[c] = prov_qgpu_field(&q, prov_sample_fields[c]);
    for (size_t r = 0; r < q.nrows; r++) {
        srow_t row = {.g = &out->gpus[r]};
        for (int c = 0; c < SC_N; c++)
            row.cell[c] = col[c] < 0 ? NULL : q.cells[r * q.nfields + (size_t)col[c]];
        fill_gpu(&row);
    }
    out->ngpus = q.nrows;
    out->had_header = q.had_header;
    rc = 0;
cleanup:
    prov_qgpu_free(&q);
    return PROV_PARSE_END(rc, err, out, prov_sample_free);
}

void prov_sample_free(prov_sample_t *s)
{
    PROV_RELEASE(s, s->gpus);
}

/* A number, or null plus "<key>_state" naming why. */
static void put_num(json_t *o, const char *key, prov_num_t n)
{
    json_object_set_new(o, key, prov_num_json(n));
    if (n.st != PROV_V_OK) {
        char k[64];
        snprintf(k, sizeof k, "%s_state", key);
        json_object_set_new(o, k, json_string(prov_vstate_name(n.st)));
    }
}

static void put_flag(json_t *o, const char *key, prov_flag_t f)
{
    prov_num_t n = {f.st, f.v ? 1 : 0};
    put_num(o, key, n);
    json_object_set_new(o, key, prov_flag_json(f));
}

json_t *prov_sample_to_json(const prov_sample_t *s)
{
    assert(s);
    json_t *gpus;
    json_t *root = prov_json_with_array("gpus", &gpus);
    if (!root)
        return NULL;
    for (size_t i = 0; i < s->ngpus; i++) {
        const prov_sample_gpu_t *g = &s->gpus[i];
        json_t *o = json_object();
        if (!o)
            continue;
        json_object_set_new(o, "uuid", prov_str_json(g->uuid));
        json_object_set_new(o, "pci", prov_str_json(g->pci));
        json_object_set_new(o, "name", prov_str_json(g->name));
        put_num(o, "utilization_gpu_pct", g->util_gpu_pct);
        put_num(o, "utilization_memory_pct", g->util_mem_pct);
        put_num(o, "memory_used_mib", g->mem_used_mib);
        put_num(o, "memory_total_mib", g->mem_total_mib);
        put_num(o, "temperature_c", g->temperature_c);
        put_num(o, "power_draw_w", g->power_draw_w);
        put_num(o, "ecc_uncorrected_volatile", g->ecc_uncorr_volatile);
        put_flag(o, "retired_pages_pending", g->retired_pending);
        put_flag(o, "remapped_rows_pending", g->remapped_pending);
        put_flag(o, "remapped_rows_failure", g->remapped_failure);
        prov_num_t clk = {g->clk_st, 0};
        put_num(o, "clock_event_reasons", clk);
        if (g->clk_st == PROV_V_OK)
            json_object_set_new(o, "clock_event_reasons", prov_clk_reasons_json(g->clk_reasons));
        json_object_set_new(o, "invalid_cells", json_integer(g->invalid_cells));
        json_array_append_new(gpus, o);
    }
    return root;
}
