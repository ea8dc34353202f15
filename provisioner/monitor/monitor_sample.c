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
#define KMSG_BYTES   2400 /* the kernel lines shown; + at most 3 cursors and the status */
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

/* The host's filter of kernel log lines (awk, POSIX and mawk): an entry starts with
 * "[sec.usec]" (journalctl -o short-monotonic, dmesg), continuation lines with a blank. An
 * entry is shown when it matters (the regular expression), with its continuation lines,
 * while the output budget `max` lasts; the first entry that does not fit stops the read
 * there (the entries before it are read, it and the rest are read next time: "@@kstop N").
 * dmesg: entries at or before the mark m are old (m < 0: none). Other lines (journalctl's
 * "-- ..." notices, errors) pass. "@@" in host text is broken up: it cannot start a section.
 * The last lines: journalctl's cursor (only when the read did not stop), "@@kstat read
 * shown stopped full", "@@kmark" the time of the last entry read, "@@kstop N" and
 * "@@kfull" (page entries read, more may follow). A journalctl killed by its timeout
 * prints no cursor: the entries read stop the read there too (page > 0). */
static const char kmsg_filter[] =
    "BEGIN { n = 0; used = 0; stop = -1; show = 0; hit = 0; mk = -1 }"
    " function out(s) { s = substr(s, 1, 1000); gsub(/@@/, \"@ @\", s);"
    " if (used + length(s) + 1 > max) return 0; print s; used += length(s) + 1; return 1 }"
    " /^-- cursor: / { cur = $0; next }"
    " /^\\[/ { if (stop >= 0) next; ts = substr($0, 2, index($0, \"]\") - 2) + 0;"
    " if (m >= 0 && ts <= m) { show = 0; next }"
    " show = ($0 ~ /NVRM|Xid|SXid|nvswitch|fallen off the bus|[Nn][Vv][Ll][Ii][Nn][Kk]|ECC|"
    "[Rr]emap/);"
    " if (show) { if (!out($0)) { stop = n; show = 0; next } hit++ } n++; mk = ts; next }"
    " /^[ \\t]/ { if (show && stop < 0) out($0); next }"
    " { if (stop < 0) out(substr($0, 1, 300)) }"
    " END { if (stop < 0 && cur == \"\" && page > 0 && n > 0) stop = n;"
    " if (stop < 0 && cur != \"\") print cur;"
    " full = (stop < 0 && page > 0 && n >= page); st = (stop >= 0);"
    " printf \"@@kstat\\n%d %d %d %d\\n\", (st ? stop : n), hit, st, full;"
    " if (mk >= 0) printf \"@@kmark %.6f\\n\", mk;"
    " if (st) print \"@@kstop \" stop; if (full) print \"@@kfull\" }";

/* The kernel log part of the command: journald when the host has it, else dmesg. */
static void kmsg_command(struct sbuf *b, const struct mon_memory *mem, const struct mon_policy *p)
{
    long page = p->kmsg_page > 0 ? p->kmsg_page : MON_KMSG_PAGE_DEF;
    int t = p->kmsg_timeout_s > 0 ? p->kmsg_timeout_s : SMI_TIMEOUT;
    sbuf_printf(b,
                " echo @@kmsg; if command -v journalctl >/dev/null 2>&1; then"
                " r=$(timeout %d journalctl -k --no-pager -o short-monotonic --show-cursor ",
                t);
    if (mem->cursor[0] != '\0') {
        sbuf_adds(b, "--after-cursor=");
        prov_sh_quote(b, mem->cursor); /* the parser admits [a-z]=[0-9a-f]+(;…)* only */
        sbuf_printf(b, " -n %ld", page);
    } else {
        sbuf_adds(b, "-n 200");
        page = 0; /* the first read: the newest 200 entries, nothing behind them is read */
    }
    sbuf_printf(b, " 2>&1 | awk -v m=-1 -v max=%d -v page=%ld '%s'); printf '%%s\\n' \"$r\";",
                KMSG_BYTES, page, kmsg_filter);
    if (mem->cursor[0] != '\0') {
        /* stopped after k entries: the cursor of the k-th, by a second pass */
        sbuf_adds(b, " case $r in *'@@kstop '*) k=${r##*@@kstop }; k=${k%%[!0-9]*};"
                     " echo @@kcursor; timeout ");
        sbuf_printf(b, "%d journalctl -k --no-pager -o cat --show-cursor --after-cursor=", t);
        prov_sh_quote(b, mem->cursor);
        sbuf_adds(b, " -n \"$k\" 2>&1 | tail -n 1;; esac;");
        /* a whole page read: the newest entry's cursor, to measure the backlog */
        sbuf_printf(b,
                    " case $r in *@@kfull*) echo @@ktail; timeout %d journalctl -k --no-pager"
                    " -o cat --show-cursor -n 1 2>&1 | tail -n 1;; esac;",
                    t);
    }
    sbuf_printf(b, " else timeout %d dmesg 2>&1 | awk -v m=%.6f -v max=%d -v page=0 '%s'; fi;", t,
                mem->mono > 0 ? mem->mono : -1.0, KMSG_BYTES, kmsg_filter);
}

char *mon_sample_command(const struct mon_memory *mem, const struct mon_policy *p)
{
    struct sbuf b;
    sbuf_init(&b, 4096);
    sbuf_adds(&b, "LC_ALL=C; export LC_ALL; echo @@gpu; out=$(timeout ");
    sbuf_printf(&b, "%d nvidia-smi --query-gpu=", SMI_TIMEOUT);
    for (size_t i = 0; i < prov_sample_nfields; i++)
        sbuf_printf(&b, "%s%s", i ? "," : "", prov_sample_fields[i]);
    sbuf_printf(
        &b,
        " --format=csv,noheader,nounits 2>&1); rc=$?; printf '%%s\\n' \"$out\" | head -c %d;"
        " echo; echo \"@@gpu_rc $rc\";",
        GPU_BYTES);
    kmsg_command(&b, mem, p);
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

/* A journal cursor's sequence number space (s=) and number (i=, hex): 0 when it has none. */
static int cursor_seq(const char *c, char id[40], unsigned long long *seq)
{
    const char *s = strstr(c, "s="), *i = strstr(c, ";i=");
    if (s != c || i == NULL || i - (s + 2) <= 0 || i - (s + 2) >= 40)
        return 0;
    memcpy(id, s + 2, (size_t)(i - (s + 2)));
    id[i - (s + 2)] = '\0';
    char *end;
    *seq = strtoull(i + 3, &end, 16);
    return end != i + 3 && (*end == ';' || *end == '\0');
}

/* The cursor of a one-line section (@@kcursor, @@ktail), checked by the parser; "" if none. */
static void section_cursor(const char *out, const char *name, char cur[MON_CURSOR_MAX])
{
    size_t len;
    const char *s = section(out, name, &len);
    prov_kmsg_t k;
    prov_err_t err;
    cur[0] = '\0';
    if (s != NULL && prov_kmsg_parse(s, len, 1, &k, &err) == 0) {
        snprintf(cur, MON_CURSOR_MAX, "%s", k.cursor);
        prov_kmsg_free(&k);
    }
}

/* Where the next read starts, after the filtered lines were read (read_kmsg): the
 * journald cursor of the last entry read when the output budget stopped the read
 * (@@kcursor), the dmesg mark of the last entry read (@@kmark), and when a whole page was
 * read, the backlog: further behind than p->kmsg_backlog, the entries between are skipped
 * to the newest one, and a kernel_log_gap event says how many (never silently). */
static void kmsg_progress(struct mon_memory *mem, const struct mon_policy *p, const char *out,
                          json_t *events)
{
    size_t len;
    long nread = 0, shown = 0;
    int stopped = 0, full = 0;
    const char *st = section(out, "kstat", &len);
    if (st == NULL || sscanf(st, "%ld %ld %d %d", &nread, &shown, &stopped, &full) != 4)
        return; /* not this command's output (or cut short): read_kmsg's reading stands */
    const char *mk = strstr(out, "\n@@kmark ");
    double mark = mk != NULL ? strtod(mk + 9, NULL) : -1;
    if (mark > mem->mono && mark < 1e10)
        mem->mono = mark;
    char cur[MON_CURSOR_MAX], tail[MON_CURSOR_MAX];
    section_cursor(out, "kcursor", cur);
    if (stopped && cur[0] != '\0')
        snprintf(mem->cursor, sizeof mem->cursor, "%s", cur);
    section_cursor(out, "ktail", tail);
    char id1[40], id2[40];
    unsigned long long s1, s2;
    if (!full || tail[0] == '\0' || !cursor_seq(mem->cursor, id1, &s1) ||
        !cursor_seq(tail, id2, &s2) || strcmp(id1, id2) != 0 || s2 <= s1)
        return; /* caught up, or the backlog cannot be measured: read on next time */
    long limit = p->kmsg_backlog > 0 ? p->kmsg_backlog : MON_KMSG_BACKLOG_DEF;
    if (s2 - s1 <= (unsigned long long)limit)
        return;
    char msg[320];
    snprintf(msg, sizeof msg,
             "%llu kernel log entries skipped unread (journal sequence numbers): after "
             "reading %ld the host was still that far behind, more than the %ld the monitor "
             "reads later (GPUFLEET_MONITOR_KMSG_BACKLOG); Xids among them are not seen",
             s2 - s1, nread, limit);
    add_event(events, "kernel_log_gap", 0, "kernel_log", PLAN_XID_RECORD, NULL, NULL, NULL, msg);
    snprintf(mem->cursor, sizeof mem->cursor, "%s", tail);
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
    if (k != NULL) {
        read_kmsg(mem, p, k, len, &s, events, o->doc, o);
        kmsg_progress(mem, p, out, events);
    }
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
