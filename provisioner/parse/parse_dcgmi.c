/* dcgmi diag -r N (DCGM 3.x box table, DCGM 4 "Error:" lines).
 *
 *   |-----  Deployment  --------+------------------------------------------------|
 *   | Denylist                  | Pass                                           |
 *   | Info                      | Persistence mode for GPU 0 is disabled. Enabl  |
 *   |                           | e persistence mode by running "nvidia-smi -i   |
 *   +-----  Integration  -------+------------------------------------------------+
 *   | PCIe                      | Fail - All                                     |
 *
 * Long cells wrap at a fixed width, mid-word: the chunk of a wrapped cell is
 * the cell minus its one-space left pad and two-space right pad, and the
 * chunks are concatenated as-is (so "Enabl" + "e persistence" re-joins).
 * Info/Warning/Error rows annotate the test above them.  Continuation rows
 * of a test row carry more results ("Fail - GPU: 2", "GPU0: Pass"). */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct diag_ctx {
    prov_diag_t *d;
    size_t tcap, ecap;
    char category[32];
    prov_diag_test_t *cur; /* test that continuation rows belong to */
    bool cur_is_note;      /* cur's last row was Info/Warning/Error */
    int meta;              /* 0 none, 1 dcgm ver, 2 driver, 3 ids */
} diag_ctx_t;

static int rank(prov_diag_result_t r)
{
    switch (r) {
    case PROV_DIAG_NONE: return 0;
    case PROV_DIAG_SKIP: return 1;
    case PROV_DIAG_PASS: return 2;
    case PROV_DIAG_WARN: return 3;
    case PROV_DIAG_FAIL: return 4;
    case PROV_DIAG_ERROR: return 5;
    }
    return 0;
}

static prov_diag_result_t worst(prov_diag_result_t a, prov_diag_result_t b)
{
    return rank(b) > rank(a) ? b : a;
}

/* "Pass", "Fail - All", "Skip - GPU: 0, 1", "Pass - GPUs: 0, 1", "GPU0: Pass".
 * On success *res is the result and *ids the GPU list ("" = all / none). */
static bool parse_result(prov_span_t s, prov_diag_result_t *res, prov_span_t *ids)
{
    static const struct {
        const char *w;
        prov_diag_result_t r;
    } words[] = {{"Pass", PROV_DIAG_PASS},
                 {"Fail", PROV_DIAG_FAIL},
                 {"Skip", PROV_DIAG_SKIP},
                 {"Warn", PROV_DIAG_WARN},
                 {"Error", PROV_DIAG_ERROR}};
    s = prov_trim(s);
    *ids = prov_span(s.p, 0);
    bool gpu_prefix = false;
    if (prov_span_starts(s, "GPU") && s.n > 3 && isdigit((unsigned char)s.p[3])) {
        long colon = prov_span_find(s, ":");
        if (colon < 0)
            return false;
        *ids = prov_span(s.p + 3, (size_t)colon - 3);
        gpu_prefix = true;
        s = prov_trim(prov_span_from(s, (size_t)colon + 1));
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t l = strlen(words[i].w);
        if (prov_span_starts(s, words[i].w) &&
            (s.n == l || s.p[l] == ' ' || s.p[l] == '-' || s.p[l] == ':')) {
            *res = words[i].r;
            prov_span_t rest = prov_trim(prov_span_from(s, l));
            if (!gpu_prefix && prov_span_starts(rest, "-")) {
                rest = prov_trim(prov_span_from(rest, 1));
                long c = prov_span_find(rest, ":");
                if (c >= 0 && prov_span_starts(rest, "GPU"))
                    *ids = prov_trim(prov_span_from(rest, (size_t)c + 1));
            }
            return true;
        }
    }
    return false;
}

/* Appends the chunk of a (possibly wrapped) message cell. */
static void append_chunk(char *dst, size_t cap, prov_span_t cell, bool first)
{
    prov_span_t ch = cell;
    if (ch.n && ch.p[0] == ' ')
        ch = prov_span_from(ch, 1);
    if (first)
        while (ch.n && (ch.p[0] == ' ' || ch.p[0] == '\t'))
            ch = prov_span_from(ch, 1);
    if (ch.n >= 2 && ch.p[ch.n - 1] == ' ' && ch.p[ch.n - 2] == ' ')
        ch.n -= 2;
    size_t have = strlen(dst);
    if (have + 1 >= cap)
        return;
    char tmp[PROV_MSG_MAX];
    prov_span_copy(tmp, sizeof tmp, ch);
    snprintf(dst + have, cap - have, "%s", tmp);
}

static void rtrim_str(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

static void add_one(prov_diag_test_t *t, prov_diag_result_t r, int gpu)
{
    t->result = worst(t->result, r);
    if (t->ngpu_results < PROV_DIAG_MAX_GPU_RESULTS) {
        t->gpu_results[t->ngpu_results].gpu = gpu;
        t->gpu_results[t->ngpu_results].result = r;
        t->ngpu_results++;
    }
}

/* One entry per listed GPU ("0, 1, 2"), or one "all" entry. */
static void add_result(prov_diag_test_t *t, prov_diag_result_t r, prov_span_t ids)
{
    prov_span_t f[PROV_DIAG_MAX_GPU_RESULTS];
    size_t nf = ids.n ? prov_split_ch(ids, ',', f, PROV_DIAG_MAX_GPU_RESULTS) : 0;
    bool any = false;
    for (size_t i = 0; i < nf; i++) {
        long g = prov_parse_uint(f[i]);
        if (g >= 0) {
            add_one(t, r, (int)g);
            any = true;
        }
    }
    if (!any)
        add_one(t, r, -1);
}

static prov_diag_test_t *new_test(diag_ctx_t *c, prov_span_t name)
{
    prov_diag_t *d = c->d;
    if (prov_grow((void **)&d->tests, &c->tcap, d->ntests + 1, sizeof *d->tests))
        return NULL;
    prov_diag_test_t *t = &d->tests[d->ntests++];
    snprintf(t->category, sizeof t->category, "%s", c->category);
    prov_span_copy(t->name, sizeof t->name, prov_trim(name));
    return t;
}

static int table_row(diag_ctx_t *c, prov_span_t name, prov_span_t val)
{
    prov_span_t nm = prov_trim(name);
    prov_span_t v = prov_trim(val);
    if (nm.n == 0) { /* continuation row */
        if (v.n == 0 || !c->cur)
            return 0;
        prov_diag_result_t r;
        prov_span_t ids;
        if (!c->cur_is_note && parse_result(v, &r, &ids)) {
            add_result(c->cur, r, ids);
        } else {
            append_chunk(c->cur->message, sizeof c->cur->message, val, false);
        }
        return 0;
    }
    if (prov_span_eq(nm, "Diagnostic") && prov_span_eq(v, "Result"))
        return 0;
    if (strcasecmp(c->category, "Metadata") == 0 || prov_span_eq(nm, "DCGM Version")) {
        char *dst = NULL;
        size_t cap = 0;
        if (prov_span_eq(nm, "DCGM Version")) {
            dst = c->d->dcgm_version;
            cap = sizeof c->d->dcgm_version;
        } else if (prov_span_eq(nm, "Driver Version Detected")) {
            dst = c->d->driver_version;
            cap = sizeof c->d->driver_version;
        } else if (prov_span_eq(nm, "GPU Device IDs Detected")) {
            dst = c->d->gpu_device_ids;
            cap = sizeof c->d->gpu_device_ids;
        }
        if (dst)
            prov_span_copy(dst, cap, v);
        c->cur = NULL;
        return 0;
    }
    bool note =
        prov_span_eq(nm, "Info") || prov_span_eq(nm, "Warning") || prov_span_eq(nm, "Error");
    if (note) {
        prov_diag_test_t *t = c->cur;
        if (!t) {
            t = new_test(c, nm);
            if (!t)
                return -1;
        }
        if (prov_span_eq(nm, "Error"))
            t->result = worst(t->result, PROV_DIAG_ERROR);
        else if (prov_span_eq(nm, "Warning"))
            t->result = worst(t->result, PROV_DIAG_WARN);
        if (t->message[0]) {
            size_t have = strlen(t->message);
            snprintf(t->message + have, sizeof t->message - have, " | ");
        }
        append_chunk(t->message, sizeof t->message, val, true);
        c->cur = t;
        c->cur_is_note = true;
        return 0;
    }
    prov_diag_test_t *t = new_test(c, nm);
    if (!t)
        return -1;
    prov_span_copy(t->result_text, sizeof t->result_text, v);
    prov_diag_result_t r;
    prov_span_t ids;
    if (parse_result(v, &r, &ids))
        add_result(t, r, ids);
    c->cur = t;
    c->cur_is_note = false;
    return 0;
}

/* "|-----  Deployment  --------+----...|" -> "Deployment" */
static bool category_line(prov_span_t t, char *dst, size_t cap)
{
    if (!(prov_span_starts(t, "|--") || prov_span_starts(t, "+--")))
        return false;
    size_t i = 1;
    while (i < t.n && t.p[i] == '-')
        i++;
    size_t st = i;
    while (i < t.n && t.p[i] != '-' && t.p[i] != '+' && t.p[i] != '|')
        i++;
    prov_span_t name = prov_trim(prov_span(t.p + st, i - st));
    if (name.n == 0)
        return false;
    prov_span_copy(dst, cap, name);
    return true;
}

int prov_diag_parse(const char *text, size_t len, prov_diag_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    diag_ctx_t c = {.d = out};
    int rc = -1;
    bool in_table = false, saw_header = false;
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        if (t.n == 0)
            continue;
        if (prov_span_starts(t, "Successfully ran diagnostic")) {
            out->ran_ok_banner = true;
            continue;
        }
        if (prov_span_starts(t, "Error:") || prov_span_starts(t, "ERROR:")) {
            if (prov_grow((void **)&out->errors, &c.ecap, out->nerrors + 1, sizeof *out->errors)) {
                prov_err_set(err, it.lineno, 0, "too many error lines");
                goto cleanup;
            }
            prov_span_copy(out->errors[out->nerrors++], PROV_MSG_MAX,
                           prov_trim(prov_span_from(t, 6)));
            continue;
        }
        if (t.p[0] == '+' || (t.p[0] == '|' && t.n > 1 && (t.p[1] == '-' || t.p[1] == '='))) {
            if (category_line(t, c.category, sizeof c.category)) {
                c.cur = NULL;
                in_table = true;
            } else if (in_table && saw_header && prov_span_starts(t, "+-") &&
                       prov_span_find(t, "+=") < 0) {
                /* a plain border after the header: end of table, or between sections */
                out->table_complete = true;
            }
            if (prov_span_starts(t, "+="))
                saw_header = true;
            in_table = true;
            continue;
        }
        if (t.p[0] != '|')
            continue; /* foreign line (warnings, progress) */
        prov_span_t body = prov_span(line.p, line.n);
        long bar = prov_span_find(body, "|");
        body = prov_span_from(body, (size_t)bar + 1);
        prov_span_t cells[3];
        size_t nc = prov_split_ch(prov_rtrim(body), '|', cells, 3);
        if (nc < 2)
            continue;
        in_table = true;
        out->table_complete = false;
        if (table_row(&c, cells[0], cells[1]) < 0) {
            prov_err_set(err, it.lineno, 0, "too many tests");
            goto cleanup;
        }
    }
    for (size_t i = 0; i < out->ntests; i++)
        rtrim_str(out->tests[i].message);
    if (out->ntests == 0 && out->nerrors == 0) {
        prov_err_set(err, 0, 0, "no dcgmi diag results: expected a result table or 'Error:' lines");
        goto cleanup;
    }
    /* Verdict: any Error -> ERROR, else any Fail -> FAIL, Warn -> WARN. */
    prov_diag_result_t v = PROV_DIAG_NONE;
    for (size_t i = 0; i < out->ntests; i++)
        v = worst(v, out->tests[i].result);
    if (out->nerrors)
        v = PROV_DIAG_ERROR;
    if (v == PROV_DIAG_NONE || v == PROV_DIAG_SKIP)
        v = PROV_DIAG_WARN; /* nothing actually passed */
    if (v == PROV_DIAG_PASS && !out->table_complete)
        v = PROV_DIAG_ERROR; /* a truncated table proves nothing */
    out->verdict = v;
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_diag_free);
}

void prov_diag_free(prov_diag_t *d)
{
    PROV_RELEASE(d, d->tests, d->errors);
}

const char *prov_diag_result_name(prov_diag_result_t r)
{
    switch (r) {
    case PROV_DIAG_NONE: return "none";
    case PROV_DIAG_PASS: return "pass";
    case PROV_DIAG_FAIL: return "fail";
    case PROV_DIAG_SKIP: return "skip";
    case PROV_DIAG_WARN: return "warn";
    case PROV_DIAG_ERROR: return "error";
    }
    return "none";
}

const prov_diag_test_t *prov_diag_find(const prov_diag_t *d, const char *name)
{
    for (size_t i = 0; i < d->ntests; i++)
        if (prov_span_ieq(prov_span(d->tests[i].name, strlen(d->tests[i].name)), name))
            return &d->tests[i];
    return NULL;
}

json_t *prov_diag_to_json(const prov_diag_t *d)
{
    assert(d);
    json_t *root = json_object(), *tests = json_array(), *errs = json_array();
    if (!root || !tests || !errs) {
        json_decref(root);
        json_decref(tests);
        json_decref(errs);
        return NULL;
    }
    for (size_t i = 0; i < d->ntests; i++) {
        const prov_diag_test_t *t = &d->tests[i];
        json_t *gr = json_array();
        for (size_t k = 0; k < t->ngpu_results; k++)
            json_array_append_new(
                gr, json_pack("{s:o,s:s}", "gpu",
                              t->gpu_results[k].gpu < 0 ? json_string("all")
                                                        : json_integer(t->gpu_results[k].gpu),
                              "result", prov_diag_result_name(t->gpu_results[k].result)));
        json_array_append_new(tests,
                              json_pack("{s:o,s:o,s:s,s:o,s:o}", "category",
                                        prov_str_json(t->category), "name", prov_str_json(t->name),
                                        "result", prov_diag_result_name(t->result), "gpus", gr,
                                        "message", prov_str_json(t->message)));
    }
    for (size_t i = 0; i < d->nerrors; i++)
        json_array_append_new(errs, prov_str_json(d->errors[i]));
    json_object_set_new(root, "verdict", json_string(prov_diag_result_name(d->verdict)));
    json_object_set_new(root, "dcgm_version", prov_str_json(d->dcgm_version));
    json_object_set_new(root, "driver_version", prov_str_json(d->driver_version));
    json_object_set_new(root, "table_complete", json_boolean(d->table_complete));
    json_object_set_new(root, "tests", tests);
    json_object_set_new(root, "errors", errs);
    return root;
}
