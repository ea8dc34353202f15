/* Version strings: nvcc --version, /proc/driver/nvidia/version,
 * nvidia-smi --version. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- nvcc --version
 *   Cuda compilation tools, release 12.6, V12.6.77
 *   Build cuda_12.6.r12.6/compiler.34841621_0      (absent before ~10.2) */
int prov_nvcc_parse(const char *text, size_t len, prov_nvcc_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    prov_lines_t it;
    prov_span_t line;
    bool found = false;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        long r = prov_span_find(t, "release ");
        if (r >= 0 && prov_span_find(t, "compilation tools") >= 0) {
            prov_span_t rest = prov_span_from(t, (size_t)r + 8);
            prov_span_t f[3];
            size_t nf = prov_split_ch(rest, ',', f, 3);
            prov_span_t rel = prov_trim(f[0]);
            if (!prov_is_version(rel)) {
                prov_err_set(err, it.lineno, (unsigned)(rel.p - line.p) + 1,
                             "expected a release number like '12.6'");
                goto cleanup;
            }
            prov_span_copy(out->release, sizeof out->release, rel);
            if (nf >= 2) {
                prov_span_t v = prov_trim(f[1]);
                if (v.n && v.p[0] == 'V')
                    v = prov_span_from(v, 1);
                if (prov_is_version(v))
                    prov_span_copy(out->version, sizeof out->version, v);
            }
            found = true;
        } else if (prov_span_starts(t, "Build ")) {
            prov_span_copy(out->build, sizeof out->build, prov_trim(prov_span_from(t, 6)));
        }
    }
    if (!found) {
        prov_err_set(err, 0, 0, "no 'Cuda compilation tools, release X.Y' line");
        goto cleanup;
    }
    char *dot = strchr(out->release, '.');
    out->major = atoi(out->release);
    out->minor = dot ? atoi(dot + 1) : 0;
    return 0;
cleanup:
    return PROV_PARSE_END(-1, err, out, PROV_ZERO);
}

json_t *prov_nvcc_to_json(const prov_nvcc_t *n)
{
    assert(n);
    return json_pack("{s:o,s:o,s:o,s:i,s:i}", "release", prov_str_json(n->release), "version",
                     prov_str_json(n->version), "build", prov_str_json(n->build), "major", n->major,
                     "minor", n->minor);
}

/* ---- /proc/driver/nvidia/version
 *   NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ...
 *   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...
 *   GCC version:  gcc version 13.3.0 (...)                  (trailing spaces possible) */
int prov_kmod_parse(const char *text, size_t len, prov_kmod_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    prov_lines_t it;
    prov_span_t line;
    bool found = false;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        if (prov_span_starts(t, "NVRM version:")) {
            prov_span_t rest = prov_trim(prov_span_from(t, 13));
            long km = prov_span_find(rest, "Kernel Module");
            if (km < 0) {
                prov_err_set(err, it.lineno, 0, "expected '... Kernel Module <version>'");
                goto cleanup;
            }
            out->open = prov_span_find(prov_span(rest.p, (size_t)km), "Open") >= 0;
            prov_span_t tok[16];
            size_t nt = prov_split_ws(prov_span(rest.p, (size_t)km), tok, 16);
            for (size_t i = 0; i < nt; i++)
                if (prov_span_eq(tok[i], "x86_64") || prov_span_eq(tok[i], "aarch64") ||
                    prov_span_eq(tok[i], "ppc64le"))
                    prov_span_copy(out->arch, sizeof out->arch, tok[i]);
            nt = prov_split_ws(prov_span_from(rest, (size_t)km + 13), tok, 16);
            for (size_t i = 0; i < nt && !out->version[0]; i++) {
                if (prov_span_eq(tok[i], "x86_64") || prov_span_eq(tok[i], "aarch64") ||
                    prov_span_eq(tok[i], "ppc64le"))
                    prov_span_copy(out->arch, sizeof out->arch, tok[i]);
                else if (prov_is_version(tok[i]) && prov_span_find(tok[i], ".") > 0)
                    prov_span_copy(out->version, sizeof out->version, tok[i]);
            }
            if (!out->version[0]) {
                prov_err_set(err, it.lineno, 0, "no driver version after 'Kernel Module'");
                goto cleanup;
            }
            found = true;
        } else if (prov_span_starts(t, "GCC version:")) {
            prov_span_copy(out->gcc, sizeof out->gcc, prov_trim(prov_span_from(t, 12)));
        }
    }
    if (!found) {
        prov_err_set(err, 0, 0, "no 'NVRM version:' line");
        goto cleanup;
    }
    return 0;
cleanup:
    return PROV_PARSE_END(-1, err, out, PROV_ZERO);
}

json_t *prov_kmod_to_json(const prov_kmod_t *k)
{
    assert(k);
    return json_pack("{s:o,s:o,s:b,s:o}", "version", prov_str_json(k->version), "arch",
                     prov_str_json(k->arch), "open", (int)k->open, "gcc", prov_str_json(k->gcc));
}

/* ---- nvidia-smi --version
 *   NVIDIA-SMI version  : 590.48.01
 *   NVML version        : 590.48
 *   DRIVER version      : 590.48.01
 *   CUDA Version        : 13.1 */
int prov_smi_version_parse(const char *text, size_t len, prov_smi_version_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        long colon = prov_span_find(t, ":");
        if (colon <= 0)
            continue;
        prov_span_t key = prov_trim(prov_span(t.p, (size_t)colon));
        prov_span_t val = prov_trim(prov_span_from(t, (size_t)colon + 1));
        if (!prov_is_version(val))
            continue;
        if (prov_span_ieq(key, "NVIDIA-SMI version"))
            prov_span_copy(out->smi, sizeof out->smi, val);
        else if (prov_span_ieq(key, "NVML version"))
            prov_span_copy(out->nvml, sizeof out->nvml, val);
        else if (prov_span_ieq(key, "DRIVER version"))
            prov_span_copy(out->driver, sizeof out->driver, val);
        else if (prov_span_ieq(key, "CUDA Version"))
            prov_span_copy(out->cuda, sizeof out->cuda, val);
    }
    if (!out->driver[0]) {
        prov_err_set(err, 0, 0, "no 'DRIVER version : X' line");
        return PROV_PARSE_END(-1, err, out, PROV_ZERO);
    }
    return 0;
}

json_t *prov_smi_version_to_json(const prov_smi_version_t *v)
{
    assert(v);
    return json_pack("{s:o,s:o,s:o,s:o}", "nvidia_smi", prov_str_json(v->smi), "nvml",
                     prov_str_json(v->nvml), "driver", prov_str_json(v->driver), "cuda",
                     prov_str_json(v->cuda));
}
