/* libFuzzer target: nvidia-smi topo -m / -p2p.  Run by tests/fuzz/run. */
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
    prov_topo_t t;
    if (prov_topo_parse(text, size, &t, &err) == 0) {
        size_t a, b;
        (void)prov_topo_check_pairs(&t, "NV*,PIX", &a, &b);
        (void)prov_topo_min_nvlinks(&t);
        for (size_t n = 0; n < t.nnics; n++)
            (void)prov_topo_gpu_nic_link(&t, 0, n);
        render(prov_topo_to_json(&t));
        prov_topo_free(&t);
    }
    /* the expected-class matcher on fuzzed patterns */
    if (size > 0 && size < 64) {
        char pat[64];
        for (size_t i = 0; i < size; i++)
            pat[i] = text[i] ? text[i] : (char)0x20;
        pat[size] = 0;
        (void)prov_link_matches("NV12", pat);
        (void)prov_link_matches(pat, "NV*,PIX");
    }
    return 0;
}
