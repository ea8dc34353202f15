/* libFuzzer target: nvcc --version, /proc/driver/nvidia/version, nvidia-smi --version.  Run by
 * tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "provisioner/parse/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(json_t *j)
{
    if (!j)
        return;
    char *s = json_dumps(j, JSON_COMPACT);
    free(s);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    prov_err_t err;
    prov_nvcc_t n;
    if (prov_nvcc_parse(text, size, &n, &err) == 0)
        render(prov_nvcc_to_json(&n));
    prov_kmod_t k;
    if (prov_kmod_parse(text, size, &k, &err) == 0)
        render(prov_kmod_to_json(&k));
    prov_smi_version_t v;
    if (prov_smi_version_parse(text, size, &v, &err) == 0)
        render(prov_smi_version_to_json(&v));
    return 0;
}
