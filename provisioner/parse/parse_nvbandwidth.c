/* parse_nvbandwidth.c — nvbandwidth output (parse_perf.h; tests/fixtures/perf/SOURCES.md
 * §2): "Running T." opens a test, a matrix titled "… bandwidth (GB/s)" follows (column
 * header of GPU indices, rows "N  cells…", N/A where unmeasured), "SUM T x" closes it;
 * "Waiving T." marks a test skipped; ASSERT / "Invalid value" / Aborted lines are
 * failures. The v0.8 trailing NOTE and the v0.2 leading NOTE are text. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_internal.h"
#include "provisioner/parse/parse_perf.h"

#define NVBW_MAX_CELLS 1024
#define NVBW_MAX_TOK   80

static bool cell_num(prov_span_t t, double *v)
{
    char buf[40];
    if (t.n == 0 || t.n >= sizeof buf || !isdigit((unsigned char)t.p[0]))
        return false;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    if (strchr(buf, '.') == NULL) {
        char *c = strchr(buf, ',');
        if (c != NULL)
            *c = '.';
    }
    char *end;
    double d = strtod(buf, &end);
    if (*end != '\0' || !(d >= 0 && d < 1e9))
        return false;
    *v = d;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The test named by the rest of "Running T." / "SUM T x" (created when new). */
static prov_nvbw_test_t *test_named(prov_nvbw_t *o, prov_span_t name)
{
    while (name.n > 0 && name.p[name.n - 1] == '.')
        name.n--;
    char buf[PROV_NVBW_NAME_MAX];
    prov_span_copy(buf, sizeof buf, name);
    for (int i = 0; i < o->ntests; i++)
        if (strcmp(o->tests[i].name, buf) == 0)
            return &o->tests[i];
    if (o->ntests >= PROV_NVBW_TESTS || buf[0] == '\0')
        return NULL;
    prov_nvbw_test_t *t = &o->tests[o->ntests++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, buf, sizeof buf);
    return t;
}

static void failure(prov_nvbw_t *o, prov_span_t t)
{
    if (o->failures++ == 0)
        prov_span_copy(o->first_failure, sizeof o->first_failure, t);
}

static void close_matrix(prov_nvbw_test_t *t, double *cells, int n)
{
    if (t == NULL || n <= 0)
        return;
    qsort(cells, (size_t)n, sizeof *cells, cmp_double);
    t->ncells = n;
    t->min = cells[0];
    t->max = cells[n - 1];
    t->median = n % 2 ? cells[n / 2] : (cells[n / 2 - 1] + cells[n / 2]) / 2;
}

int prov_nvbw_parse(const char *text, size_t len, prov_nvbw_t *out)
{
    memset(out, 0, sizeof *out);
    if (text == NULL)
        return -1;
    double *cells = malloc(NVBW_MAX_CELLS * sizeof *cells);
    if (cells == NULL)
        return -1;
    int ncells = 0, in_matrix = 0;
    prov_nvbw_test_t *cur = NULL; /* the test "Running" named (NULL: a paste without it) */
    prov_lines_t it;
    prov_lines_init(&it, text, len);
    prov_span_t line;
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        prov_span_t tok[NVBW_MAX_TOK];
        size_t n = prov_split_ws(t, tok, NVBW_MAX_TOK);
        if (t.n == 0) {
            if (in_matrix) {
                close_matrix(cur, cells, ncells);
                in_matrix = 0;
            }
            continue;
        }
        if (prov_span_starts(t, "nvbandwidth Version:")) {
            if (n >= 3)
                prov_span_copy(out->version, sizeof out->version, tok[2]);
        } else if (prov_span_starts(t, "Device ") && n >= 2 && tok[1].n > 0 &&
                   tok[1].p[tok[1].n - 1] == ':') {
            out->ndevices += out->ndevices < 100000;
        } else if (prov_span_starts(t, "Running ") && n == 2) {
            cur = test_named(out, tok[1]);
            if (cur)
                cur->running = true;
        } else if (prov_span_starts(t, "Waiving ") && n == 2) {
            prov_nvbw_test_t *w = test_named(out, tok[1]);
            if (w)
                w->waived = true;
            cur = NULL;
        } else if (prov_span_starts(t, "SUM ") && n == 3) {
            double v;
            if (in_matrix) {
                close_matrix(cur, cells, ncells);
                in_matrix = 0;
            }
            prov_nvbw_test_t *s = test_named(out, tok[1]);
            if (s && cell_num(tok[2], &v)) {
                s->has_sum = true;
                s->sum = v;
                /* a matrix without "Running" before it (a partial paste) is this test's */
                if (s->ncells == 0 && ncells > 0 && cur == NULL)
                    close_matrix(s, cells, ncells);
            }
            cur = NULL;
            ncells = 0;
        } else if (prov_span_find(t, "bandwidth (GB/s)") >= 0 || prov_span_find(t, "(GB/s)") >= 0) {
            in_matrix = 1;
            ncells = 0;
        } else if (prov_span_find(t, "ASSERT") >= 0 || prov_span_find(t, "Invalid value") >= 0 ||
                   prov_span_find(t, "Aborted") >= 0 ||
                   prov_span_find(t, "Segmentation fault") >= 0 ||
                   prov_span_ifind(t, "error") >= 0 || prov_span_ifind(t, "failed") >= 0) {
            failure(out, t);
        } else if (in_matrix && n >= 2 && prov_parse_uint(tok[0]) >= 0) {
            /* a row: its index, then cells; the column header is indices only */
            bool header = true;
            for (size_t k = 1; k < n; k++)
                if (prov_parse_uint(tok[k]) < 0)
                    header = false;
            if (header)
                continue;
            for (size_t k = 1; k < n && ncells < NVBW_MAX_CELLS; k++) {
                double v;
                if (cell_num(tok[k], &v))
                    cells[ncells++] = v;
            }
        } else if (in_matrix && n >= 1 && prov_parse_uint(tok[0]) >= 0) {
            continue; /* a one-column header ("0") */
        }
    }
    if (in_matrix)
        close_matrix(cur, cells, ncells); /* cut after the matrix: no SUM, kept unsummed */
    free(cells);
    return out->ntests > 0 ? 0 : -1;
}

const prov_nvbw_test_t *prov_nvbw_find(const prov_nvbw_t *b, const char *name)
{
    for (int i = 0; i < b->ntests; i++)
        if (strcmp(b->tests[i].name, name) == 0)
            return &b->tests[i];
    return NULL;
}
