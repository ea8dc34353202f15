/* libFuzzer target: nvidia-smi -L.  Run by tests/fuzz/run. */
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
    prov_list_t l;
    if (prov_list_parse(text, size, &l, &err) == 0) {
        render(prov_list_to_json(&l));
        prov_list_free(&l);
    }
    return 0;
}
