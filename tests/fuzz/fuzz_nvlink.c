/* libFuzzer target: nvidia-smi nvlink -s.  Run by tests/fuzz/run. */
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
    prov_nvlink_t n;
    if (prov_nvlink_parse(text, size, &n, &err) == 0) {
        render(prov_nvlink_to_json(&n));
        prov_nvlink_free(&n);
    }
    return 0;
}
