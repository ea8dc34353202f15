/* libFuzzer target: docker / nvidia-container-cli errors and info.  Run by tests/fuzz/run. */
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
    prov_ctr_error_t e;
    prov_ctr_classify(text, size, 1, &e);
    render(prov_ctr_error_to_json(&e));
    prov_ctr_info_t i;
    if (prov_ctr_info_parse(text, size, &i, &err) == 0) {
        render(prov_ctr_info_to_json(&i));
        prov_ctr_info_free(&i);
    }
    return 0;
}
