/* libFuzzer target: nvidia-smi failure classifier.  Run by tests/fuzz/run. */
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
    prov_nvsmi_error_t e;
    prov_nvsmi_error_classify(text, size, 1, &e);
    render(prov_nvsmi_error_to_json(&e));
    (void)err;
    return 0;
}
