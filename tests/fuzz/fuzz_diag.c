/* libFuzzer target: dcgmi diag.  Run by tests/fuzz/run. */
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
    prov_diag_t d;
    if (prov_diag_parse(text, size, &d, &err) == 0) {
        (void)prov_diag_find(&d, "PCIe");
        render(prov_diag_to_json(&d));
        prov_diag_free(&d);
    }
    return 0;
}
