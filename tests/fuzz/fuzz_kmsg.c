/* libFuzzer target: kernel log text (Xid / SXid / fallen off the bus, journalctl cursor).
 * Besides crashes and leaks, aborts when an event breaks the parser's promises: codes
 * in range, PCI addresses empty or canonical, strings valid UTF-8, output bounded.  Run
 * by tests/fuzz/run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "provisioner/parse/parse_monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap || !utf8_valid(s, n))
        abort();
}

static void check(const prov_kmsg_t *k, size_t max)
{
    if (k->nevents > max || (k->dropped > 0) != k->truncated)
        abort();
    for (size_t i = 0; i < k->nevents; i++) {
        const prov_kevent_t *e = &k->events[i];
        bool coded = e->kind == PROV_KEV_XID || e->kind == PROV_KEV_SXID;
        if (coded ? e->code < 1 || e->code > 65535 : e->code != 0)
            abort();
        char again[PROV_PCI_MAX];
        if (e->pci[0] && (!prov_pci_canon(e->pci, strlen(e->pci), again, NULL) ||
                          strcmp(again, e->pci) != 0 || strlen(e->pci) != 16))
            abort();
        check_str(e->raw, sizeof e->raw);
        check_str(e->message, sizeof e->message);
        check_str(e->process, sizeof e->process);
        if (e->time.wall == PROV_WALL_ISO && !e->time.has_tz)
            abort();
    }
    for (const char *c = k->cursor; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '=' || *c == ';'))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    static const size_t max[] = {0, 3};
    for (size_t m = 0; m < 2; m++) {
        prov_kmsg_t k;
        prov_err_t err;
        if (prov_kmsg_parse(text, size, max[m], &k, &err) != 0)
            continue;
        check(&k, max[m] ? max[m] : PROV_KMSG_EVENTS_DEF);
        json_t *j = prov_kmsg_to_json(&k);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (j && !s)
            abort(); /* everything in the result must be valid JSON text */
        free(s);
        json_decref(j);
        prov_kmsg_free(&k);
    }
    return 0;
}
