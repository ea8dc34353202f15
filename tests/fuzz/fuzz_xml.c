/* libFuzzer target: nvidia-smi -q -x tag scanner.  Run by tests/fuzz/run. */
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
    prov_xml_t x;
    if (prov_xml_parse(text, size, &x, &err) == 0) {
        render(prov_xml_to_json(&x));
        prov_xml_free(&x);
    }
    return 0;
}
