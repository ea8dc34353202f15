/* libFuzzer target: nvidia-smi --query-gpu CSV (with and without a field list).  Run by
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
    prov_qgpu_t q;
    if (prov_qgpu_parse(text, size, NULL, 0, &q, &err) == 0) {
        render(prov_qgpu_to_json(&q));
        for (size_t r = 0; r < q.nrows; r++)
            (void)prov_qgpu_cell(&q, r, "uuid");
        prov_qgpu_free(&q);
    }
    static const char *const f[] = {"index",        "name",        "uuid",
                                    "memory.total", "memory.used", "retired_pages.pending"};
    if (prov_qgpu_parse(text, size, f, 6, &q, &err) == 0) {
        render(prov_qgpu_to_json(&q));
        prov_qgpu_free(&q);
    }
    return 0;
}
