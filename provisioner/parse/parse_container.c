/* docker / docker compose / nvidia-container-cli: error reasons, and the
 * `nvidia-container-cli info` block.
 *
 * The classifier walks the lines in order and returns the first line that
 * matches a known pattern (patterns are checked most specific first); an
 * unrecognised "Error"/"error" line gives PROV_CTR_UNKNOWN with that line.
 * The info parser skips glog-style debug lines ("I0114 04:33:38.553037
 * 7944 nvc_info.c:489] ...") which -d interleaves with the info block, and
 * treats "(null)" (seen on Jetson) as absent. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *needle; /* case-insensitive substring */
    prov_ctr_reason_t reason;
} ctr_patterns[] = {
    {"libnvidia-ml.so", PROV_CTR_LIBNVIDIA_ML_MISSING},
    {"driver/library version mismatch", PROV_CTR_DRIVER_MISMATCH},
    {"nvml error: driver not loaded", PROV_CTR_NO_GPU_DRIVER},
    {"driver not loaded", PROV_CTR_NO_GPU_DRIVER},
    {"no nvidia driver", PROV_CTR_NO_GPU_DRIVER},
    {"unsatisfied condition", PROV_CTR_REQUIREMENT},
    {"requirement error", PROV_CTR_REQUIREMENT},
    {"could not select device driver", PROV_CTR_NO_RUNTIME},
    {"unknown or invalid runtime name", PROV_CTR_NO_RUNTIME},
    {"nvidia-container-runtime-hook\": executable file not found", PROV_CTR_NO_RUNTIME},
    {"nvidia-container-cli: not found", PROV_CTR_NO_RUNTIME},
    {"no cuda-capable device", PROV_CTR_NO_DEVICE},
    {"nvidia-container-cli: device error", PROV_CTR_NO_DEVICE},
    {"cannot connect to the docker daemon", PROV_CTR_DAEMON_DOWN},
    {"is the docker daemon running", PROV_CTR_DAEMON_DOWN},
    {"permission denied while trying to connect to the docker daemon", PROV_CTR_PERMISSION},
    {"unable to find image", PROV_CTR_IMAGE},
    {"pull access denied", PROV_CTR_IMAGE},
    {"manifest unknown", PROV_CTR_IMAGE},
    {"docker: command not found", PROV_CTR_NOT_INSTALLED},
    {"docker: not found", PROV_CTR_NOT_INSTALLED},
};

const char *prov_ctr_reason_name(prov_ctr_reason_t r)
{
    switch (r) {
    case PROV_CTR_OK: return "ok";
    case PROV_CTR_NO_RUNTIME: return "no_runtime";
    case PROV_CTR_LIBNVIDIA_ML_MISSING: return "libnvidia_ml_missing";
    case PROV_CTR_NO_GPU_DRIVER: return "no_gpu_driver";
    case PROV_CTR_DRIVER_MISMATCH: return "driver_mismatch";
    case PROV_CTR_REQUIREMENT: return "requirement";
    case PROV_CTR_NO_DEVICE: return "no_device";
    case PROV_CTR_DAEMON_DOWN: return "daemon_down";
    case PROV_CTR_PERMISSION: return "permission";
    case PROV_CTR_IMAGE: return "image";
    case PROV_CTR_NOT_INSTALLED: return "not_installed";
    case PROV_CTR_UNKNOWN: return "unknown";
    }
    return "unknown";
}

static bool looks_like_error(prov_span_t t)
{
    return prov_span_ifind(t, "error") >= 0 || prov_span_ifind(t, "failed") >= 0 ||
           prov_span_starts(t, "ERRO[");
}

void prov_ctr_classify(const char *text, size_t len, int exit_status, prov_ctr_error_t *out)
{
    PROV_PARSE_BEGIN(out, NULL);
    unsigned unknown_line = 0;
    prov_span_t unknown = {0};
    prov_lines_t it;
    prov_span_t t;
    prov_lines_init(&it, text, len);
    while (prov_lines_next_text(&it, &t)) {
        for (size_t i = 0; i < sizeof ctr_patterns / sizeof ctr_patterns[0]; i++) {
            if (prov_span_ifind(t, ctr_patterns[i].needle) >= 0) {
                out->reason = ctr_patterns[i].reason;
                out->line = it.lineno;
                prov_span_copy(out->matched, sizeof out->matched, t);
                return;
            }
        }
        if (!unknown_line && looks_like_error(t)) {
            unknown_line = it.lineno;
            unknown = t;
        }
    }
    if (unknown_line) {
        out->reason = PROV_CTR_UNKNOWN;
        out->line = unknown_line;
        prov_span_copy(out->matched, sizeof out->matched, unknown);
    } else if (exit_status > 0) {
        out->reason = PROV_CTR_UNKNOWN;
    } else {
        out->reason = PROV_CTR_OK;
    }
}

json_t *prov_ctr_error_to_json(const prov_ctr_error_t *e)
{
    assert(e);
    return json_pack("{s:s,s:i,s:o}", "reason", prov_ctr_reason_name(e->reason), "line",
                     (int)e->line, "matched", prov_str_json(e->matched));
}

/* "I0114 04:33:38.553037 7944 nvc_info.c:489] ..." */
static bool is_glog(prov_span_t t)
{
    return t.n > 6 && strchr("IWEF", t.p[0]) && isdigit((unsigned char)t.p[1]) &&
           isdigit((unsigned char)t.p[2]) && isdigit((unsigned char)t.p[3]) &&
           isdigit((unsigned char)t.p[4]) && t.p[5] == ' ';
}

static void copy_val(char *dst, size_t cap, prov_span_t v)
{
    v = prov_trim(v);
    if (prov_value_state(v.p, v.n) != PROV_V_OK)
        dst[0] = '\0';
    else
        prov_span_copy(dst, cap, v);
}

int prov_ctr_info_parse(const char *text, size_t len, prov_ctr_info_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    size_t cap = 0;
    bool have_nvrm = false, have_cuda = false;
    prov_lines_t it;
    prov_span_t t;
    prov_lines_init(&it, text, len);
    while (prov_lines_next_text(&it, &t)) {
        if (is_glog(t)) {
            out->nlog_lines++;
            continue;
        }
        long colon = prov_span_find(t, ":");
        if (colon <= 0)
            continue;
        prov_span_t key = prov_trim(prov_span(t.p, (size_t)colon));
        prov_span_t val = prov_trim(prov_span_from(t, (size_t)colon + 1));
        prov_ctr_dev_t *d = out->ndevs ? &out->devs[out->ndevs - 1] : NULL;
        if (prov_span_eq(key, "NVRM version")) {
            copy_val(out->nvrm_version, sizeof out->nvrm_version, val);
            have_nvrm = true;
        } else if (prov_span_eq(key, "CUDA version")) {
            copy_val(out->cuda_version, sizeof out->cuda_version, val);
            have_cuda = true;
        } else if (prov_span_eq(key, "Device Index")) {
            if (prov_grow((void **)&out->devs, &cap, out->ndevs + 1, sizeof *out->devs)) {
                prov_err_set(err, it.lineno, 0, "too many devices");
                goto cleanup;
            }
            d = &out->devs[out->ndevs++];
            d->index = prov_parse_num(val);
        } else if (!d) {
            continue;
        } else if (prov_span_eq(key, "Device Minor")) {
            d->minor = prov_parse_num(val);
        } else if (prov_span_eq(key, "Model")) {
            copy_val(d->model, sizeof d->model, val);
        } else if (prov_span_eq(key, "Brand")) {
            copy_val(d->brand, sizeof d->brand, val);
        } else if (prov_span_eq(key, "GPU UUID")) {
            copy_val(d->uuid, sizeof d->uuid, val);
        } else if (prov_span_eq(key, "Bus Location")) {
            copy_val(d->bus, sizeof d->bus, val);
        } else if (prov_span_eq(key, "Architecture")) {
            copy_val(d->arch, sizeof d->arch, val);
        }
    }
    if (!have_nvrm && !have_cuda && out->ndevs == 0) {
        prov_err_set(err, 0, 0,
                     "not nvidia-container-cli info output: no 'NVRM version:', 'CUDA version:' "
                     "or 'Device Index:' line");
        goto cleanup;
    }
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_ctr_info_free);
}

void prov_ctr_info_free(prov_ctr_info_t *i)
{
    PROV_RELEASE(i, i->devs);
}

json_t *prov_ctr_info_to_json(const prov_ctr_info_t *i)
{
    assert(i);
    json_t *devs = json_array();
    if (!devs)
        return NULL;
    for (size_t k = 0; k < i->ndevs; k++) {
        const prov_ctr_dev_t *d = &i->devs[k];
        json_array_append_new(
            devs, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "index", prov_num_json(d->index),
                            "minor", prov_num_json(d->minor), "model", prov_str_json(d->model),
                            "brand", prov_str_json(d->brand), "uuid", prov_str_json(d->uuid), "bus",
                            prov_str_json(d->bus), "arch", prov_str_json(d->arch)));
    }
    return json_pack("{s:o,s:o,s:o}", "nvrm_version", prov_str_json(i->nvrm_version),
                     "cuda_version", prov_str_json(i->cuda_version), "devices", devs);
}
