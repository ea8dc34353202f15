/* Kernel log text -> Xid, SXid and fallen-off-the-bus events (see
 * parse_monitor.h for the accepted line shapes and the canonical PCI form).
 *
 * Untrusted input: a line is taken for what it says and nothing more.  An
 * Xid-shaped line whose code is not 1..65535 digits followed by ',' (negative,
 * "79abc", 99999999999, a line cut after "Xid (PCI:" or inside the number) is refused
 * and counted in `malformed`; an address we cannot read leaves `pci` empty
 * with pci_invalid set; lines with NUL bytes or over PROV_KMSG_LINE_MAX
 * bytes are skipped and counted.  Strings copied out are valid UTF-8 with
 * control bytes replaced. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

#define UUID_MAP_MAX   64
#define PEND_MAX_LINES 4 /* a multi-line probe message spans 3 lines */

typedef struct kstate {
    prov_kmsg_t *out;
    size_t cap, max;
    struct {
        char pci[PROV_PCI_MAX];
        char uuid[PROV_ID_MAX];
    } map[UUID_MAP_MAX];
    size_t nmap;
    bool pend; /* a "The NVIDIA GPU ..." message waiting for "fallen off the bus" */
    unsigned pend_lines;
    prov_kevent_t pev;
} kstate_t;

/* The line being handled: number, time stamps, the whole line. */
typedef struct kline {
    unsigned no;
    prov_ktime_t t;
    prov_span_t raw;
} kline_t;

/* Copies s as valid UTF-8 with C0 controls and DEL as '?'.  True when
 * anything was replaced. */
static bool clean_copy(char *dst, size_t cap, prov_span_t s)
{
    assert(cap > 0);
    size_t w = utf8_clean(s.p, s.n, dst, cap);
    bool changed = !utf8_valid(s.p, s.n);
    for (size_t i = 0; i < w; i++) {
        unsigned char c = (unsigned char)dst[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            dst[i] = '?';
            changed = true;
        }
    }
    return changed;
}

/* Appends "\n" + s to the event's raw text (multi-line messages). */
static void raw_append(prov_kevent_t *ev, prov_span_t s)
{
    size_t used = strlen(ev->raw);
    if (used + 2 >= sizeof ev->raw) {
        ev->raw_truncated = true;
        return;
    }
    ev->raw[used++] = '\n';
    if (clean_copy(ev->raw + used, sizeof ev->raw - used, s))
        ev->raw_cleaned = true;
    if (used + s.n >= sizeof ev->raw - 1)
        ev->raw_truncated = true;
}

static void msg_append(prov_kevent_t *ev, prov_span_t s)
{
    size_t used = strlen(ev->message);
    if (used && used + 1 < sizeof ev->message)
        ev->message[used++] = ' ';
    if (used + 1 < sizeof ev->message)
        clean_copy(ev->message + used, sizeof ev->message - used, s);
}

static void ev_init(prov_kevent_t *ev, prov_kev_kind_t kind, const kline_t *l)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->line = l->no;
    ev->time = l->t;
    ev->pid.st = PROV_V_ABSENT;
    ev->raw_cleaned = clean_copy(ev->raw, sizeof ev->raw, l->raw);
    ev->raw_truncated = l->raw.n >= sizeof ev->raw;
}

static void set_pci(prov_kevent_t *ev, prov_span_t s)
{
    if (!prov_pci_canon(s.p, s.n, ev->pci, &ev->pci_function_implied))
        ev->pci_invalid = true;
}

static const char *uuid_of(const kstate_t *st, const char *pci)
{
    for (size_t i = 0; pci[0] && i < st->nmap; i++)
        if (strcmp(st->map[i].pci, pci) == 0)
            return st->map[i].uuid;
    return "";
}

static int emit(kstate_t *st, prov_kevent_t *ev)
{
    prov_kmsg_t *o = st->out;
    if (ev->pci[0] && !ev->uuid[0])
        snprintf(ev->uuid, sizeof ev->uuid, "%s", uuid_of(st, ev->pci));
    if (o->nevents >= st->max) {
        o->truncated = true;
        o->dropped++;
        return 0;
    }
    if (prov_grow_max((void **)&o->events, &st->cap, o->nevents + 1, sizeof *o->events,
                      PROV_KMSG_EVENTS_HARD))
        return -1;
    o->events[o->nevents++] = *ev;
    return 0;
}

static void malformed(kstate_t *st, unsigned line)
{
    if (st->out->malformed++ == 0)
        st->out->first_malformed_line = line;
}

/* "(PCI:0000:3b:00): 79" at the start of s: the address between the
 * parentheses and the code; s is left after the code.  -1 if not so. */
static int addr_and_code(prov_span_t *s, prov_span_t *addr)
{
    prov_span_t v = prov_trim(*s);
    if (v.n < 2 || v.p[0] != '(')
        return -1;
    const char *rp = memchr(v.p, ')', v.n);
    if (!rp)
        return -1;
    *addr = prov_span(v.p + 1, (size_t)(rp - v.p - 1));
    if (prov_span_starts(*addr, "PCI:"))
        *addr = prov_span_from(*addr, 4);
    v = prov_span_from(v, (size_t)(rp - v.p) + 1);
    if (v.n == 0 || v.p[0] != ':')
        return -1;
    v = prov_trim(prov_span_from(v, 1));
    size_t i = 0;
    long code = 0;
    while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9') {
        if (i >= 5)
            return -1;
        code = code * 10 + (v.p[i] - '0');
        i++;
    }
    /* the driver always prints ", " after the code: without it the line may
     * have been cut inside the number ("79" -> "7") */
    if (i == 0 || code < 1 || code > 65535 || i >= v.n || v.p[i] != ',')
        return -1;
    *s = prov_span_from(v, i + 1);
    return (int)code;
}

/* The next ", "-separated field of s (without the separator). */
static prov_span_t next_field(prov_span_t *s)
{
    prov_span_t v = prov_trim(*s);
    long c = prov_span_find(v, ",");
    prov_span_t f = prov_span(v.p, c < 0 ? v.n : (size_t)c);
    *s = prov_span_from(v, c < 0 ? v.n : (size_t)c + 1);
    return prov_trim(f);
}

static bool is_unknown(prov_span_t v)
{
    return prov_span_eq(v, "<unknown>") || prov_span_eq(v, "'<unknown>'");
}

/* "pid=N, name=X, " before the message (either or both may be missing). */
static void pid_name(prov_kevent_t *ev, prov_span_t *rest)
{
    prov_span_t look = *rest, f = next_field(&look);
    if (prov_span_starts(f, "pid=")) {
        prov_span_t v = prov_span_from(f, 4);
        long pid = prov_parse_uint(v);
        ev->pid.st = is_unknown(v) ? PROV_V_NA : pid >= 0 ? PROV_V_OK : PROV_V_INVALID;
        ev->pid.v = pid >= 0 ? (double)pid : 0;
        *rest = look;
        f = next_field(&look);
    }
    if (prov_span_starts(f, "name=")) {
        prov_span_t v = prov_span_from(f, 5);
        if (!is_unknown(v))
            clean_copy(ev->process, sizeof ev->process, v);
        *rest = look;
    }
}

/* "... caused by previous Xid 149" (Xid 45 on newer drivers). */
static int caused_by(prov_span_t msg)
{
    long at = prov_span_find(msg, "caused by previous Xid ");
    if (at < 0)
        return 0;
    prov_span_t v = prov_span_until_ws(prov_span_from(msg, (size_t)at + 23));
    while (v.n && (v.p[v.n - 1] == '.' || v.p[v.n - 1] == ','))
        v.n--;
    long c = prov_parse_uint(v);
    return c >= 1 && c <= 65535 ? (int)c : 0;
}

/* Starts an Xid/SXid event from "(PCI:...): <code>, ..." at *after (left
 * after the code).  False, counted as malformed, when that is not well
 * formed: the event is then not emitted at all. */
static bool start_coded(kstate_t *st, prov_kevent_t *ev, prov_kev_kind_t kind, prov_span_t *after,
                        const kline_t *l)
{
    prov_span_t addr;
    int code = addr_and_code(after, &addr);
    if (code < 0) {
        malformed(st, l->no);
        return false;
    }
    ev_init(ev, kind, l);
    ev->code = code;
    set_pci(ev, addr);
    return true;
}

static int on_xid(kstate_t *st, prov_span_t after, const kline_t *l)
{
    prov_kevent_t ev;
    if (!start_coded(st, &ev, PROV_KEV_XID, &after, l))
        return 0;
    pid_name(&ev, &after);
    after = prov_trim(after);
    clean_copy(ev.message, sizeof ev.message, after);
    ev.caused_by = caused_by(after);
    return emit(st, &ev);
}

/* "nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 ..." */
static int on_sxid(kstate_t *st, prov_span_t body, const kline_t *l)
{
    prov_span_t dev = prov_span_until_ws(body);
    if (dev.n && dev.p[dev.n - 1] == ':')
        dev.n--;
    for (size_t i = 15; i < dev.n; i++)
        if (dev.p[i] < '0' || dev.p[i] > '9')
            dev.n = 0; /* "nvidia-nvswitch" + digits only */
    long at = prov_span_find(body, "SXid");
    if (dev.n < 15 || dev.n >= 24 || at < 0) {
        malformed(st, l->no);
        return 0;
    }
    prov_span_t after = prov_span_from(body, (size_t)at + 4);
    prov_kevent_t ev;
    if (!start_coded(st, &ev, PROV_KEV_SXID, &after, l))
        return 0;
    prov_span_copy(ev.device, sizeof ev.device, dev);
    prov_span_t look = after, sev = next_field(&look);
    if (prov_span_ieq(sev, "Fatal"))
        ev.severity = PROV_SXID_SEV_FATAL;
    else if (prov_span_ieq(sev, "Non-fatal") || prov_span_ieq(sev, "Nonfatal"))
        ev.severity = PROV_SXID_SEV_NONFATAL;
    if (ev.severity != PROV_SXID_SEV_UNSTATED)
        after = look;
    clean_copy(ev.message, sizeof ev.message, prov_trim(after));
    return emit(st, &ev);
}

/* A probe-time message that never reached "fallen off the bus". */
static void pend_drop(kstate_t *st)
{
    if (st->pend)
        st->out->incomplete++;
    st->pend = false;
}

/* "NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus." (after an Xid 79). */
static int on_gpu_fallen(kstate_t *st, prov_span_t nv, const kline_t *l)
{
    prov_span_t rest = prov_span_from(nv, 4);
    long colon = prov_span_find(rest, ": ");
    prov_kevent_t ev;
    ev_init(&ev, PROV_KEV_FALLEN_OFF_BUS, l);
    set_pci(&ev, prov_span(rest.p, colon < 0 ? 0 : (size_t)colon));
    clean_copy(ev.message, sizeof ev.message, nv);
    for (size_t i = 0; ev.pci[0] && i < st->out->nevents; i++) {
        const prov_kevent_t *x = &st->out->events[i];
        if (x->kind == PROV_KEV_XID && x->code == 79 && strcmp(x->pci, ev.pci) == 0)
            ev.with_xid = true;
    }
    return emit(st, &ev);
}

/* "GPU-" + 36 characters of hex digits and dashes. */
static bool uuid_ok(prov_span_t u)
{
    if (u.n != 40 || !prov_span_starts(u, "GPU-"))
        return false;
    for (size_t i = 4; i < u.n; i++)
        if (!isxdigit((unsigned char)u.p[i]) && u.p[i] != '-')
            return false;
    return true;
}

/* One "NVRM: ..." body. */
static int on_nvrm(kstate_t *st, prov_span_t nv, const kline_t *l)
{
    if (prov_span_eq(nv, "Xid") || prov_span_starts(nv, "Xid ") || prov_span_starts(nv, "Xid(")) {
        pend_drop(st);
        return on_xid(st, prov_span_from(nv, 3), l);
    }
    if (prov_span_starts(nv, "GPU at PCI:")) {
        /* "GPU at PCI:0000:9b:00: GPU-509665ad-..." */
        prov_span_t rest = prov_span_from(nv, 11);
        long c = prov_span_find(rest, ": GPU-");
        char pci[PROV_PCI_MAX];
        prov_span_t uuid = prov_span_until_ws(prov_span_from(rest, (size_t)c + 2));
        if (c > 0 && prov_pci_canon(rest.p, (size_t)c, pci, NULL) && uuid_ok(uuid)) {
            size_t slot = st->nmap < UUID_MAP_MAX ? st->nmap++ : UUID_MAP_MAX - 1;
            for (size_t i = 0; i < st->nmap; i++)
                if (strcmp(st->map[i].pci, pci) == 0)
                    slot = i;
            memcpy(st->map[slot].pci, pci, sizeof pci);
            prov_span_copy(st->map[slot].uuid, sizeof st->map[slot].uuid, uuid);
        }
        return 0;
    }
    if (prov_span_starts(nv, "GPU ") && prov_span_find(nv, ": GPU has fallen off the bus") > 0)
        return on_gpu_fallen(st, nv, l);
    if (prov_span_starts(nv, "The NVIDIA GPU ")) {
        /* "The NVIDIA GPU 0000:5d:00.0" / "(PCI ID: 10de:2330) installed in this
         * system has" / "fallen off the bus and is not responding to commands." */
        pend_drop(st);
        ev_init(&st->pev, PROV_KEV_FALLEN_OFF_BUS, l);
        set_pci(&st->pev, prov_span_until_ws(prov_span_from(nv, 15)));
        msg_append(&st->pev, nv);
        st->pend = true;
        st->pend_lines = 0;
    } else if (st->pend) {
        raw_append(&st->pev, l->raw);
        msg_append(&st->pev, nv);
    } else {
        return 0;
    }
    if (prov_span_find(nv, "fallen off the bus") < 0)
        return 0;
    st->pend = false;
    return emit(st, &st->pev);
}

/* "-- cursor: s=...;i=...;..." (journalctl --show-cursor). */
static void on_cursor(prov_kmsg_t *o, prov_span_t v, unsigned line)
{
    v = prov_trim(v);
    bool ok = v.n > 0 && v.n < sizeof o->cursor;
    size_t i = 0;
    while (ok && i < v.n) {
        /* one "k=hex" field */
        ok = i + 2 < v.n && v.p[i] >= 'a' && v.p[i] <= 'z' && v.p[i + 1] == '=';
        i += 2;
        size_t st = i;
        while (ok && i < v.n &&
               ((v.p[i] >= '0' && v.p[i] <= '9') || (v.p[i] >= 'a' && v.p[i] <= 'f')))
            i++;
        ok = ok && i > st && (i == v.n || (v.p[i] == ';' && i + 1 < v.n));
        i++;
    }
    if (!ok) {
        o->bad_cursors++;
        return;
    }
    prov_span_copy(o->cursor, sizeof o->cursor, v);
    o->cursor_line = line;
}

/* One line.  Returns -1 only when out of memory. */
static int on_line(kstate_t *st, prov_span_t line, unsigned lineno)
{
    prov_kmsg_t *o = st->out;
    o->nlines++;
    if (line.n > PROV_KMSG_LINE_MAX) {
        o->oversize_lines++;
        pend_drop(st);
        return 0;
    }
    if (memchr(line.p, '\0', line.n)) {
        o->nul_lines++;
        pend_drop(st);
        return 0;
    }
    if (prov_span_starts(line, "-- ")) {
        if (prov_span_starts(line, "-- cursor:"))
            on_cursor(o, prov_span_from(line, 10), lineno);
        else if (prov_span_starts(line, "-- No entries --"))
            o->no_entries = true;
        return 0; /* "-- Boot ... --", "-- Logs begin at ..." */
    }
    kline_t kl = {.no = lineno, .raw = line};
    prov_span_t body;
    bool bad_time;
    if (!prov_kline_split(line, &kl.t, &body, &bad_time))
        return 0; /* another program's syslog line */
    if (bad_time)
        o->bad_times++;
    if (kl.t.has_mono && (!o->has_mono || kl.t.mono_us > o->max_mono_us)) {
        o->has_mono = true;
        o->max_mono_us = kl.t.mono_us;
    }
    if (st->pend && ++st->pend_lines >= PEND_MAX_LINES)
        pend_drop(st);
    /* Unknown prefixes: the message starts at "nvidia-nvswitch" or "NVRM:"
     * wherever it is. */
    long sw = prov_span_find(body, "nvidia-nvswitch");
    if (sw >= 0 && prov_span_find(body, " SXid") > sw) {
        pend_drop(st);
        return on_sxid(st, prov_span_from(body, (size_t)sw), &kl);
    }
    long nv = prov_span_find(body, "NVRM:");
    if (nv < 0) {
        pend_drop(st);
        return 0;
    }
    return on_nvrm(st, prov_trim(prov_span_from(body, (size_t)nv + 5)), &kl);
}

int prov_kmsg_parse(const char *text, size_t len, size_t max_events, prov_kmsg_t *out,
                    prov_err_t *err)
{
    PROV_PARSE_BEGIN(out, err);
    kstate_t *st = calloc(1, sizeof *st);
    if (!st) {
        prov_err_set(err, 0, 0, "out of memory");
        return -1;
    }
    st->out = out;
    st->max = max_events == 0                      ? PROV_KMSG_EVENTS_DEF
              : max_events > PROV_KMSG_EVENTS_HARD ? PROV_KMSG_EVENTS_HARD
                                                   : max_events;
    prov_lines_t it;
    prov_lines_init(&it, text, text ? len : 0);
    prov_span_t line;
    int rc = 0;
    while (rc == 0 && prov_lines_next(&it, &line))
        rc = on_line(st, line, it.lineno);
    pend_drop(st);
    free(st);
    if (rc != 0)
        prov_err_set(err, 0, 0, "out of memory");
    return PROV_PARSE_END(rc, err, out, prov_kmsg_free);
}

void prov_kmsg_free(prov_kmsg_t *k)
{
    PROV_RELEASE(k, k->events);
}

const char *prov_kev_kind_name(prov_kev_kind_t k)
{
    switch (k) {
    case PROV_KEV_XID: return "xid";
    case PROV_KEV_SXID: return "sxid";
    case PROV_KEV_FALLEN_OFF_BUS: return "fallen_off_bus";
    }
    return "?";
}

const char *prov_sxid_sev_name(prov_sxid_sev_t s)
{
    switch (s) {
    case PROV_SXID_SEV_UNSTATED: return "unstated";
    case PROV_SXID_SEV_FATAL: return "fatal";
    case PROV_SXID_SEV_NONFATAL: return "non_fatal";
    }
    return "?";
}

static json_t *time_json(const prov_ktime_t *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (t->has_mono)
        json_object_set_new(o, "mono_us", json_integer((json_int_t)t->mono_us));
    char w[48];
    static const char *const kind[] = {"none", "iso", "ctime", "syslog"};
    switch (t->wall) {
    case PROV_WALL_NONE: break;
    case PROV_WALL_ISO:
        snprintf(w, sizeof w, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld%c%02d:%02d", t->year, t->month,
                 t->day, t->hour, t->min, t->sec, t->usec, t->tz_min < 0 ? '-' : '+',
                 abs(t->tz_min) / 60, abs(t->tz_min) % 60);
        json_object_set_new(o, "epoch_us", json_integer((json_int_t)t->epoch_us));
        break;
    case PROV_WALL_CTIME:
        snprintf(w, sizeof w, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld", t->year, t->month, t->day,
                 t->hour, t->min, t->sec, t->usec);
        break;
    case PROV_WALL_SYSLOG: /* ISO 8601 without the year */
        snprintf(w, sizeof w, "--%02d-%02dT%02d:%02d:%02d.%06ld", t->month, t->day, t->hour, t->min,
                 t->sec, t->usec);
        break;
    }
    if (t->wall != PROV_WALL_NONE) {
        json_object_set_new(o, "wall", json_string(w));
        json_object_set_new(o, "wall_kind", json_string(kind[t->wall]));
    }
    return o;
}

static json_t *event_json(const prov_kevent_t *e)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "kind", json_string(prov_kev_kind_name(e->kind)));
    json_object_set_new(o, "line", json_integer(e->line));
    if (e->kind != PROV_KEV_FALLEN_OFF_BUS)
        json_object_set_new(o, "code", json_integer(e->code));
    json_object_set_new(o, "pci", prov_str_json(e->pci));
    if (e->pci_function_implied)
        json_object_set_new(o, "pci_function_implied", json_true());
    if (e->pci_invalid)
        json_object_set_new(o, "pci_invalid", json_true());
    if (e->kind == PROV_KEV_SXID) {
        json_object_set_new(o, "device", prov_str_json(e->device));
        json_object_set_new(o, "severity", json_string(prov_sxid_sev_name(e->severity)));
    }
    json_object_set_new(o, "uuid", prov_str_json(e->uuid));
    if (e->kind == PROV_KEV_XID) {
        json_object_set_new(o, "pid", prov_num_json(e->pid));
        json_object_set_new(o, "process", prov_str_json(e->process));
    }
    if (e->caused_by)
        json_object_set_new(o, "caused_by", json_integer(e->caused_by));
    if (e->kind == PROV_KEV_FALLEN_OFF_BUS)
        json_object_set_new(o, "with_xid", json_boolean(e->with_xid));
    json_object_set_new(o, "message", utf8_json(e->message, strlen(e->message)));
    json_object_set_new(o, "time", time_json(&e->time));
    json_object_set_new(o, "raw", utf8_json(e->raw, strlen(e->raw)));
    if (e->raw_truncated)
        json_object_set_new(o, "raw_truncated", json_true());
    return o;
}

json_t *prov_kmsg_to_json(const prov_kmsg_t *k)
{
    assert(k);
    json_t *evs;
    json_t *root = prov_json_with_array("events", &evs);
    if (!root)
        return NULL;
    for (size_t i = 0; i < k->nevents; i++)
        json_array_append_new(evs, event_json(&k->events[i]));
    json_object_set_new(root, "truncated", json_boolean(k->truncated));
    json_object_set_new(root, "dropped", json_integer((json_int_t)k->dropped));
    json_object_set_new(root, "cursor", prov_str_json(k->cursor));
    if (k->has_mono)
        json_object_set_new(root, "max_mono_us", json_integer((json_int_t)k->max_mono_us));
    json_object_set_new(root, "lines", json_integer((json_int_t)k->nlines));
    json_object_set_new(root, "skipped_lines",
                        json_integer((json_int_t)(k->oversize_lines + k->nul_lines)));
    json_object_set_new(root, "malformed", json_integer((json_int_t)k->malformed));
    json_object_set_new(root, "bad_times", json_integer((json_int_t)k->bad_times));
    json_object_set_new(root, "incomplete", json_integer((json_int_t)k->incomplete));
    return root;
}
