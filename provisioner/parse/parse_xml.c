/* nvidia-smi -q -x: a small, tolerant tag scanner (no libxml2).
 *
 * Only the fields the gate needs are extracted.  Indentation (tabs or
 * re-indented spaces) does not matter.  <mig_devices> blocks are skipped
 * when reading GPU-level fields, because each MIG device has its own
 * <fb_memory_usage>.  Fields absent from older DTDs stay PROV_V_ABSENT.
 * Every search is bounded by the span it is given. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Finds <tag> or <tag attr...> in `in`; sets *inner to its content up to the
 * first </tag>, *whole to the element, and *attrs to the text between the
 * tag name and '>'. */
static bool find_elem(prov_span_t in, const char *tag, prov_span_t *inner, prov_span_t *whole,
                      prov_span_t *attrs)
{
    size_t tl = strlen(tag);
    char open[64], close[64];
    if (tl + 4 > sizeof open)
        return false;
    memcpy(open, "<", 1);
    memcpy(open + 1, tag, tl + 1);
    memcpy(close, "</", 2);
    memcpy(close + 2, tag, tl);
    memcpy(close + 2 + tl, ">", 2);
    prov_span_t s = in;
    for (;;) {
        long at = prov_span_find(s, open);
        if (at < 0)
            return false;
        prov_span_t after = prov_span_from(s, (size_t)at + tl + 1);
        if (after.n == 0)
            return false;
        char c = after.p[0];
        if (c != '>' && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '/') {
            s = after;
            continue;
        }
        long gt = prov_span_find(after, ">");
        if (gt < 0)
            return false;
        if (attrs)
            *attrs = prov_span(after.p, (size_t)gt);
        if (gt > 0 && after.p[gt - 1] == '/') { /* <tag/> */
            *inner = prov_span(after.p + gt, 0);
            if (whole)
                *whole = prov_span(s.p + at, (size_t)(after.p + gt + 1 - (s.p + at)));
            return true;
        }
        prov_span_t body = prov_span_from(after, (size_t)gt + 1);
        long end = prov_span_find(body, close);
        if (end < 0)
            return false;
        *inner = prov_span(body.p, (size_t)end);
        if (whole)
            *whole = prov_span(s.p + at, (size_t)(body.p + end + strlen(close) - (s.p + at)));
        return true;
    }
}

/* Value at "a/b/c" below `in`, searched in two pieces (before/after a
 * skipped region). */
static bool find_path(prov_span_t in1, prov_span_t in2, const char *path, prov_span_t *val)
{
    prov_span_t pieces[2] = {in1, in2};
    for (int p = 0; p < 2; p++) {
        prov_span_t cur = pieces[p];
        const char *seg = path;
        bool ok = true;
        while (ok && *seg) {
            const char *slash = strchr(seg, '/');
            size_t sl = slash ? (size_t)(slash - seg) : strlen(seg);
            char tag[48];
            if (sl == 0 || sl >= sizeof tag)
                return false;
            memcpy(tag, seg, sl);
            tag[sl] = '\0';
            prov_span_t inner;
            ok = find_elem(cur, tag, &inner, NULL, NULL);
            cur = inner;
            seg = slash ? slash + 1 : seg + sl;
        }
        if (ok) {
            *val = prov_trim(cur);
            return true;
        }
    }
    return false;
}

static prov_num_t num_at(prov_span_t a, prov_span_t b, const char *path)
{
    prov_span_t v;
    prov_num_t n = {PROV_V_ABSENT, 0};
    if (find_path(a, b, path, &v))
        n = prov_parse_num(v);
    return n;
}

static prov_flag_t flag_at(prov_span_t a, prov_span_t b, const char *path)
{
    prov_span_t v;
    prov_flag_t f = {PROV_V_ABSENT, false};
    if (find_path(a, b, path, &v))
        f = prov_parse_flag(v);
    return f;
}

static void str_at(prov_span_t a, prov_span_t b, const char *path, char *dst, size_t cap)
{
    prov_span_t v;
    if (find_path(a, b, path, &v) && prov_value_state(v.p, v.n) == PROV_V_OK)
        prov_span_copy(dst, cap, v);
}

static void parse_gpu(prov_span_t body, prov_span_t attrs, prov_xml_gpu_t *g)
{
    long id = prov_span_find(attrs, "id=\"");
    if (id >= 0) {
        prov_span_t v = prov_span_from(attrs, (size_t)id + 4);
        long q = prov_span_find(v, "\"");
        if (q >= 0)
            prov_span_copy(g->bus_id, sizeof g->bus_id, prov_span(v.p, (size_t)q));
    }
    prov_span_t a = body, b = prov_span(body.p + body.n, 0);
    prov_span_t mig_inner, mig_whole;
    if (find_elem(body, "mig_devices", &mig_inner, &mig_whole, NULL)) {
        a = prov_span(body.p, (size_t)(mig_whole.p - body.p));
        b = prov_span(mig_whole.p + mig_whole.n,
                      (size_t)(body.p + body.n - (mig_whole.p + mig_whole.n)));
        prov_span_t s = mig_inner, inner, whole;
        while (g->nmig_devices < PROV_MAX_ITEMS &&
               find_elem(s, "mig_device", &inner, &whole, NULL)) {
            g->nmig_devices++;
            s = prov_span(whole.p + whole.n, (size_t)(s.p + s.n - (whole.p + whole.n)));
        }
    }
    str_at(a, b, "product_name", g->product_name, sizeof g->product_name);
    str_at(a, b, "uuid", g->uuid, sizeof g->uuid);
    g->fb_total_mib = num_at(a, b, "fb_memory_usage/total");
    g->fb_used_mib = num_at(a, b, "fb_memory_usage/used");
    g->ecc_dram_uncorr_volatile = num_at(a, b, "ecc_errors/volatile/dram_uncorrectable");
    if (g->ecc_dram_uncorr_volatile.st == PROV_V_ABSENT) /* DTD <= v10 */
        g->ecc_dram_uncorr_volatile = num_at(a, b, "ecc_errors/volatile/double_bit/total");
    g->ecc_dram_uncorr_aggregate = num_at(a, b, "ecc_errors/aggregate/dram_uncorrectable");
    if (g->ecc_dram_uncorr_aggregate.st == PROV_V_ABSENT)
        g->ecc_dram_uncorr_aggregate = num_at(a, b, "ecc_errors/aggregate/double_bit/total");
    g->retired_pending = flag_at(a, b, "retired_pages/pending_retirement");
    g->remapped_pending = flag_at(a, b, "remapped_rows/remapped_row_pending");
    if (g->remapped_pending.st == PROV_V_ABSENT) /* <remapped_rows>N/A</remapped_rows> */
        g->remapped_pending = flag_at(a, b, "remapped_rows");
    g->mig_enabled = flag_at(a, b, "mig_mode/current_mig");
}

int prov_xml_parse(const char *text, size_t len, prov_xml_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    size_t cap = 0;
    prov_span_t all = prov_span(text, text ? len : 0);
    prov_span_t root;
    if (!find_elem(all, "nvidia_smi_log", &root, NULL, NULL)) {
        /* tolerate a truncated document: scan what is there */
        long at = prov_span_find(all, "<nvidia_smi_log>");
        if (at < 0) {
            prov_err_set(err, 0, 0, "no <nvidia_smi_log> element");
            goto cleanup;
        }
        root = prov_span_from(all, (size_t)at + 16);
    }
    prov_span_t none = prov_span(root.p + root.n, 0);
    long first_gpu = prov_span_find(root, "<gpu");
    prov_span_t head = first_gpu >= 0 ? prov_span(root.p, (size_t)first_gpu) : root;
    str_at(head, none, "driver_version", out->driver_version, sizeof out->driver_version);
    str_at(head, none, "cuda_version", out->cuda_version, sizeof out->cuda_version);
    out->attached_gpus = num_at(head, none, "attached_gpus");
    prov_span_t s = root, inner, whole, attrs;
    while (find_elem(s, "gpu", &inner, &whole, &attrs)) {
        if (prov_grow((void **)&out->gpus, &cap, out->ngpus + 1, sizeof *out->gpus)) {
            prov_err_set(err, 0, 0, "too many <gpu> elements");
            goto cleanup;
        }
        parse_gpu(inner, attrs, &out->gpus[out->ngpus++]);
        s = prov_span(whole.p + whole.n, (size_t)(s.p + s.n - (whole.p + whole.n)));
    }
    if (!out->driver_version[0] && out->ngpus == 0) {
        prov_err_set(err, 0, 0, "no <driver_version> and no <gpu> element");
        goto cleanup;
    }
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_xml_free);
}

void prov_xml_free(prov_xml_t *x)
{
    PROV_RELEASE(x, x->gpus);
}

json_t *prov_xml_to_json(const prov_xml_t *x)
{
    assert(x);
    json_t *gpus = json_array();
    if (!gpus)
        return NULL;
    for (size_t i = 0; i < x->ngpus; i++) {
        const prov_xml_gpu_t *g = &x->gpus[i];
        json_array_append_new(
            gpus,
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i}", "bus_id",
                      prov_str_json(g->bus_id), "product_name", prov_str_json(g->product_name),
                      "uuid", prov_str_json(g->uuid), "fb_total_mib",
                      prov_num_json(g->fb_total_mib), "fb_used_mib", prov_num_json(g->fb_used_mib),
                      "ecc_dram_uncorrected_volatile", prov_num_json(g->ecc_dram_uncorr_volatile),
                      "ecc_dram_uncorrected_aggregate", prov_num_json(g->ecc_dram_uncorr_aggregate),
                      "retired_pages_pending", prov_flag_json(g->retired_pending),
                      "remapped_rows_pending", prov_flag_json(g->remapped_pending), "mig_enabled",
                      prov_flag_json(g->mig_enabled), "mig_devices", (int)g->nmig_devices));
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "driver_version", prov_str_json(x->driver_version),
                     "cuda_version", prov_str_json(x->cuda_version), "attached_gpus",
                     prov_num_json(x->attached_gpus), "gpus", gpus);
}
