/* nvidia-smi topo -m (and topo -p2p r|w|...).
 *
 * Real outputs vary: tab-separated (native) or tab-expanded / re-spaced,
 * ANSI underline codes around the header line (stripped first), a double
 * tab before an empty column, a leading space on each row (-p2p), trailing
 * spaces/tabs, NIC rows and columns (NIC0.. or mlx5_*), a NIC Legend
 * mapping NICn to device names, affinity columns that come and go ("CPU
 * Affinity", "NUMA Affinity", "GPU NUMA ID"), and typos in the legend text
 * (which is never interpreted).  Cells never contain spaces, so rows are
 * split on whitespace; the header's device columns are the leading tokens
 * that name a device, and the affinity columns are found by their names. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEVS    512
#define MAX_ROW_TOK (MAX_DEVS + 8)

enum aff { AFF_CPU, AFF_NUMA, AFF_GPU_NUMA, AFF_N };

static bool is_gpu_label(prov_span_t t)
{
    if (t.n < 4 || t.n > 7 || memcmp(t.p, "GPU", 3) != 0)
        return false;
    for (size_t i = 3; i < t.n; i++)
        if (!isdigit((unsigned char)t.p[i]))
            return false;
    return true;
}

static bool is_nic_label(prov_span_t t)
{
    if (t.n >= 4 && t.n <= 7 && memcmp(t.p, "NIC", 3) == 0) {
        for (size_t i = 3; i < t.n; i++)
            if (!isdigit((unsigned char)t.p[i]))
                return false;
        return true;
    }
    /* older drivers label NIC columns with the device name */
    return t.n >= 4 && t.n < PROV_ID_MAX &&
           (prov_span_starts(t, "mlx") || prov_span_starts(t, "ib") ||
            prov_span_starts(t, "bnxt") || prov_span_starts(t, "efa"));
}

typedef struct topo_ctx {
    prov_topo_t *t;
    size_t ndev;
    char (*labels)[PROV_ID_MAX];
    int aff_order[AFF_N]; /* position of each affinity column, or -1 */
    size_t naff;
    bool *row_seen;
} topo_ctx_t;

static char *cell(prov_topo_t *t, size_t ndev, size_t r, size_t c)
{
    assert(r < ndev && c < ndev);
    return t->cells[r * ndev + c];
}

static int parse_header(topo_ctx_t *c, prov_span_t line, unsigned lineno, prov_err_t *err)
{
    prov_topo_t *t = c->t;
    prov_span_t *tok = calloc(MAX_ROW_TOK, sizeof *tok);
    int rc = -1;
    if (!tok) {
        prov_err_set(err, lineno, 0, "out of memory");
        goto cleanup;
    }
    size_t nt = prov_split_ws(line, tok, MAX_ROW_TOK);
    size_t nd = 0;
    while (nd < nt && (is_gpu_label(tok[nd]) || is_nic_label(tok[nd])))
        nd++;
    if (nd == 0 || nd > MAX_DEVS) {
        prov_err_set(err, lineno, 0, "topology header has %zu device columns", nd);
        goto cleanup;
    }
    for (size_t i = 0; i < nd; i++) {
        bool gpu = is_gpu_label(tok[i]);
        if (gpu && t->nnics) {
            prov_err_set(err, lineno, (unsigned)(tok[i].p - line.p) + 1,
                         "GPU column after a NIC column");
            goto cleanup;
        }
        if (gpu)
            t->ngpus++;
        else
            t->nnics++;
    }
    c->ndev = nd;
    c->labels = calloc(nd, sizeof *c->labels);
    c->row_seen = calloc(nd, sizeof *c->row_seen);
    t->cells = calloc(nd * nd, sizeof *t->cells);
    t->nic_names = calloc(t->nnics ? t->nnics : 1, sizeof *t->nic_names);
    t->nic_devs = calloc(t->nnics ? t->nnics : 1, sizeof *t->nic_devs);
    t->cpu_affinity = calloc(t->ngpus ? t->ngpus : 1, sizeof *t->cpu_affinity);
    t->numa_affinity = calloc(t->ngpus ? t->ngpus : 1, sizeof *t->numa_affinity);
    t->gpu_numa_id = calloc(t->ngpus ? t->ngpus : 1, sizeof *t->gpu_numa_id);
    if (!c->labels || !c->row_seen || !t->cells || !t->nic_names || !t->nic_devs ||
        !t->cpu_affinity || !t->numa_affinity || !t->gpu_numa_id) {
        prov_err_set(err, lineno, 0, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < nd; i++) {
        prov_span_copy(c->labels[i], PROV_ID_MAX, tok[i]);
        if (i >= t->ngpus)
            prov_span_copy(t->nic_names[i - t->ngpus], PROV_ID_MAX, tok[i]);
    }
    /* Affinity columns, in the order they appear after the device columns. */
    prov_span_t rest = nd < nt ? prov_span_from(line, (size_t)(tok[nd].p - line.p))
                               : prov_span(line.p + line.n, 0);
    long pos[AFF_N] = {prov_span_ifind(rest, "CPU Affinity"),
                       prov_span_ifind(rest, "NUMA Affinity"),
                       prov_span_ifind(rest, "GPU NUMA ID")};
    t->has_cpu_affinity = pos[AFF_CPU] >= 0;
    t->has_numa_affinity = pos[AFF_NUMA] >= 0;
    t->has_gpu_numa_id = pos[AFF_GPU_NUMA] >= 0;
    for (int a = 0; a < AFF_N; a++) {
        c->aff_order[a] = -1;
        if (pos[a] < 0)
            continue;
        int before = 0;
        for (int b = 0; b < AFF_N; b++)
            if (b != a && pos[b] >= 0 && pos[b] < pos[a])
                before++;
        c->aff_order[a] = before;
        c->naff++;
    }
    rc = 0;
cleanup:
    free(tok);
    return rc;
}

static long find_label(const topo_ctx_t *c, prov_span_t t)
{
    for (size_t i = 0; i < c->ndev; i++)
        if (prov_span_eq(t, c->labels[i]))
            return (long)i;
    return -1;
}

static int parse_row(topo_ctx_t *c, prov_span_t line, unsigned lineno, prov_err_t *err)
{
    prov_topo_t *t = c->t;
    prov_span_t *tok = calloc(MAX_ROW_TOK, sizeof *tok);
    int rc = -1;
    if (!tok) {
        prov_err_set(err, lineno, 0, "out of memory");
        goto cleanup;
    }
    size_t nt = prov_split_ws(line, tok, MAX_ROW_TOK);
    assert(nt >= 1);
    long r = find_label(c, tok[0]);
    if (r < 0) {
        prov_err_set(err, lineno, (unsigned)(tok[0].p - line.p) + 1,
                     "row label '%.*s' is not a column of the header",
                     (int)(tok[0].n > 40 ? 40 : tok[0].n), tok[0].p);
        goto cleanup;
    }
    if (c->row_seen[r]) {
        prov_err_set(err, lineno, 1, "duplicate row %s", c->labels[r]);
        goto cleanup;
    }
    c->row_seen[r] = true;
    if (nt < 1 + c->ndev) {
        prov_err_set(err, lineno, 0, "row %s has %zu cells, expected %zu", c->labels[r], nt - 1,
                     c->ndev);
        goto cleanup;
    }
    for (size_t k = 0; k < c->ndev; k++)
        prov_span_copy(cell(t, c->ndev, (size_t)r, k), PROV_LINK_MAX, tok[1 + k]);
    if (strcmp(cell(t, c->ndev, (size_t)r, (size_t)r), "X") != 0) {
        prov_err_set(err, lineno, (unsigned)(tok[1 + r].p - line.p) + 1,
                     "expected 'X' on the diagonal for %s", c->labels[r]);
        goto cleanup;
    }
    if ((size_t)r < t->ngpus) {
        size_t extra = nt - 1 - c->ndev;
        char(*dst[AFF_N])[PROV_ID_MAX] = {t->cpu_affinity, t->numa_affinity, t->gpu_numa_id};
        for (int a = 0; a < AFF_N; a++) {
            int o = c->aff_order[a];
            if (o >= 0 && (size_t)o < extra)
                prov_span_copy(dst[a][r], PROV_ID_MAX, tok[1 + c->ndev + (size_t)o]);
        }
    }
    rc = 0;
cleanup:
    free(tok);
    return rc;
}

static void nic_legend_line(topo_ctx_t *c, prov_span_t line)
{
    prov_span_t tok[3];
    if (prov_split_ws(line, tok, 3) != 2 || tok[0].n < 2 || tok[0].p[tok[0].n - 1] != ':')
        return;
    tok[0].n--;
    long i = find_label(c, tok[0]);
    if (i >= (long)c->t->ngpus)
        prov_span_copy(c->t->nic_devs[(size_t)i - c->t->ngpus], PROV_ID_MAX, tok[1]);
}

static bool is_p2p_status(const char *s)
{
    static const char *const st[] = {"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        if (strcmp(s, st[i]) == 0)
            return true;
    return false;
}

int prov_topo_parse(const char *text, size_t len, prov_topo_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    topo_ctx_t c = {.t = out};
    size_t blen = 0;
    char *buf = prov_strip_ansi(text ? text : "", text ? len : 0, &blen);
    enum { BEFORE, MATRIX, AFTER, LEGEND, NIC_LEGEND } st = BEFORE;
    char first_err[160] = "";
    unsigned first_err_line = 0;
    if (!buf) {
        prov_err_set(err, 0, 0, "out of memory");
        goto cleanup;
    }
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, buf, blen);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        if (prov_span_starts(t, "NIC Legend:")) {
            st = NIC_LEGEND;
            out->has_nic_legend = true;
            continue;
        }
        if (prov_span_starts(t, "Legend:")) {
            st = LEGEND;
            out->has_legend = true;
            continue;
        }
        switch (st) {
        case BEFORE: {
            prov_span_t tok[2];
            size_t nt = prov_split_ws(t, tok, 2);
            if (nt >= 1 && prov_span_eq(tok[0], "GPU0") &&
                !(nt == 2 && prov_span_eq(tok[1], "X"))) {
                if (parse_header(&c, t, it.lineno, err))
                    goto cleanup;
                st = MATRIX;
            } else if (t.n && !first_err[0] &&
                       (prov_span_ifind(t, "error") >= 0 || prov_span_ifind(t, "failed") >= 0)) {
                prov_span_copy(first_err, sizeof first_err, t);
                first_err_line = it.lineno;
            }
            break;
        }
        case MATRIX:
            if (t.n == 0) {
                st = AFTER;
                break;
            }
            if (parse_row(&c, line, it.lineno, err))
                goto cleanup;
            break;
        case LEGEND:
            if (prov_span_ifind(t, "Status Ok") >= 0)
                out->p2p = true;
            break;
        case NIC_LEGEND: nic_legend_line(&c, t); break;
        case AFTER: break;
        }
    }
    if (c.ndev == 0) {
        if (first_err[0])
            prov_err_set(err, first_err_line, 0, "topology not available: %s", first_err);
        else
            prov_err_set(err, 0, 0, "no topology header (expected a line starting with GPU0)");
        goto cleanup;
    }
    for (size_t i = 0; i < out->ngpus; i++) {
        if (!c.row_seen[i]) {
            prov_err_set(err, 0, 0, "topology matrix incomplete: row %s missing", c.labels[i]);
            goto cleanup;
        }
    }
    if (!out->p2p && out->ngpus > 1) {
        bool all = true;
        for (size_t a = 0; a < out->ngpus && all; a++)
            for (size_t b = 0; b < out->ngpus && all; b++)
                if (a != b && !is_p2p_status(cell(out, c.ndev, a, b)))
                    all = false;
        out->p2p = all;
    }
    rc = 0;
cleanup:
    free(buf);
    free(c.labels);
    free(c.row_seen);
    return PROV_PARSE_END(rc, err, out, prov_topo_free);
}

const char *prov_topo_gpu_link(const prov_topo_t *t, size_t a, size_t b)
{
    size_t nd = t->ngpus + t->nnics;
    if (!t->cells || a >= t->ngpus || b >= t->ngpus)
        return "";
    return t->cells[a * nd + b];
}

const char *prov_topo_gpu_nic_link(const prov_topo_t *t, size_t g, size_t n)
{
    size_t nd = t->ngpus + t->nnics;
    if (!t->cells || g >= t->ngpus || n >= t->nnics)
        return "";
    return t->cells[g * nd + t->ngpus + n];
}

static bool one_matches(const char *link, const char *pat, size_t plen)
{
    while (plen && (*pat == ' ' || *pat == '\t')) {
        pat++;
        plen--;
    }
    while (plen && (pat[plen - 1] == ' ' || pat[plen - 1] == '\t'))
        plen--;
    if (plen == 0)
        return false;
    if ((plen == 3 && strncasecmp(pat, "any", 3) == 0) || (plen == 1 && pat[0] == '*'))
        return true;
    if (pat[plen - 1] == '*' || pat[plen - 1] == '#') {
        size_t pre = plen - 1;
        if (strlen(link) <= pre || strncasecmp(link, pat, pre) != 0)
            return false;
        /* "NV*" means NV followed by a bond count */
        if (pre == 2 && strncasecmp(pat, "NV", 2) == 0) {
            for (const char *p = link + 2; *p; p++)
                if (!isdigit((unsigned char)*p))
                    return false;
        }
        return true;
    }
    return strlen(link) == plen && strncasecmp(link, pat, plen) == 0;
}

bool prov_link_matches(const char *link, const char *expected)
{
    if (!expected || !expected[0])
        return true;
    if (!link)
        link = "";
    const char *p = expected;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (one_matches(link, p, n))
            return true;
        if (!comma)
            return false;
        p = comma + 1;
    }
}

size_t prov_topo_check_pairs(const prov_topo_t *t, const char *expected, size_t *bad_a,
                             size_t *bad_b)
{
    size_t bad = 0;
    for (size_t a = 0; a < t->ngpus; a++) {
        for (size_t b = a + 1; b < t->ngpus; b++) {
            if (prov_link_matches(prov_topo_gpu_link(t, a, b), expected))
                continue;
            if (bad++ == 0) {
                if (bad_a)
                    *bad_a = a;
                if (bad_b)
                    *bad_b = b;
            }
        }
    }
    return bad;
}

int prov_topo_min_nvlinks(const prov_topo_t *t)
{
    if (t->ngpus < 2)
        return -1;
    int min = -1;
    for (size_t a = 0; a < t->ngpus; a++) {
        for (size_t b = 0; b < t->ngpus; b++) {
            if (a == b)
                continue;
            const char *l = prov_topo_gpu_link(t, a, b);
            if (strncmp(l, "NV", 2) != 0 || !isdigit((unsigned char)l[2]))
                return 0;
            int n = atoi(l + 2);
            if (min < 0 || n < min)
                min = n;
        }
    }
    return min < 0 ? 0 : min;
}

void prov_topo_free(prov_topo_t *t)
{
    PROV_RELEASE(t, t->cells, t->nic_names, t->nic_devs, t->cpu_affinity, t->numa_affinity,
                 t->gpu_numa_id);
}

json_t *prov_topo_to_json(const prov_topo_t *t)
{
    assert(t);
    json_t *root = json_object(), *m = json_array(), *nm = json_array(), *nics = json_array(),
           *aff = json_array();
    if (!root || !m || !nm || !nics || !aff) {
        json_decref(root);
        json_decref(m);
        json_decref(nm);
        json_decref(nics);
        json_decref(aff);
        return NULL;
    }
    for (size_t a = 0; a < t->ngpus; a++) {
        json_t *row = json_array(), *nrow = json_array();
        for (size_t b = 0; b < t->ngpus; b++)
            json_array_append_new(row, prov_str_json(prov_topo_gpu_link(t, a, b)));
        for (size_t n = 0; n < t->nnics; n++)
            json_array_append_new(nrow, prov_str_json(prov_topo_gpu_nic_link(t, a, n)));
        json_array_append_new(m, row);
        json_array_append_new(nm, nrow);
        json_array_append_new(aff,
                              json_pack("{s:o,s:o,s:o}", "cpu", prov_str_json(t->cpu_affinity[a]),
                                        "numa", prov_str_json(t->numa_affinity[a]), "gpu_numa_id",
                                        prov_str_json(t->gpu_numa_id[a])));
    }
    for (size_t n = 0; n < t->nnics; n++)
        json_array_append_new(nics, json_pack("{s:o,s:o}", "name", prov_str_json(t->nic_names[n]),
                                              "device", prov_str_json(t->nic_devs[n])));
    json_object_set_new(root, "gpu_count", json_integer((json_int_t)t->ngpus));
    json_object_set_new(root, "p2p", json_boolean(t->p2p));
    json_object_set_new(root, "matrix", m);
    json_object_set_new(root, "gpu_nic", nm);
    json_object_set_new(root, "nics", nics);
    json_object_set_new(root, "affinity", aff);
    json_object_set_new(root, "min_nvlinks", json_integer(prov_topo_min_nvlinks(t)));
    return root;
}
