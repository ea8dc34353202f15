/* libFuzzer target: nvidia-smi default table.  Run by tests/fuzz/run. */
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
    prov_smi_t s;
    if (prov_smi_parse(text, size, &s, &err) == 0) {
        render(prov_smi_to_json(&s));
        prov_smi_free(&s);
    }
    return 0;
}
