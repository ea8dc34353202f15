/* monitor_sample.c — see monitor_sample.h.
 *
 * What isolates (besides the Xid policy): a GPU of the pool missing from the answer, a
 * GPU fallen off the bus, a row-remapping failure, uncorrectable ECC errors that grow
 * between two samples, a fatal NVSwitch SXid, and on NVSwitch models a fabric whose state
 * is read and is not Completed/Success. What only records: pending row remaps or retired
 * pages, a first reading of uncorrectable ECC errors (the baseline), hardware clock
 * slowdowns, an unread fabric state, a container runtime that does not answer, and
 * nvidia-smi not answering at all (unread is not evidence: the host is not isolated on
 * it, the health shows it). */
#include "provisioner/monitor/monitor_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sbuf.h"
#include "common/utf8.h"
#include "planner/monitor_policy.h"
#include "provisioner/parse/parse.h"
#include "provisioner/parse/parse_monitor.h"
#include "provisioner/shell.h"

#define GPU_BYTES    2800 /* section budgets: all of them fit the 8 KiB output tail */
#define KMSG_BYTES   3000
#define FABRIC_BYTES 1600
#define SMI_TIMEOUT  20 /* seconds nvidia-smi may take before it counts as not answering */

int mon_policy_overrides(struct mon_policy *p, const char *xid_policy_json)
{
    p->nov = 0;
    if (xid_policy_json == NULL || xid_policy_json[0] == '\0')
        return 0;
    json_t *o = json_loads(xid_policy_json, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach(o, k, v)
    {
        char *end;
        long code = strtol(k, &end, 10);
        plan_xid_policy_t pol;
        if (*end != '\0' || code < 1 || code > 65535 || !json_is_string(v) ||
            !plan_xid_policy_parse(json_string_value(v), &pol) || p->nov >= MON_MAX_OVERRIDES) {
            rc = -1;
            break;
        }
        p->ov[p->nov++] = (plan_xid_override_t){(int)code, pol};
    }
    json_decref(o);
    return rc;
}

char *mon_sample_command(const struct mon_memory *mem, const struct mon_policy *p)
{
    struct sbuf b;
    sbuf_init(&b, 2048);
    sbuf_adds(&b, "LC_ALL=C; export LC_ALL; echo @@gpu; out=$(timeout ");
    sbuf_printf(&b, "%d nvidia-smi --query-gpu=", SMI_TIMEOUT);
    for (size_t i = 0; i < prov_sample_nfields; i++)
        sbuf_printf(&b, "%s%s", i ? "," : "", prov_sample_fields[i]);
    sbuf_printf(
        &b,
        " --format=csv,noheader,nounits 2>&1); rc=$?; printf '%%s\\n' \"$out\" | head -c %d;"
        " echo; echo \"@@gpu_rc $rc\"; echo @@kmsg;"
        " if command -v journalctl >/dev/null 2>&1; then"
        " journalctl -k --no-pager -o short-monotonic --show-cursor ",
        GPU_BYTES);
    if (mem->cursor[0] != '\0') {
        sbuf_adds(&b, "--after-cursor=");
        prov_sh_quote(&b, mem->cursor); /* the parser admits [a-z]=[0-9a-f]+(;…)* only */
    } else {
        sbuf_adds(&b, "-n 200");
    }
    sbuf_printf(&b, " 2>&1 | tail -c %d; else dmesg 2>&1 | awk -v m=%.6f", KMSG_BYTES,
                mem->mono > 0 ? mem->mono : -1.0);
    sbuf_printf(&b,
                " '{ if (match($0, /^\\[ *[0-9]+\\.[0-9]+\\]/)) keep = substr($0, RSTART + 1,"
                " RLENGTH - 2) + 0 > m; if (keep || m < 0) print }' | tail -c %d; fi;",
                KMSG_BYTES);
    if (p->nvswitch)
        sbuf_printf(
            &b,
            " echo @@fabric; timeout %d nvidia-smi -q 2>&1 | awk '/^GPU [0-9A-Fa-f]/ { f = 0;"
            " print; next } /^    Fabric/ { f = 1; print; next } f && /^        / { print;"
            " next } { f = 0 }' | head -c %d;",
            SMI_TIMEOUT, FABRIC_BYTES);
    sbuf_adds(&b, " echo @@docker; timeout 10 docker info --format '{{json .Runtimes}}'"
                  " >/dev/null 2>&1; echo \"@@docker_rc $?\"");
    return sbuf_take(&b, NULL);
}

/* The text of section name in out (up to the next "@@" line), or NULL. */
static const char *section(const char *out, const char *name, size_t *len)
{
    char marker[32];
    snprintf(marker, sizeof marker, "@@%s\n", name);
    const char *s = out;
    size_t ml = strlen(marker);
    for (;;) {
        s = strstr(s, marker);
        if (s == NULL)
            return NULL;
        if (s == out || s[-1] == '\n')
            break;
        s += ml;
    }
    s += ml;
    const char *e = s;
    while ((e = strstr(e, "@@")) != NULL && e != s && e[-1] != '\n')
        e += 2;
    *len = e ? (size_t)(e - s) : strlen(s);
    return s;
}

/* "@@name N" → N, or -1 when absent. */
static int status_line(const char *out, const char *name)
{
    char marker[32];
    snprintf(marker, sizeof marker, "@@%s ", name);
    const char *s = strstr(out, marker);
    return s ? atoi(s + strlen(marker)) : -1;
}

/* A JSON string of host text, made valid UTF-8 first (jansson refuses invalid bytes);
 * null for NULL or "". */
static json_t *text(const char *s)
{
    return s != NULL && *s != '\0' ? utf8_json(s, strlen(s)) : json_null();
}

static void add_event(json_t *events, const char *kind, int code, const char *category,
                      plan_xid_policy_t policy, const char *uuid, const char *pci, const char *raw,
                      const char *message)
{
    json_t *e = json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:o}", "kind", kind, "code",
                          code > 0 ? json_integer(code) : json_null(), "category", text(category),
                          "policy", plan_xid_policy_name(policy), "gpu_uuid", text(uuid),
                          "pci_bus_id", text(pci), "raw", text(raw), "message", text(message));
    if (e != NULL)
        json_array_append_new(events, e);
}

static void isolate(struct mon_outcome *o, const char *why)
{
    if (o->isolate[0] == '\0')
        utf8_clean(why, strlen(why), o->isolate, sizeof o->isolate);
}

static json_t *num(prov_num_t n)
{
    return n.st == PROV_V_OK ? json_real(n.v) : json_null();
}

static json_t *flag(prov_flag_t f)
{
    return f.st == PROV_V_OK ? json_boolean(f.v) : json_null();
}

static double *ecc_slot(struct mon_memory *mem, const char *uuid)
{
    for (size_t i = 0; i < mem->necc; i++)
        if (!strcmp(mem->ecc[i].uuid, uuid))
            return &mem->ecc[i].count;
    struct mon_ecc *n = realloc(mem->ecc, (mem->necc + 1) * sizeof *n);
    if (n == NULL)
        return NULL;
    mem->ecc = n;
    snprintf(n[mem->necc].uuid, sizeof n[mem->necc].uuid, "%s", uuid);
    n[mem->necc].count = -1;
    return &n[mem->necc++].count;
}

/* A reading as the planner takes it: 1, 0, or -1 when not read. */
static int known(prov_flag_t f)
{
    return f.st == PROV_V_OK ? (f.v != 0) : -1;
}

static int clock_bit(const prov_sample_gpu_t *g, unsigned long long bit)
{
    return g->clk_st == PROV_V_OK ? (g->clk_reasons & bit) != 0 : -1;
}

/* Keeps mem's ECC counts of the GPUs this sample recorded only: the memory is bounded by
 * the cap, however many UUIDs a host has reported over time. */
static void keep_ecc_of(struct mon_memory *mem, const prov_sample_t *s, size_t upto)
{
    size_t n = 0;
    for (size_t k = 0; k < mem->necc; k++) {
        int listed = 0;
        for (size_t i = 0; i < upto && !listed; i++)
            listed = s->gpus[i].uuid_st == PROV_V_OK && !strcmp(s->gpus[i].uuid, mem->ecc[k].uuid);
        if (listed)
            mem->ecc[n++] = mem->ecc[k];
    }
    mem->necc = n;
}

/* Per-GPU readings into gpus; their rules (planner/monitor_policy.h) into events. At most
 * cap GPUs (plan_mon_gpu_cap) are recorded, in the order nvidia-smi lists them; more is a
 * gpu_excess event that isolates. */
static void read_gpus(struct mon_memory *mem, const prov_sample_t *s, int cap, json_t *gpus,
                      json_t *events, struct mon_outcome *o)
{
    size_t kept = 0, excess = 0, upto = s->ngpus;
    for (size_t i = 0; i < s->ngpus; i++) {
        const prov_sample_gpu_t *g = &s->gpus[i];
        if (g->uuid_st != PROV_V_OK)
            continue;
        if (kept >= (size_t)cap) {
            upto = excess++ == 0 ? i : upto;
            continue;
        }
        kept++;
        json_t *row = json_pack(
            "{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "uuid",
            g->uuid, "pci_bus_id", g->pci_st == PROV_V_OK ? json_string(g->pci) : json_null(),
            "index", json_integer((json_int_t)i), "util_gpu", num(g->util_gpu_pct), "util_mem",
            num(g->util_mem_pct), "mem_used_mib", num(g->mem_used_mib), "mem_total_mib",
            num(g->mem_total_mib), "temp_c", num(g->temperature_c), "power_w", num(g->power_draw_w),
            "clock_event_reasons",
            g->clk_st == PROV_V_OK ? json_integer((json_int_t)g->clk_reasons) : json_null(),
            "ecc_uncorrected_volatile", num(g->ecc_uncorr_volatile), "retired_pages_pending",
            flag(g->retired_pending), "remapped_rows_pending", flag(g->remapped_pending),
            "remapped_rows_failure", flag(g->remapped_failure));
        /* the product name only when read and valid (parse_sample.c): an absent name keeps
         * the one stored (monitor_store coalesces), never replaced by garbage */
        if (row != NULL && g->name_st == PROV_V_OK && utf8_valid(g->name, strlen(g->name)))
            json_object_set_new(row, "name", json_string(g->name));
        if (row != NULL)
            json_array_append_new(gpus, row);
        double *last = ecc_slot(mem, g->uuid);
        struct plan_mon_gpu pg = {
            .uuid = g->uuid,
            .remap_failure = known(g->remapped_failure),
            .remap_pending = known(g->remapped_pending),
            .retired_pending = known(g->retired_pending),
            .ecc_uncorrected = g->ecc_uncorr_volatile.st == PROV_V_OK && last != NULL
                                   ? g->ecc_uncorr_volatile.v
                                   : -1,
            .ecc_before = last != NULL ? *last : -1,
            .hw_slowdown = clock_bit(g, PROV_CLK_HW_SLOWDOWN),
            .hw_thermal = clock_bit(g, PROV_CLK_HW_THERMAL),
            .hw_power_brake = clock_bit(g, PROV_CLK_HW_POWER_BRAKE),
        };
        if (pg.ecc_uncorrected >= 0)
            *last = pg.ecc_uncorrected; /* the next sample compares with this one */
        struct plan_mon_finding f[PLAN_MON_MAX_FINDINGS];
        size_t nf = plan_mon_gpu_findings(&pg, f);
        for (size_t k = 0; k < nf; k++) {
            static const char *const kinds[] = {
                [PLAN_MON_REMAP] = "remap", [PLAN_MON_ECC] = "ecc", [PLAN_MON_THERMAL] = "thermal"};
            add_event(events, kinds[f[k].kind], 0,
                      f[k].kind == PLAN_MON_THERMAL ? "thermal" : "memory",
                      f[k].isolate ? PLAN_XID_ISOLATE : PLAN_XID_RECORD, g->uuid, g->pci, NULL,
                      f[k].message);
            if (f[k].isolate)
                isolate(o, f[k].message);
        }
    }
    if (kept > 0)
        keep_ecc_of(mem, s, upto);
    if (excess > 0) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "nvidia-smi lists %zu GPUs; at most %d are recorded (the pool's gpu_count + %d): "
                 "%zu not recorded",
                 kept + excess, cap, PLAN_MON_GPU_MARGIN, excess);
        add_event(events, "gpu_excess", 0, "inventory", PLAN_XID_ISOLATE, NULL, NULL, NULL, msg);
        isolate(o, msg);
    }
}

/* The UUID of the GPU at a canonical PCI address, from this sample. */
static const char *uuid_at(const prov_sample_t *s, const char *pci)
{
    for (size_t i = 0; pci[0] != '\0' && i < s->ngpus; i++)
        if (s->gpus[i].pci_st == PROV_V_OK && !strcmp(s->gpus[i].pci, pci))
            return s->gpus[i].uuid;
    return NULL;
}

static void read_kmsg(struct mon_memory *mem, const struct mon_policy *p, const char *text,
                      size_t len, const prov_sample_t *s, json_t *events, json_t *doc,
                      struct mon_outcome *o)
{
    prov_kmsg_t k;
    prov_err_t err;
    if (prov_kmsg_parse(text, len, 256, &k, &err) != 0) {
        json_object_set_new(doc, "kmsg_note", json_string("the kernel log could not be read"));
        return;
    }
    char msg[PROV_MSG_MAX + 96];
    for (size_t i = 0; i < k.nevents; i++) {
        const prov_kevent_t *e = &k.events[i];
        const char *uuid = e->uuid[0] ? e->uuid : uuid_at(s, e->pci);
        if (e->kind == PROV_KEV_XID) {
            plan_xid_verdict_t v;
            plan_xid_decide(e->code, p->ov, p->nov, &v);
            snprintf(msg, sizeof msg, "Xid %d%s%s: %s", e->code, v.entry ? " " : "",
                     v.entry ? v.entry->name : "", e->message);
            add_event(events, "xid", e->code, v.entry ? v.entry->category : "unknown", v.policy,
                      uuid, e->pci, e->raw, msg);
            if (v.policy == PLAN_XID_ISOLATE)
                isolate(o, msg);
        } else if (e->kind == PROV_KEV_SXID) {
            plan_xid_policy_t pol = plan_sxid_policy(e->severity == PROV_SXID_SEV_FATAL);
            snprintf(msg, sizeof msg, "SXid %d (%s) on %s: %s", e->code,
                     prov_sxid_sev_name(e->severity), e->device, e->message);
            add_event(events, "sxid", e->code, "nvswitch", pol, NULL, e->pci, e->raw, msg);
            if (pol == PLAN_XID_ISOLATE)
                isolate(o, msg);
        } else if (!e->with_xid) {
            snprintf(msg, sizeof msg, "GPU %s has fallen off the bus", e->pci[0] ? e->pci : "?");
            add_event(events, "fell_off_bus", 0, "bus", PLAN_XID_ISOLATE, uuid, e->pci, e->raw,
                      msg);
            isolate(o, msg);
        }
    }
    if (k.cursor[0] != '\0')
        snprintf(mem->cursor, sizeof mem->cursor, "%s", k.cursor);
    if (k.has_mono && (double)k.max_mono_us / 1e6 > mem->mono)
        mem->mono = (double)k.max_mono_us / 1e6;
    if (k.cursor[0] == '\0' && !k.has_mono && !k.no_entries && k.nlines > 0)
        json_object_set_new(doc, "kmsg_note",
                            json_string("the kernel log was not readable (no journal cursor, no "
                                        "dmesg lines): Xid events are not seen"));
    if (k.truncated || k.dropped > 0)
        json_object_set_new(doc, "kmsg_dropped", json_integer((json_int_t)k.dropped));
    prov_kmsg_free(&k);
}

static void read_fabric(const char *text, size_t len, json_t *events, struct mon_outcome *o)
{
    prov_fabric_t f;
    prov_err_t err;
    char msg[256];
    if (prov_fabric_parse(text, len, &f, &err) != 0)
        return;
    for (size_t i = 0; i < f.ngpus; i++) {
        const prov_fabric_gpu_t *g = &f.gpus[i];
        if (g->verdict == PROV_FABRIC_NOT_OK) {
            snprintf(msg, sizeof msg, "fabric state %s, status %s on GPU %s", g->state, g->status,
                     g->pci);
            add_event(events, "fabric", 0, "nvswitch", PLAN_XID_ISOLATE, NULL, g->pci, NULL, msg);
            isolate(o, msg);
        }
    }
    if (f.verdict == PROV_FABRIC_UNREAD)
        add_event(events, "fabric", 0, "nvswitch", PLAN_XID_RECORD, NULL, NULL, NULL,
                  "the fabric state could not be read (nvidia-smi -q shows no Fabric state)");
    prov_fabric_free(&f);
}

int mon_sample_read(struct mon_memory *mem, const struct mon_policy *p, const char *out,
                    size_t total, struct mon_outcome *o)
{
    memset(o, 0, sizeof *o);
    json_t *gpus = json_array(), *events = json_array();
    char at[40], msg[256];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    o->doc = json_pack("{s:s, s:o, s:o}", "at", at, "gpus", gpus, "events", events);
    if (o->doc == NULL)
        return -1;
    size_t len;
    const char *gpu = section(out, "gpu", &len);
    int gpu_rc = status_line(out, "gpu_rc");
    prov_sample_t s = {0};
    prov_err_t err;
    if (gpu != NULL && gpu_rc == 0 &&
        prov_sample_parse(gpu, len, prov_sample_fields, prov_sample_nfields, &s, &err) == 0) {
        read_gpus(mem, &s, plan_mon_gpu_cap(p->gpu_count), gpus, events, o);
        o->gpu_read = json_array_size(gpus) > 0;
    }
    if (!o->gpu_read) {
        snprintf(msg, sizeof msg, "%s",
                 gpu_rc == 124  ? "nvidia-smi did not answer in 20 s"
                 : gpu_rc > 0   ? "nvidia-smi failed"
                 : total > 8192 ? "the sample's output was too long to read"
                                : "nvidia-smi listed no GPU");
        add_event(events, "gpu_missing", 0, "inventory", PLAN_XID_RECORD, NULL, NULL, NULL, msg);
    } else if (p->gpu_count > 0 && (int)json_array_size(gpus) < p->gpu_count) {
        snprintf(msg, sizeof msg, "%zu of the pool's %d GPUs answer", json_array_size(gpus),
                 p->gpu_count);
        add_event(events, "gpu_missing", 0, "inventory", PLAN_XID_ISOLATE, NULL, NULL, NULL, msg);
        isolate(o, msg);
    }
    const char *k = section(out, "kmsg", &len);
    if (k != NULL)
        read_kmsg(mem, p, k, len, &s, events, o->doc, o);
    const char *f = p->nvswitch ? section(out, "fabric", &len) : NULL;
    if (p->nvswitch && f != NULL)
        read_fabric(f, len, events, o);
    int docker_rc = status_line(out, "docker_rc");
    if (docker_rc != 0) {
        snprintf(msg, sizeof msg, "the container runtime does not answer (docker info: %s %d)",
                 docker_rc < 0 ? "no status" : "exit", docker_rc);
        add_event(events, "container_runtime", 0, "runtime", PLAN_XID_RECORD, NULL, NULL, NULL,
                  msg);
    }
    json_object_set_new(o->doc, "container_runtime", json_boolean(docker_rc == 0));
    json_object_set_new(o->doc, "kmsg_cursor",
                        mem->cursor[0] ? json_string(mem->cursor) : json_null());
    json_object_set_new(o->doc, "kmsg_mono", mem->mono > 0 ? json_real(mem->mono) : json_null());
    snprintf(o->summary, sizeof o->summary, "%zu GPUs, %zu events%s", json_array_size(gpus),
             json_array_size(events), o->isolate[0] ? ", isolating" : "");
    prov_sample_free(&s);
    return 0;
}

void mon_outcome_clear(struct mon_outcome *o)
{
    json_decref(o->doc);
    o->doc = NULL;
}

int mon_memory_seed_ecc(struct mon_memory *mem, const char *json)
{
    if (json == NULL || json[0] == '\0')
        return 0;
    json_t *o = json_loads(json, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    int rc = 0;
    const char *uuid;
    json_t *v;
    json_object_foreach(o, uuid, v)
    {
        size_t n = strlen(uuid);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || n < 8 ||
            n >= sizeof mem->ecc[0].uuid || strncmp(uuid, "GPU-", 4) != 0 ||
            strspn(uuid + 4, "0123456789abcdefABCDEF-") != n - 4)
            continue;
        if (mem->necc >= PLAN_MON_GPU_MAX)
            break; /* bounded as the samples are */
        double *slot = ecc_slot(mem, uuid);
        if (slot == NULL) {
            rc = -1;
            break;
        }
        *slot = (double)json_integer_value(v);
    }
    json_decref(o);
    return rc;
}

void mon_memory_clear(struct mon_memory *mem)
{
    free(mem->ecc);
    mem->ecc = NULL;
    mem->necc = 0;
}
