/* parse_nccl.c — nccl-tests output (see parse_perf.h and tests/fixtures/perf/SOURCES.md §1).
 * Rows are read from their ends (the last eight cells are out-of-place time, algbw,
 * busbw, #wrong, then in-place), so the columns before them (redop, root: absent in old
 * versions and all_gather) and the column widths do not matter. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_internal.h"
#include "provisioner/parse/parse_perf.h"

#define NCCL_MAX_ROWS 4096
#define NCCL_MAX_TOK  24

/* A decimal or exponent number filling the whole token ("479.93", "13252", "2e-07",
 * "479,93" from a comma locale). */
static bool tok_num(prov_span_t t, double *v)
{
    char buf[48];
    if (t.n == 0 || t.n >= sizeof buf)
        return false;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    if (strchr(buf, '.') == NULL) {
        char *c = strchr(buf, ',');
        if (c != NULL && strchr(c + 1, ',') == NULL)
            *c = '.';
    }
    if (!(isdigit((unsigned char)buf[0]) || (buf[0] == '-' && isdigit((unsigned char)buf[1]))))
        return false;
    char *end;
    double d = strtod(buf, &end);
    if (*end != '\0' || d != d || d > 1e18 || d < -1e18)
        return false;
    *v = d;
    return true;
}

/* Removes a launcher's prefix: srun -l " 12: ", OpenMPI --tag-output "[1,0]<stdout>:",
 * "[0]" / "[0] ". */
static prov_span_t strip_prefix(prov_span_t s)
{
    size_t i = 0;
    while (i < s.n && s.p[i] == ' ')
        i++;
    size_t d = i;
    while (d < s.n && isdigit((unsigned char)s.p[d]))
        d++;
    if (d > i && d - i <= 5 && d < s.n && s.p[d] == ':' && (d + 1 == s.n || s.p[d + 1] == ' '))
        return prov_span_from(s, d + 1);
    if (s.n > 0 && s.p[0] == '[') {
        size_t k = 1;
        while (k < s.n && (isdigit((unsigned char)s.p[k]) || s.p[k] == ','))
            k++;
        if (k > 1 && k < s.n && s.p[k] == ']') {
            prov_span_t r = prov_span_from(s, k + 1);
            if (prov_span_starts(r, "<stdout>:"))
                return prov_span_from(r, 9);
            if (prov_span_starts(r, "<stderr>:"))
                return prov_span_from(r, 9);
            if (r.n > 0 && r.p[0] == ' ')
                return prov_span_from(r, 1);
            return r;
        }
    }
    return s;
}

static void note_error(prov_nccl_t *o, prov_span_t line)
{
    if (o->errors++ == 0)
        prov_span_copy(o->first_error, sizeof o->first_error, prov_trim(line));
}

static bool is_error_line(prov_span_t t)
{
    return prov_span_find(t, "Test CUDA failure") >= 0 ||
           prov_span_find(t, "Test NCCL failure") >= 0 || prov_span_find(t, "Test failure") >= 0 ||
           prov_span_ifind(t, "NCCL error") >= 0 || prov_span_find(t, "Segmentation fault") >= 0 ||
           prov_span_find(t, "Aborted") >= 0;
}

/* "# Avg bus bandwidth    : 145.47 " / "# Out of bounds values : 4 FAILED" */
static void trailer(prov_nccl_t *o, prov_span_t t)
{
    long c = prov_span_find(t, ":");
    if (c < 0)
        return;
    prov_span_t tok[4];
    size_t n = prov_split_ws(prov_span_from(t, (size_t)c + 1), tok, 4);
    double v;
    if (prov_span_find(t, "Avg bus bandwidth") >= 0) {
        if (n >= 1 && tok_num(tok[0], &v)) {
            o->has_avg = true;
            o->avg_busbw = v;
        }
    } else if (n >= 2 && tok_num(tok[0], &v)) {
        o->has_oob = true;
        o->oob_values = (long)v;
        o->oob_failed = !prov_span_eq(tok[1], "OK");
    }
}

static void header(prov_nccl_t *o, prov_span_t t)
{
    prov_span_t tok[NCCL_MAX_TOK];
    size_t n = prov_split_ws(t, tok, NCCL_MAX_TOK);
    for (size_t i = 0; i + 1 < n; i++) {
        double v;
        if (prov_span_eq(tok[i], "nGpus") && tok_num(tok[i + 1], &v) && v >= 0 && v < 1e6)
            o->ngpus_header = (int)v;
    }
}

/* A result row: SIZE COUNT TYPE [REDOP ROOT] then 8 cells. */
static bool row(prov_nccl_t *o, prov_span_t t)
{
    prov_span_t tok[NCCL_MAX_TOK];
    size_t n = prov_split_ws(t, tok, NCCL_MAX_TOK);
    double size, oop_busbw, x;
    if (n < 11 || n > 14 || !tok_num(tok[0], &size) || size < 0 || !tok_num(tok[1], &x))
        return false;
    prov_span_t *c = &tok[n - 8];
    for (int k = 0; k < 8; k++) {
        if (k == 3 || k == 7)
            continue;
        if (!tok_num(c[k], &x))
            return false;
    }
    if (!tok_num(c[2], &oop_busbw) || oop_busbw < 0)
        return false;
    for (int k = 3; k <= 7; k += 4) {
        if (prov_span_eq(c[k], "N/A"))
            o->wrong_na++;
        else if (tok_num(c[k], &x) && x >= 0) {
            if (x > 0) /* #wrong, or an old "error" column (2e-07: float rounding) */
                o->wrong += x >= 1 ? (long)(x < 1e12 ? x : 1e12) : 0;
        } else
            return false;
    }
    if (o->nrows >= NCCL_MAX_ROWS)
        return true;
    if (o->nrows > 0 && size > 0 && !(size > o->max_size)) /* size-0 rows lead all_gather */
        o->unsorted_rows++;
    if (o->nrows == 0 || size >= o->max_size) {
        o->max_size = size;
        o->busbw_at_max = oop_busbw;
    }
    if (oop_busbw > o->peak_busbw)
        o->peak_busbw = oop_busbw;
    o->nrows++;
    return true;
}

int prov_nccl_parse(const char *text, size_t len, prov_nccl_t *out)
{
    memset(out, 0, sizeof *out);
    out->ngpus_header = -1;
    if (text == NULL)
        return -1;
    prov_lines_t it;
    prov_lines_init(&it, text, len);
    prov_span_t line;
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(strip_prefix(prov_rtrim(line)));
        if (t.n == 0)
            continue;
        if (t.p[0] == '#') {
            prov_span_t h = prov_trim(prov_span_from(t, 1));
            if (prov_span_starts(h, "Rank "))
                out->nranks += out->nranks < 1000000;
            else if (prov_span_starts(h, "nThread"))
                header(out, h);
            else if (prov_span_starts(h, "Avg bus bandwidth") ||
                     prov_span_starts(h, "Out of bounds values"))
                trailer(out, h);
            else if (prov_span_starts(h, "Collective test starting"))
                out->started = true;
            else if (prov_span_starts(h, "Collective test concluded"))
                out->concluded = true;
            continue;
        }
        /* 2018 form without '#': " Out of bounds values : 248 FAILED" */
        if (prov_span_starts(t, "Out of bounds values") ||
            prov_span_starts(t, "Avg bus bandwidth")) {
            trailer(out, t);
            continue;
        }
        if (is_error_line(t)) {
            note_error(out, t);
            continue;
        }
        (void)row(out, t); /* anything else (NCCL INFO, MPI warnings) is not a row */
    }
    return out->nrows > 0 ? 0 : -1;
}
