/* Why did nvidia-smi fail?  Maps its stdout/stderr to a reason.
 *
 *   NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ...
 *   No devices were found
 *   Failed to initialize NVML: Driver/library version mismatch
 *   NVML library version: 550.144                    (newer 2-line form)
 *   ERROR: Option -m is missing its value. ...       (bad invocation, e.g. Windows topo) */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <string.h>

static const struct {
    const char *needle; /* case-insensitive substring */
    prov_nvsmi_reason_t reason;
} patterns[] = {
    {"couldn't communicate with the nvidia driver", PROV_NVSMI_NO_DRIVER},
    {"could not communicate with the nvidia driver", PROV_NVSMI_NO_DRIVER},
    {"driver/library version mismatch", PROV_NVSMI_DRIVER_LIBRARY_MISMATCH},
    {"no devices were found", PROV_NVSMI_NO_DEVICES},
    {"gpu is lost", PROV_NVSMI_GPU_LOST},
    {"unable to determine the device handle", PROV_NVSMI_GPU_LOST},
    {"insufficient permissions", PROV_NVSMI_PERMISSION},
    {"nvidia-smi: command not found", PROV_NVSMI_NOT_INSTALLED},
    {"nvidia-smi: not found", PROV_NVSMI_NOT_INSTALLED},
    {"failed to initialize nvml", PROV_NVSMI_NVML_INIT},
    {"is missing its value", PROV_NVSMI_USAGE},
    {"invalid combination of input arguments", PROV_NVSMI_USAGE},
};

const char *prov_nvsmi_reason_name(prov_nvsmi_reason_t r)
{
    switch (r) {
    case PROV_NVSMI_OK: return "ok";
    case PROV_NVSMI_NO_DRIVER: return "no_driver";
    case PROV_NVSMI_NO_DEVICES: return "no_devices";
    case PROV_NVSMI_DRIVER_LIBRARY_MISMATCH: return "driver_library_mismatch";
    case PROV_NVSMI_NVML_INIT: return "nvml_init";
    case PROV_NVSMI_GPU_LOST: return "gpu_lost";
    case PROV_NVSMI_PERMISSION: return "permission";
    case PROV_NVSMI_NOT_INSTALLED: return "not_installed";
    case PROV_NVSMI_USAGE: return "usage";
    case PROV_NVSMI_UNKNOWN: return "unknown";
    }
    return "unknown";
}

void prov_nvsmi_error_classify(const char *text, size_t len, int exit_status,
                               prov_nvsmi_error_t *out)
{
    PROV_PARSE_BEGIN(out, NULL);
    prov_lines_t it;
    prov_span_t t;
    prov_lines_init(&it, text, len);
    while (prov_lines_next_text(&it, &t)) {
        if (prov_span_starts(t, "NVML library version:")) {
            prov_span_t v = prov_trim(prov_span_from(t, 21));
            if (prov_is_version(v))
                prov_span_copy(out->nvml_library_version, sizeof out->nvml_library_version, v);
            continue;
        }
        if (out->reason != PROV_NVSMI_OK && out->reason != PROV_NVSMI_UNKNOWN)
            continue;
        for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
            if (prov_span_ifind(t, patterns[i].needle) >= 0) {
                out->reason = patterns[i].reason;
                out->line = it.lineno;
                prov_span_copy(out->message, sizeof out->message, t);
                break;
            }
        }
        if (out->reason == PROV_NVSMI_OK &&
            (prov_span_starts(t, "ERROR") || prov_span_starts(t, "Error") ||
             prov_span_starts(t, "Failed"))) {
            out->reason = PROV_NVSMI_UNKNOWN;
            out->line = it.lineno;
            prov_span_copy(out->message, sizeof out->message, t);
        }
    }
    if (out->reason == PROV_NVSMI_OK && exit_status > 0)
        out->reason = PROV_NVSMI_UNKNOWN;
}

json_t *prov_nvsmi_error_to_json(const prov_nvsmi_error_t *e)
{
    assert(e);
    return json_pack("{s:s,s:i,s:o,s:o}", "reason", prov_nvsmi_reason_name(e->reason), "line",
                     (int)e->line, "message", prov_str_json(e->message), "nvml_library_version",
                     prov_str_json(e->nvml_library_version));
}
