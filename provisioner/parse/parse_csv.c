/* nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] (and any
 * other --query-* CSV, e.g. --query-compute-apps).
 *
 * nvidia-smi does not quote: a line is split on ',' and each cell trimmed
 * (values follow ", ").  Header cells may carry a unit ("memory.total [MiB]")
 * even with nounits; values may carry one ("81559 MiB", "35 %").  Markers
 * ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Requested
 * functionality has been deprecated]") are kept raw in `cells` and become
 * non-OK states in the typed rows. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* 4096 GPUs/samples of 256 fields; bounds memory on garbage input. */
#define PROV_MAX_CELLS (1u << 20)

static const char *const aliases[][2] = {
    {"uuid", "gpu_uuid"},
    {"name", "gpu_name"},
    {"pci.bus_id", "gpu_bus_id"},
    {"pci.bus_id", "pci.bus_id"},
    {"clocks.current.graphics", "clocks.gr"},
    {"clocks.current.sm", "clocks.sm"},
    {"clocks.current.memory", "clocks.mem"},
    {"temperature.gpu", "temperature.gpu"},
    /* renamed in driver 535; older drivers know only the throttle name */
    {"clocks_event_reasons.active", "clocks_throttle_reasons.active"},
};

static bool field_is(const char *f, const char *canon)
{
    if (strcasecmp(f, canon) == 0)
        return true;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if ((strcasecmp(canon, aliases[i][0]) == 0 && strcasecmp(f, aliases[i][1]) == 0) ||
            (strcasecmp(canon, aliases[i][1]) == 0 && strcasecmp(f, aliases[i][0]) == 0))
            return true;
    return false;
}

/* "memory.total [MiB]" -> name "memory.total", unit "MiB" (both in place). */
static void split_unit(char *cell, const char **name, const char **unit)
{
    char *lb = strchr(cell, '[');
    *name = cell;
    *unit = "";
    if (lb && lb > cell) {
        char *rb = strchr(lb, ']');
        char *e = lb;
        while (e > cell && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        *e = '\0';
        if (rb) {
            *rb = '\0';
            *unit = lb + 1;
        }
    }
}

static int field_index(const prov_qgpu_t *q, const char *canon)
{
    for (size_t i = 0; i < q->nfields; i++)
        if (field_is(q->fields[i], canon))
            return (int)i;
    return -1;
}

/* Column of each typed field, looked up once per parse (-1 = absent). */
enum tcol {
    TC_INDEX,
    TC_NAME,
    TC_UUID,
    TC_BUS_ID,
    TC_BUS,
    TC_DRIVER,
    TC_MEM_TOTAL,
    TC_MEM_USED,
    TC_MEM_FREE,
    TC_TEMP,
    TC_UTIL,
    TC_POWER,
    TC_ECC_VOL,
    TC_ECC_AGG,
    TC_RETIRED,
    TC_REMAPPED,
    TC_MIG,
    TC_N
};

static const char *const tcol_names[TC_N] = {"index",
                                             "name",
                                             "uuid",
                                             "pci.bus_id",
                                             "pci.bus",
                                             "driver_version",
                                             "memory.total",
                                             "memory.used",
                                             "memory.free",
                                             "temperature.gpu",
                                             "utilization.gpu",
                                             "power.draw",
                                             "ecc.errors.uncorrected.volatile.total",
                                             "ecc.errors.uncorrected.aggregate.total",
                                             "retired_pages.pending",
                                             "remapped_rows.pending",
                                             "mig.mode.current"};

static prov_span_t cell_at(const prov_qgpu_t *q, size_t row, int col)
{
    assert(col >= 0 && (size_t)col < q->nfields);
    const char *c = q->cells[row * q->nfields + (size_t)col];
    return prov_span(c, strlen(c));
}

static prov_num_t num_col(const prov_qgpu_t *q, size_t r, int col)
{
    prov_num_t n = {PROV_V_ABSENT, 0};
    return col < 0 ? n : prov_parse_num(cell_at(q, r, col));
}

static prov_flag_t flag_col(const prov_qgpu_t *q, size_t r, int col)
{
    prov_flag_t f = {PROV_V_ABSENT, false};
    return col < 0 ? f : prov_parse_flag(cell_at(q, r, col));
}

static prov_vstate_t str_col(const prov_qgpu_t *q, size_t r, int col, char *dst, size_t cap)
{
    if (col < 0)
        return PROV_V_ABSENT;
    prov_span_t s = cell_at(q, r, col);
    prov_vstate_t st = prov_value_state(s.p, s.n);
    if (st == PROV_V_OK)
        prov_span_copy(dst, cap, s);
    return st;
}

static void fill_row(const prov_qgpu_t *q, const int *tc, size_t r, prov_qgpu_row_t *row)
{
    row->index = num_col(q, r, tc[TC_INDEX]);
    row->name_st = str_col(q, r, tc[TC_NAME], row->name, sizeof row->name);
    row->uuid_st = str_col(q, r, tc[TC_UUID], row->uuid, sizeof row->uuid);
    row->bus_id_st = str_col(q, r, tc[TC_BUS_ID] >= 0 ? tc[TC_BUS_ID] : tc[TC_BUS], row->bus_id,
                             sizeof row->bus_id);
    row->driver_st = str_col(q, r, tc[TC_DRIVER], row->driver_version, sizeof row->driver_version);
    row->mem_total_mib = num_col(q, r, tc[TC_MEM_TOTAL]);
    row->mem_used_mib = num_col(q, r, tc[TC_MEM_USED]);
    row->mem_free_mib = num_col(q, r, tc[TC_MEM_FREE]);
    row->temperature_c = num_col(q, r, tc[TC_TEMP]);
    row->util_gpu_pct = num_col(q, r, tc[TC_UTIL]);
    row->power_draw_w = num_col(q, r, tc[TC_POWER]);
    row->ecc_uncorr_volatile = num_col(q, r, tc[TC_ECC_VOL]);
    row->ecc_uncorr_aggregate = num_col(q, r, tc[TC_ECC_AGG]);
    row->retired_pending = flag_col(q, r, tc[TC_RETIRED]);
    row->remapped_pending = flag_col(q, r, tc[TC_REMAPPED]);
    row->mig_enabled = flag_col(q, r, tc[TC_MIG]);
}

/* Trims [p, p+n) in place and NUL-terminates; returns the start. */
static char *trim_inplace(char *p, size_t n)
{
    prov_span_t s = prov_trim(prov_span(p, n));
    char *st = (char *)s.p;
    st[s.n] = '\0';
    return st;
}

/* A parse in progress: the result, the caller's field list (NULL: the header names the
 * fields), the arrays' capacities. */
typedef struct qgpu_ctx {
    prov_qgpu_t *q;
    prov_err_t *err;
    const char *const *fields;
    size_t nfields;
    size_t cells_cap, rows_cap, fields_cap, units_cap;
} qgpu_ctx_t;

/* Copies the text (NUL-terminated) and the caller's field names into one buffer, and
 * points out->fields at the names. */
static int qgpu_setup(qgpu_ctx_t *c, const char *text, size_t len)
{
    prov_qgpu_t *out = c->q;
    size_t extra = 0;
    if (c->fields) {
        if (c->nfields > PROV_MAX_ITEMS) {
            prov_err_set(c->err, 0, 0, "too many fields (%zu)", c->nfields);
            return -1;
        }
        for (size_t i = 0; i < c->nfields; i++) {
            assert(c->fields[i]);
            extra += strlen(c->fields[i]) + 1;
        }
    }
    out->buf = malloc(len + extra + 1);
    if (!out->buf) {
        prov_err_set(c->err, 0, 0, "out of memory");
        return -1;
    }
    if (len)
        memcpy(out->buf, text, len);
    out->buf[len] = '\0';
    char *names = out->buf + len + 1;
    if (!c->fields)
        return 0;
    if (prov_grow((void **)&out->fields, &c->fields_cap, c->nfields, sizeof *out->fields) ||
        prov_grow((void **)&out->units, &c->units_cap, c->nfields, sizeof *out->units)) {
        prov_err_set(c->err, 0, 0, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->nfields; i++) {
        size_t l = strlen(c->fields[i]);
        memcpy(names, c->fields[i], l + 1);
        out->fields[i] = names;
        out->units[i] = "";
        names += l + 1;
    }
    out->nfields = c->nfields;
    return 0;
}

/* Whether the first line is a header: always without a field list; with one, when its
 * first cell names the first field. */
static bool qgpu_is_header(const qgpu_ctx_t *c, const prov_span_t *parts)
{
    if (!c->fields)
        return true;
    char tmp[128];
    prov_span_copy(tmp, sizeof tmp, prov_trim(parts[0]));
    const char *nm, *un;
    split_unit(tmp, &nm, &un);
    return field_is(nm, c->fields[0]);
}

/* The header line: the field names (checked against the caller's) and their units. */
static int qgpu_header(qgpu_ctx_t *c, prov_span_t line, unsigned lineno, prov_span_t *parts,
                       size_t np)
{
    prov_qgpu_t *out = c->q;
    const char *const *fields = c->fields;
    if (fields && np != c->nfields) {
        prov_err_set(c->err, lineno, 0, "header has %zu fields, expected %zu", np, c->nfields);
        return -1;
    }
    if (!fields && (prov_grow((void **)&out->fields, &c->fields_cap, np, sizeof *out->fields) ||
                    prov_grow((void **)&out->units, &c->units_cap, np, sizeof *out->units))) {
        prov_err_set(c->err, lineno, 0, "too many header fields (%zu)", np);
        return -1;
    }
    for (size_t i = 0; i < np; i++) {
        char *cell = trim_inplace((char *)parts[i].p, parts[i].n);
        const char *nm, *un;
        split_unit(cell, &nm, &un);
        if (nm[0] == '\0') {
            prov_err_set(c->err, lineno, (unsigned)(parts[i].p - line.p) + 1,
                         "empty header field %zu", i + 1);
            return -1;
        }
        if (fields && !field_is(nm, fields[i])) {
            prov_err_set(c->err, lineno, (unsigned)(parts[i].p - line.p) + 1,
                         "header field %zu is '%.60s', expected '%.60s'", i + 1, nm, fields[i]);
            return -1;
        }
        if (!fields)
            out->fields[i] = nm;
        out->units[i] = un;
    }
    out->nfields = np;
    out->had_header = true;
    return 0;
}

/* One data row: its cells, trimmed in place. */
static int qgpu_row(qgpu_ctx_t *c, unsigned lineno, prov_span_t *parts, size_t np)
{
    prov_qgpu_t *out = c->q;
    if (np != out->nfields) {
        prov_err_set(c->err, lineno, 0, "expected %zu comma-separated fields, got %zu",
                     out->nfields, np);
        return -1;
    }
    size_t need = (out->nrows + 1) * out->nfields;
    if (need / out->nfields != out->nrows + 1 ||
        prov_grow_max((void **)&out->cells, &c->cells_cap, need, sizeof *out->cells,
                      PROV_MAX_CELLS)) {
        prov_err_set(c->err, lineno, 0, "too many rows");
        return -1;
    }
    for (size_t i = 0; i < np; i++) {
        char *cell = trim_inplace((char *)parts[i].p, parts[i].n);
        out->cells[out->nrows * out->nfields + i] = cell;
        if (prov_value_state(cell, strlen(cell)) == PROV_V_DEPRECATED)
            out->n_deprecated++;
    }
    out->nrows++;
    return 0;
}

/* Every non-blank line of the copied text: the header (when there is one), then rows. */
static int qgpu_lines(qgpu_ctx_t *c, size_t len, prov_span_t *parts)
{
    prov_lines_t it;
    prov_lines_init(&it, c->q->buf, len);
    prov_span_t line;
    bool first = true;
    while (prov_lines_next(&it, &line)) {
        if (prov_span_empty(line))
            continue;
        if (memchr(line.p, '\0', line.n)) {
            prov_err_set(c->err, it.lineno, 0, "NUL byte in CSV line");
            return -1;
        }
        size_t np = prov_split_ch(line, ',', parts, PROV_MAX_ITEMS);
        if (first) {
            first = false;
            if (qgpu_is_header(c, parts)) {
                if (qgpu_header(c, line, it.lineno, parts, np) != 0)
                    return -1;
                continue;
            }
        }
        if (qgpu_row(c, it.lineno, parts, np) != 0)
            return -1;
    }
    return 0;
}

/* The typed view of the rows (out->rows), by the columns it knows. */
static int qgpu_typed_rows(qgpu_ctx_t *c)
{
    prov_qgpu_t *out = c->q;
    if (out->nrows == 0)
        return 0;
    if (prov_grow_max((void **)&out->rows, &c->rows_cap, out->nrows, sizeof *out->rows,
                      PROV_MAX_CELLS)) {
        prov_err_set(c->err, 0, 0, "out of memory");
        return -1;
    }
    int tc[TC_N];
    for (int i = 0; i < TC_N; i++)
        tc[i] = field_index(out, tcol_names[i]);
    for (size_t r = 0; r < out->nrows; r++)
        fill_row(out, tc, r, &out->rows[r]);
    return 0;
}

int prov_qgpu_parse(const char *text, size_t len, const char *const *fields, size_t nfields,
                    prov_qgpu_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    prov_span_t *parts = NULL;
    qgpu_ctx_t c = {.q = out, .err = err, .fields = fields, .nfields = nfields};

    if (!text)
        len = 0;
    if (fields && nfields == 0)
        c.fields = NULL;
    if (qgpu_setup(&c, text, len) != 0)
        goto cleanup;
    parts = malloc(PROV_MAX_ITEMS * sizeof *parts); /* [0, np) written before read */
    if (!parts) {
        prov_err_set(err, 0, 0, "out of memory");
        goto cleanup;
    }
    if (qgpu_lines(&c, len, parts) != 0)
        goto cleanup;
    if (out->nfields == 0) {
        prov_err_set(err, 0, 0, "empty output and no field list: expected a CSV header");
        goto cleanup;
    }
    if (qgpu_typed_rows(&c) != 0)
        goto cleanup;
    rc = 0;
cleanup:
    free(parts);
    return PROV_PARSE_END(rc, err, out, prov_qgpu_free);
}

const char *prov_qgpu_cell(const prov_qgpu_t *q, size_t row, const char *field)
{
    if (!q || row >= q->nrows || !field)
        return NULL;
    int c = field_index(q, field);
    return c < 0 ? NULL : q->cells[row * q->nfields + (size_t)c];
}

int prov_qgpu_field(const prov_qgpu_t *q, const char *field)
{
    return q && field ? field_index(q, field) : -1;
}

void prov_qgpu_free(prov_qgpu_t *q)
{
    PROV_RELEASE(q, q->fields, q->units, q->cells, q->rows, q->buf);
}

static void set_state(json_t *o, const char *key, prov_vstate_t st)
{
    if (st != PROV_V_OK && st != PROV_V_ABSENT)
        json_object_set_new(o, key, json_string(prov_vstate_name(st)));
}

json_t *prov_qgpu_to_json(const prov_qgpu_t *q)
{
    assert(q);
    json_t *root = json_object();
    json_t *gpus = json_array();
    json_t *fields = json_array();
    if (!root || !gpus || !fields) {
        json_decref(root);
        json_decref(gpus);
        json_decref(fields);
        return NULL;
    }
    for (size_t i = 0; i < q->nfields; i++)
        json_array_append_new(fields, prov_str_json(q->fields[i]));
    for (size_t r = 0; r < q->nrows; r++) {
        const prov_qgpu_row_t *g = &q->rows[r];
        json_t *o = json_object();
        if (!o)
            continue;
        json_object_set_new(o, "index", prov_num_json(g->index));
        json_object_set_new(o, "name", prov_str_json(g->name));
        json_object_set_new(o, "uuid", prov_str_json(g->uuid));
        json_object_set_new(o, "bus_id", prov_str_json(g->bus_id));
        json_object_set_new(o, "driver_version", prov_str_json(g->driver_version));
        json_object_set_new(o, "memory_total_mib", prov_num_json(g->mem_total_mib));
        json_object_set_new(o, "memory_used_mib", prov_num_json(g->mem_used_mib));
        json_object_set_new(o, "memory_free_mib", prov_num_json(g->mem_free_mib));
        json_object_set_new(o, "temperature_c", prov_num_json(g->temperature_c));
        json_object_set_new(o, "utilization_gpu_pct", prov_num_json(g->util_gpu_pct));
        json_object_set_new(o, "power_draw_w", prov_num_json(g->power_draw_w));
        json_object_set_new(o, "ecc_uncorrected_volatile", prov_num_json(g->ecc_uncorr_volatile));
        json_object_set_new(o, "ecc_uncorrected_aggregate", prov_num_json(g->ecc_uncorr_aggregate));
        json_object_set_new(o, "retired_pages_pending", prov_flag_json(g->retired_pending));
        json_object_set_new(o, "remapped_rows_pending", prov_flag_json(g->remapped_pending));
        json_object_set_new(o, "mig_enabled", prov_flag_json(g->mig_enabled));
        set_state(o, "memory_total_state", g->mem_total_mib.st);
        set_state(o, "ecc_uncorrected_volatile_state", g->ecc_uncorr_volatile.st);
        set_state(o, "retired_pages_pending_state", g->retired_pending.st);
        json_array_append_new(gpus, o);
    }
    json_object_set_new(root, "fields", fields);
    json_object_set_new(root, "had_header", json_boolean(q->had_header));
    json_object_set_new(root, "rows", json_integer((json_int_t)q->nrows));
    json_object_set_new(root, "deprecated_cells", json_integer((json_int_t)q->n_deprecated));
    json_object_set_new(root, "gpus", gpus);
    return root;
}
