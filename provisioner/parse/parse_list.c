/* nvidia-smi -L:
 *   GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-...)
 *     MIG 1g.20gb     Device  0: (UUID: MIG-ce861fb0-...)
 * Older MIG lines use "MIG 1g.5gb Device 0: (UUID: MIG-GPU-.../7/0)"; both
 * are handled: profile, then "Device", index, ':', then the UUID. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

bool prov_parse_gpu_line(prov_span_t line, int *index, char *name, size_t name_cap, char *uuid,
                         size_t uuid_cap)
{
    prov_span_t t = prov_trim(line);
    if (!prov_span_starts(t, "GPU "))
        return false;
    t = prov_span_from(t, 4);
    long colon = prov_span_find(t, ":");
    if (colon <= 0)
        return false;
    long idx = prov_parse_uint(prov_span(t.p, (size_t)colon));
    if (idx < 0)
        return false;
    *index = (int)idx;
    prov_span_t rest = prov_trim(prov_span_from(t, (size_t)colon + 1));
    name[0] = '\0';
    uuid[0] = '\0';
    long u = prov_span_find(rest, "(UUID:");
    if (u >= 0) {
        prov_span_t us = prov_trim(prov_span_from(rest, (size_t)u + 6));
        long close = prov_span_find(us, ")");
        if (close >= 0)
            us.n = (size_t)close;
        prov_span_copy(uuid, uuid_cap, prov_trim(us));
        rest.n = (size_t)u;
    }
    prov_span_copy(name, name_cap, prov_trim(rest));
    return true;
}

static bool parse_mig_line(prov_span_t line, prov_list_mig_t *m)
{
    prov_span_t t = prov_trim(line);
    if (!prov_span_starts(t, "MIG "))
        return false;
    prov_span_t tok[6];
    size_t nt = prov_split_ws(t, tok, 6);
    if (nt < 4 || !prov_span_eq(tok[2], "Device"))
        return false;
    prov_span_t di = tok[3];
    if (di.n && di.p[di.n - 1] == ':')
        di.n--;
    long d = prov_parse_uint(di);
    if (d < 0)
        return false;
    m->device = (int)d;
    prov_span_copy(m->profile, sizeof m->profile, tok[1]);
    long u = prov_span_find(t, "(UUID:");
    if (u >= 0) {
        prov_span_t us = prov_trim(prov_span_from(t, (size_t)u + 6));
        long close = prov_span_find(us, ")");
        if (close >= 0)
            us.n = (size_t)close;
        prov_span_copy(m->uuid, sizeof m->uuid, prov_trim(us));
    }
    return true;
}

int prov_list_parse(const char *text, size_t len, prov_list_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    size_t gcap = 0, mcap = 0;
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        if (prov_span_empty(line))
            continue;
        prov_list_gpu_t g = {0};
        prov_list_mig_t m = {0};
        if (prov_parse_gpu_line(line, &g.index, g.name, sizeof g.name, g.uuid, sizeof g.uuid)) {
            if (prov_grow((void **)&out->gpus, &gcap, out->ngpus + 1, sizeof *out->gpus)) {
                prov_err_set(err, it.lineno, 0, "too many GPUs");
                goto cleanup;
            }
            out->gpus[out->ngpus++] = g;
        } else if (parse_mig_line(line, &m)) {
            if (out->ngpus == 0) {
                prov_err_set(err, it.lineno, 1, "MIG device line before any GPU line");
                goto cleanup;
            }
            m.gpu = out->gpus[out->ngpus - 1].index;
            if (prov_grow((void **)&out->mig, &mcap, out->nmig + 1, sizeof *out->mig)) {
                prov_err_set(err, it.lineno, 0, "too many MIG devices");
                goto cleanup;
            }
            out->mig[out->nmig++] = m;
        } else {
            prov_err_set(err, it.lineno, 1,
                         "expected 'GPU <n>: <name> (UUID: ...)' or 'MIG <profile> Device <n>: "
                         "(UUID: ...)'");
            goto cleanup;
        }
    }
    if (out->ngpus == 0) {
        prov_err_set(err, 0, 0, "no 'GPU <n>:' lines found");
        goto cleanup;
    }
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_list_free);
}

void prov_list_free(prov_list_t *l)
{
    PROV_RELEASE(l, l->gpus, l->mig);
}

json_t *prov_list_to_json(const prov_list_t *l)
{
    assert(l);
    json_t *root = json_object(), *gpus = json_array(), *mig = json_array();
    if (!root || !gpus || !mig) {
        json_decref(root);
        json_decref(gpus);
        json_decref(mig);
        return NULL;
    }
    for (size_t i = 0; i < l->ngpus; i++)
        json_array_append_new(gpus, json_pack("{s:i,s:o,s:o}", "index", l->gpus[i].index, "name",
                                              prov_str_json(l->gpus[i].name), "uuid",
                                              prov_str_json(l->gpus[i].uuid)));
    for (size_t i = 0; i < l->nmig; i++)
        json_array_append_new(mig, json_pack("{s:i,s:i,s:o,s:o}", "gpu", l->mig[i].gpu, "device",
                                             l->mig[i].device, "profile",
                                             prov_str_json(l->mig[i].profile), "uuid",
                                             prov_str_json(l->mig[i].uuid)));
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "mig_devices", mig);
    return root;
}
