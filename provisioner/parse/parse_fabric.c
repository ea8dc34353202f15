/* The Fabric section of nvidia-smi -q, per GPU (NVSwitch systems: HGX/DGX
 * H100/H200/B200):
 *
 *   GPU 00000000:53:00.0
 *       ...
 *       Fabric
 *           State                             : Completed
 *           Status                            : Success
 *           CliqueId                          : N/A        (driver >= 550)
 *           ClusterUUID                       : N/A
 *           Health
 *               Bandwidth                     : N/A
 *
 * Verdict per GPU:
 *   OK      State "Completed" and Status "Success";
 *   NOT_OK  State "Completed" with any other status text (NVML's error
 *           string, "Unknown Error" included), or any other state made of
 *           words ("Not Started", "In Progress", a state newer drivers add);
 *   UNREAD  no Fabric section, a marker (N/A, [Not Supported], ERR!, [GPU
 *           requires reset], ...), Completed with status N/A, or a value that
 *           is not words (garbage): nothing is concluded from it. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static size_t indent_of(prov_span_t line)
{
    size_t i = 0;
    while (i < line.n && (line.p[i] == ' ' || line.p[i] == '\t'))
        i++;
    return i;
}

/* Letters and single blanks only ("In Progress"). */
static bool is_words(const char *s)
{
    if (!s[0])
        return false;
    for (const char *p = s; *p; p++)
        if (!isalpha((unsigned char)*p) && *p != ' ')
            return false;
    return true;
}

static prov_fabric_verdict_t verdict_of(const prov_fabric_gpu_t *g)
{
    if (!g->has_section || g->state_st != PROV_V_OK)
        return PROV_FABRIC_UNREAD;
    if (strcasecmp(g->state, "Completed") != 0)
        return PROV_FABRIC_NOT_OK;
    if (g->status_st != PROV_V_OK)
        return PROV_FABRIC_UNREAD;
    return strcasecmp(g->status, "Success") == 0 ? PROV_FABRIC_OK : PROV_FABRIC_NOT_OK;
}

static void set_state(prov_fabric_gpu_t *g, prov_span_t v)
{
    g->state_st = prov_value_state(v.p, v.n);
    if (g->state_st != PROV_V_OK)
        return;
    prov_span_copy(g->state, sizeof g->state, v);
    if (v.n >= sizeof g->state || !is_words(g->state)) {
        g->state_st = PROV_V_INVALID;
        g->state[0] = '\0';
    }
}

static void set_status(prov_fabric_gpu_t *g, prov_span_t v)
{
    /* NVML's status strings include "Unknown Error": only N/A-like values
     * and emptiness are markers here. */
    if (v.n == 0) {
        g->status_st = PROV_V_ABSENT;
        return;
    }
    prov_vstate_t st = prov_value_state(v.p, v.n);
    g->status_st = st == PROV_V_NA || st == PROV_V_NOT_SUPPORTED ? st : PROV_V_OK;
    if (g->status_st == PROV_V_OK)
        prov_span_copy(g->status, sizeof g->status, v);
}

/* "Key   : value" inside the Fabric section. */
static void fabric_kv(prov_fabric_gpu_t *g, prov_span_t key, prov_span_t val, bool in_health)
{
    if (in_health) {
        if (prov_span_ieq(key, "Bandwidth") && prov_value_state(val.p, val.n) == PROV_V_OK)
            prov_span_copy(g->health_bandwidth, sizeof g->health_bandwidth, val);
        return;
    }
    if (prov_span_ieq(key, "State"))
        set_state(g, val);
    else if (prov_span_ieq(key, "Status"))
        set_status(g, val);
    else if (prov_span_ieq(key, "CliqueId") && prov_value_state(val.p, val.n) == PROV_V_OK)
        prov_span_copy(g->clique_id, sizeof g->clique_id, val);
    else if (prov_span_ieq(key, "ClusterUUID") && prov_value_state(val.p, val.n) == PROV_V_OK)
        prov_span_copy(g->cluster_uuid, sizeof g->cluster_uuid, val);
}

int prov_fabric_parse(const char *text, size_t len, prov_fabric_t *out, prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    size_t cap = 0;
    prov_fabric_gpu_t *g = NULL;
    size_t fab_indent = 0, health_indent = 0;
    bool in_fabric = false, in_health = false;
    prov_lines_t it;
    prov_lines_init(&it, text, text ? len : 0);
    prov_span_t line;
    while (prov_lines_next(&it, &line)) {
        if (prov_span_empty(line))
            continue;
        size_t ind = indent_of(line);
        prov_span_t t = prov_trim(line);
        if (ind == 0) {
            /* a top-level line ends the GPU block; "GPU <address>" opens one */
            g = NULL;
            in_fabric = in_health = false;
            char pci[PROV_PCI_MAX];
            prov_span_t tok[3];
            if (prov_split_ws(t, tok, 3) != 2 || !prov_span_eq(tok[0], "GPU") ||
                !prov_pci_canon(tok[1].p, tok[1].n, pci, NULL))
                continue;
            if (prov_grow((void **)&out->gpus, &cap, out->ngpus + 1, sizeof *out->gpus)) {
                prov_err_set(err, it.lineno, 0, "too many GPUs");
                return PROV_PARSE_END(-1, err, out, prov_fabric_free);
            }
            g = &out->gpus[out->ngpus++];
            memcpy(g->pci, pci, sizeof pci);
            continue;
        }
        if (!g)
            continue;
        if (in_health && ind <= health_indent)
            in_health = false;
        if (in_fabric && ind <= fab_indent)
            in_fabric = false;
        long colon = prov_span_find(t, ":");
        prov_span_t key = prov_trim(prov_span(t.p, colon < 0 ? t.n : (size_t)colon));
        prov_span_t val = colon < 0 ? prov_span(t.p, 0) : prov_trim(prov_span_from(t, colon + 1));
        if (!in_fabric && prov_span_eq(key, "Fabric")) {
            g->has_section = true;
            in_fabric = colon < 0; /* "Fabric : N/A" has no sub-lines */
            fab_indent = ind;
            if (colon >= 0)
                set_state(g, val);
        } else if (in_fabric && colon < 0 && prov_span_ieq(key, "Health")) {
            in_health = true;
            health_indent = ind;
        } else if (in_fabric && colon >= 0) {
            fabric_kv(g, key, val, in_health);
        }
    }
    out->verdict = out->ngpus ? PROV_FABRIC_OK : PROV_FABRIC_UNREAD;
    for (size_t i = 0; i < out->ngpus; i++) {
        prov_fabric_gpu_t *x = &out->gpus[i];
        x->verdict = verdict_of(x);
        out->n_ok += x->verdict == PROV_FABRIC_OK;
        out->n_not_ok += x->verdict == PROV_FABRIC_NOT_OK;
        out->n_unread += x->verdict == PROV_FABRIC_UNREAD;
    }
    if (out->n_not_ok)
        out->verdict = PROV_FABRIC_NOT_OK;
    else if (out->n_unread)
        out->verdict = PROV_FABRIC_UNREAD;
    return 0;
}

void prov_fabric_free(prov_fabric_t *f)
{
    PROV_RELEASE(f, f->gpus);
}

const char *prov_fabric_verdict_name(prov_fabric_verdict_t v)
{
    switch (v) {
    case PROV_FABRIC_UNREAD: return "unread";
    case PROV_FABRIC_OK: return "ok";
    case PROV_FABRIC_NOT_OK: return "not_ok";
    }
    return "?";
}

json_t *prov_fabric_to_json(const prov_fabric_t *f)
{
    assert(f);
    json_t *gpus;
    json_t *root = prov_json_with_array("gpus", &gpus);
    if (!root)
        return NULL;
    for (size_t i = 0; i < f->ngpus; i++) {
        const prov_fabric_gpu_t *g = &f->gpus[i];
        json_t *o = json_object();
        if (!o)
            continue;
        json_object_set_new(o, "pci", prov_str_json(g->pci));
        json_object_set_new(o, "state", prov_str_json(g->state));
        json_object_set_new(o, "state_value", json_string(prov_vstate_name(g->state_st)));
        json_object_set_new(o, "status", prov_str_json(g->status));
        json_object_set_new(o, "status_value", json_string(prov_vstate_name(g->status_st)));
        json_object_set_new(o, "clique_id", prov_str_json(g->clique_id));
        json_object_set_new(o, "cluster_uuid", prov_str_json(g->cluster_uuid));
        json_object_set_new(o, "health_bandwidth", prov_str_json(g->health_bandwidth));
        json_object_set_new(o, "verdict", json_string(prov_fabric_verdict_name(g->verdict)));
        json_array_append_new(gpus, o);
    }
    json_object_set_new(root, "verdict", json_string(prov_fabric_verdict_name(f->verdict)));
    return root;
}
