/* nvidia-smi nvlink -s:
 *   GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
 *   \t Link 0: 26.562 GB/s          (tab + space indent)
 *   \t Link 1: <inactive>
 * or, instead of links, one message line per GPU:
 *   Device does not have or support Nvlink
 *   NVML: Unable to retrieve Nvlink information as all links are inActive */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int add_link(prov_nvlink_gpu_t *g, size_t *cap, prov_nvlink_link_t l)
{
    if (prov_grow((void **)&g->links, cap, g->nlinks + 1, sizeof *g->links))
        return -1;
    g->links[g->nlinks++] = l;
    if (l.active)
        g->nactive++;
    return 0;
}

int prov_nvlink_parse(const char *text, size_t len, prov_nvlink_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    int rc = -1;
    size_t gcap = 0, lcap = 0;
    prov_lines_t it;
    prov_span_t line;
    prov_lines_init(&it, text, len);
    while (prov_lines_next(&it, &line)) {
        prov_span_t t = prov_trim(line);
        if (t.n == 0)
            continue;
        prov_nvlink_gpu_t g = {0};
        if (prov_parse_gpu_line(t, &g.index, g.name, sizeof g.name, g.uuid, sizeof g.uuid)) {
            if (prov_grow((void **)&out->gpus, &gcap, out->ngpus + 1, sizeof *out->gpus)) {
                prov_err_set(err, it.lineno, 0, "too many GPUs");
                goto cleanup;
            }
            out->gpus[out->ngpus++] = g;
            lcap = 0;
            continue;
        }
        if (out->ngpus == 0) {
            prov_err_set(err, it.lineno, 1, "expected 'GPU <n>: <name> (UUID: ...)'");
            goto cleanup;
        }
        prov_nvlink_gpu_t *cur = &out->gpus[out->ngpus - 1];
        if (prov_span_starts(t, "Link ")) {
            prov_span_t rest = prov_span_from(t, 5);
            long colon = prov_span_find(rest, ":");
            long id = colon > 0 ? prov_parse_uint(prov_span(rest.p, (size_t)colon)) : -1;
            if (id < 0) {
                prov_err_set(err, it.lineno, (unsigned)(rest.p - line.p) + 1,
                             "expected 'Link <n>: <speed> GB/s'");
                goto cleanup;
            }
            prov_span_t v = prov_trim(prov_span_from(rest, (size_t)colon + 1));
            prov_nvlink_link_t l = {.id = (int)id};
            if (prov_span_ifind(v, "inactive") >= 0) {
                l.active = false;
            } else {
                prov_num_t n = prov_parse_num(v);
                if (n.st != PROV_V_OK) {
                    prov_err_set(err, it.lineno, (unsigned)(v.p - line.p) + 1,
                                 "expected a link speed ('26.562 GB/s') or '<inactive>'");
                    goto cleanup;
                }
                l.active = true;
                l.gbps = n.v;
            }
            if (add_link(cur, &lcap, l)) {
                prov_err_set(err, it.lineno, 0, "too many links");
                goto cleanup;
            }
            continue;
        }
        if (prov_span_ifind(t, "does not have or support nvlink") >= 0 ||
            prov_span_ifind(t, "not supported") >= 0)
            cur->status = PROV_NVLINK_UNSUPPORTED;
        else if (prov_span_ifind(t, "inactive") >= 0)
            cur->status = PROV_NVLINK_ALL_INACTIVE;
        else
            cur->status = PROV_NVLINK_ERROR;
        prov_span_copy(cur->message, sizeof cur->message, t);
    }
    if (out->ngpus == 0) {
        prov_err_set(err, 0, 0, "no 'GPU <n>:' lines found");
        goto cleanup;
    }
    rc = 0;
cleanup:
    return PROV_PARSE_END(rc, err, out, prov_nvlink_free);
}

void prov_nvlink_free(prov_nvlink_t *n)
{
    for (size_t i = 0; n && i < n->ngpus; i++)
        free(n->gpus[i].links);
    PROV_RELEASE(n, n->gpus);
}

const char *prov_nvlink_status_name(prov_nvlink_status_t s)
{
    switch (s) {
    case PROV_NVLINK_LINKS: return "links";
    case PROV_NVLINK_UNSUPPORTED: return "unsupported";
    case PROV_NVLINK_ALL_INACTIVE: return "all_inactive";
    case PROV_NVLINK_ERROR: return "error";
    }
    return "error";
}

json_t *prov_nvlink_to_json(const prov_nvlink_t *n)
{
    assert(n);
    json_t *root = json_object(), *gpus = json_array();
    if (!root || !gpus) {
        json_decref(root);
        json_decref(gpus);
        return NULL;
    }
    for (size_t i = 0; i < n->ngpus; i++) {
        const prov_nvlink_gpu_t *g = &n->gpus[i];
        json_t *links = json_array();
        for (size_t k = 0; k < g->nlinks; k++)
            json_array_append_new(links,
                                  json_pack("{s:i,s:b,s:f}", "id", g->links[k].id, "active",
                                            (int)g->links[k].active, "gbps", g->links[k].gbps));
        json_array_append_new(gpus,
                              json_pack("{s:i,s:o,s:o,s:s,s:o,s:i,s:o}", "index", g->index, "name",
                                        prov_str_json(g->name), "uuid", prov_str_json(g->uuid),
                                        "status", prov_nvlink_status_name(g->status), "message",
                                        prov_str_json(g->message), "active_links", (int)g->nactive,
                                        "links", links));
    }
    json_object_set_new(root, "gpus", gpus);
    return root;
}
