/* gate_storage.c — see gate_storage.h. */
#include "provisioner/jobs/gate_storage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provisioner/parse/parse_storage.h"
#include "provisioner/shell.h"

#define PROBE_NAME ".gpufleet-storage-probe"
#define WRITE_NAME ".gpufleet-storage-write"
#define MARK       "gpufleet-storage: "

static long clamp_mib(const json_t *v, long dflt, long lo, long hi)
{
    if (!json_is_integer(v))
        return dflt;
    long x = (long)json_integer_value(v);
    return x < lo ? lo : x > hi ? hi : x;
}

void prov_storage_ref_load(struct prov_storage_ref *s, const json_t *storage, int named)
{
    memset(s, 0, sizeof *s);
    s->enabled = json_is_object(storage) || named;
    s->read_size_mib = clamp_mib(json_object_get(storage, "read_size_mib"),
                                 GATE_STORAGE_READ_MIB_DEFAULT, 16, 1048576);
    s->write_size_mib = clamp_mib(json_object_get(storage, "write_size_mib"),
                                  GATE_STORAGE_WRITE_MIB_DEFAULT, 16, 65536);
    s->artifact = json_string_value(json_object_get(storage, "artifact"));
    s->tool = json_string_value(json_object_get(storage, "tool"));
    if (s->tool == NULL)
        s->tool = "auto";
    s->min_read_mbps = json_number_value(json_object_get(storage, "min_read_mbps"));
    s->min_write_mbps = json_number_value(json_object_get(storage, "min_write_mbps"));
    s->require = json_is_true(json_object_get(storage, "require"));
    s->timeout_s = (int)clamp_mib(json_object_get(storage, "timeout_s"), 0, 1, 3600);
}

int prov_valid_rel_path(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 512 || s[0] == '/' || s[n - 1] == '/')
        return 0;
    if (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/") != n)
        return 0;
    for (const char *c = s; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        c += len;
        if (*c == '/')
            c++;
    }
    return 1;
}

int gate_storage_applies(const struct prov_gate *g, char *why, size_t n)
{
    if (!g->storage.enabled) {
        snprintf(why, n, "the pool's gate defines no gate.storage");
        return 0;
    }
    return 1;
}

static int tool_ok(const char *t)
{
    return !strcmp(t, "auto") || !strcmp(t, "dd") || !strcmp(t, "fio");
}

/* The read: the probe is written once (random bytes, fsynced, renamed into place) and
 * kept; fio when allowed and present (direct I/O), else dd iflag=direct; a filesystem
 * that refuses O_DIRECT ("Invalid argument") gets a read after dropping the file from the
 * page cache (dd iflag=nocache count=0: posix_fadvise DONTNEED), marked direct=0. Each
 * attempt is announced by a marker line the judge reads. */
static const char read_tmpl[] =
    "LC_ALL=C; export LC_ALL; f=%s; n=%s; src=%s; tool=%s;"
    " if [ \"$src\" = probe ] && [ \"$(stat -c %%s -- \"$f\" 2>/dev/null)\" != \"$((n * "
    "1048576))\" ]; then"
    " rm -f -- \"$f.tmp\";"
    " if ! dd if=/dev/urandom of=\"$f.tmp\" bs=1M count=\"$n\" iflag=fullblock conv=fsync"
    " status=none 2>&1 || ! mv -f -- \"$f.tmp\" \"$f\"; then rm -f -- \"$f.tmp\";"
    " echo '" MARK "cannot write the probe file'; exit 4; fi; fi;"
    " if [ ! -r \"$f\" ]; then echo '" MARK "missing=artifact'; exit 5; fi;"
    " if [ \"$tool\" != dd ]; then"
    " if command -v fio >/dev/null 2>&1; then"
    " s=$(stat -c %%s -- \"$f\"); [ \"$s\" -gt $((n * 1048576)) ] && s=$((n * 1048576));"
    " echo '" MARK "tool=fio direct=1';"
    " fio --name=gpufleet-read --filename=\"$f\" --readonly --rw=read --bs=1M --direct=1"
    " --ioengine=psync --size=\"$s\" --clat_percentiles=0 --output-format=json 2>&1 && exit 0;"
    " elif [ \"$tool\" = fio ]; then echo '" MARK "missing=fio'; exit 6; fi; fi;"
    " echo '" MARK "tool=dd direct=1';"
    " o=$(dd if=\"$f\" of=/dev/null bs=1M count=\"$n\" iflag=direct 2>&1); rc=$?;"
    " printf '%%s\\n' \"$o\"; [ $rc = 0 ] && exit 0;"
    " case \"$o\" in *'Invalid argument'*) ;; *) exit $rc;; esac;"
    " echo '" MARK "tool=dd direct=0';"
    " dd if=\"$f\" iflag=nocache count=0 status=none 2>/dev/null;"
    " dd if=\"$f\" of=/dev/null bs=1M count=\"$n\" 2>&1";

/* The write: n MiB of zeros with O_DIRECT and an fsync, else (O_DIRECT refused) through
 * the page cache with the fsync; the file is removed either way. */
static const char write_tmpl[] =
    "LC_ALL=C; export LC_ALL; f=%s; n=%s;"
    " echo '" MARK "tool=dd direct=1';"
    " o=$(dd if=/dev/zero of=\"$f\" bs=1M count=\"$n\" oflag=direct conv=fsync 2>&1); rc=$?;"
    " printf '%%s\\n' \"$o\";"
    " if [ $rc != 0 ]; then case \"$o\" in *'Invalid argument'*)"
    " echo '" MARK "tool=dd direct=0';"
    " dd if=/dev/zero of=\"$f\" bs=1M count=\"$n\" conv=fsync 2>&1; rc=$?;; esac; fi;"
    " rm -f -- \"$f\"; test -e \"$f\" && exit 3; exit $rc";

char *gate_storage_cmd(const struct prov_gate *g, int i)
{
    const struct prov_storage_ref *s = &g->storage;
    const char *dir = i == 0 ? g->durable_path : g->scratch_path;
    if (!prov_valid_abs_path(dir) || !tool_ok(s->tool))
        return NULL;
    char file[1100], n[24];
    if (i == 0 && s->artifact != NULL) {
        if (!prov_valid_rel_path(s->artifact))
            return NULL;
        snprintf(file, sizeof file, "%s/%s", dir, s->artifact);
    } else {
        snprintf(file, sizeof file, "%s/%s", dir, i == 0 ? PROBE_NAME : WRITE_NAME);
    }
    snprintf(n, sizeof n, "%ld", i == 0 ? s->read_size_mib : s->write_size_mib);
    if (i == 0) {
        const char *args[4] = {file, n, s->artifact ? "artifact" : "probe", s->tool};
        return prov_sh_template(read_tmpl, 4, args);
    }
    const char *args[2] = {file, n};
    return prov_sh_template(write_tmpl, 2, args);
}

int gate_storage_timeout(const struct prov_gate *g, int i)
{
    const struct prov_storage_ref *s = &g->storage;
    if (s->timeout_s > 0)
        return s->timeout_s;
    double mb = (double)(i == 0 ? 2 * s->read_size_mib : s->write_size_mib) * 1.048576;
    double t = GATE_STORAGE_TIMEOUT_BASE_S + ceil(mb / GATE_STORAGE_TIMEOUT_FLOOR_MBPS);
    return t > GATE_STORAGE_TIMEOUT_MAX_S ? GATE_STORAGE_TIMEOUT_MAX_S : (int)t;
}

/* ---- the judge ---- */

struct measured {
    int ok;             /* a rate was read */
    int missing;        /* 1: fio (tool=fio) or the artifact is absent: not measurable */
    int direct;         /* the rate was measured with O_DIRECT */
    const char *tool;   /* "dd" or "fio" */
    double mbps, bytes; /* MB/s, bytes */
    char why[200];      /* when !ok */
};

/* Reads one command's output: the last marker, then dd's summary or fio's JSON after it. */
static void measure(const struct prov_cmd_result *r, const char *dir, struct measured *m)
{
    memset(m, 0, sizeof *m);
    const char *out = gate_out_of(r);
    const char *mark = NULL;
    for (const char *p = out; (p = strstr(p, MARK "tool=")) != NULL; p++)
        mark = p;
    if (strstr(out, MARK "missing=fio") || strstr(out, MARK "missing=artifact")) {
        m->missing = 1;
        snprintf(m->why, sizeof m->why, "%s",
                 strstr(out, MARK "missing=fio")
                     ? "the pool asks for fio and the host has none"
                     : "the artifact the pool names is not a readable file on the host");
        return;
    }
    if (!r->ran || r->exit_status != 0 || mark == NULL) {
        char line[160];
        snprintf(m->why, sizeof m->why, "%s", gate_quote(gate_text_of(r), line, sizeof line));
        return;
    }
    mark += strlen(MARK "tool=");
    m->tool = strncmp(mark, "fio", 3) == 0 ? "fio" : "dd";
    const char *d = strstr(mark, "direct=");
    m->direct = d != NULL && d[7] == '1';
    const char *rest = strchr(mark, '\n') ? strchr(mark, '\n') + 1 : mark + strlen(mark);
    if (!strcmp(m->tool, "fio")) {
        struct prov_fio_summary f;
        char why[160];
        if (prov_parse_fio(rest, strlen(rest), dir, &f, why, sizeof why) != 0) {
            snprintf(m->why, sizeof m->why, "fio's output does not read: %s", why);
            return;
        }
        m->mbps = f.mbps, m->bytes = f.bytes;
    } else {
        struct prov_dd_summary s;
        if (prov_parse_dd(rest, strlen(rest), &s) != 0 || !(s.bytes > 0)) {
            snprintf(m->why, sizeof m->why, "dd printed no summary line that reads");
            return;
        }
        m->mbps = s.mbps, m->bytes = s.bytes;
    }
    m->ok = isfinite(m->mbps) && m->mbps > 0;
    if (!m->ok)
        snprintf(m->why, sizeof m->why, "%s reported no rate", m->tool);
}

static void set_num(json_t *v, const char *key, double x)
{
    json_object_set_new(v, key, json_real(x));
}

void gate_eval_storage_throughput(const struct prov_gate *g, const struct prov_cmd_result *r,
                                  struct prov_check_out *o)
{
    const struct prov_storage_ref *s = &g->storage;
    struct measured rd, wr;
    measure(&r[0], "read", &rd);
    measure(&r[1], "write", &wr);
    char rpath[1100];
    if (s->artifact)
        snprintf(rpath, sizeof rpath, "%s/%s", g->durable_path ? g->durable_path : "", s->artifact);
    else
        snprintf(rpath, sizeof rpath, "%s/%s", g->durable_path ? g->durable_path : "", PROBE_NAME);
    json_t *v = json_object();
    json_object_set_new(v, "read_source", json_string(s->artifact ? "artifact" : "probe"));
    json_object_set_new(v, "read_path", gate_jtext(rpath));
    if (rd.ok) {
        set_num(v, "read_mbps", rd.mbps);
        json_object_set_new(v, "read_bytes", json_integer((json_int_t)rd.bytes));
        json_object_set_new(v, "read_tool", json_string(rd.tool));
    }
    if (wr.ok) {
        set_num(v, "write_mbps", wr.mbps);
        json_object_set_new(v, "write_bytes", json_integer((json_int_t)wr.bytes));
    }
    if (rd.ok || wr.ok)
        json_object_set_new(v, "direct",
                            json_boolean((!rd.ok || rd.direct) && (!wr.ok || wr.direct)));
    if (s->min_read_mbps > 0)
        set_num(v, "min_read_mbps", s->min_read_mbps);
    if (s->min_write_mbps > 0)
        set_num(v, "min_write_mbps", s->min_write_mbps);
    o->values = v;

    char msg[1000] = "";
    int fail = 0, skip = 0;
    const char *dpath = g->durable_path ? g->durable_path : "(none)";
    const char *spath = g->scratch_path ? g->scratch_path : "(none)";
    if (!rd.ok) {
        gate_addf(msg, sizeof msg, "%s: the read was not measured: %s", dpath, rd.why);
        if (rd.missing && !s->require)
            skip = 1;
        else
            fail = 1;
    } else {
        gate_addf(msg, sizeof msg, "%s read %.0f MB/s (%s, %s)", rpath, rd.mbps, rd.tool,
                  rd.direct ? "O_DIRECT"
                            : "O_DIRECT refused by the filesystem: read after dropping the "
                              "file from the page cache, not a direct rate");
        if (s->min_read_mbps > 0 && rd.mbps < s->min_read_mbps) {
            gate_addf(msg, sizeof msg, "below the pool's minimum of %.0f MB/s", s->min_read_mbps);
            fail = 1;
        }
    }
    if (!wr.ok) {
        gate_addf(msg, sizeof msg, "%s: the write was not measured: %s", spath, wr.why);
        fail = 1;
    } else {
        gate_addf(msg, sizeof msg, "%s writes %.0f MB/s with fsync (%s)", spath, wr.mbps,
                  wr.direct ? "O_DIRECT" : "O_DIRECT refused: through the page cache");
        if (s->min_write_mbps > 0 && wr.mbps < s->min_write_mbps) {
            gate_addf(msg, sizeof msg, "below the pool's minimum of %.0f MB/s", s->min_write_mbps);
            fail = 1;
        }
    }
    gate_set(o, fail ? PLAN_CHECK_FAIL : skip ? PLAN_CHECK_SKIP : PLAN_CHECK_PASS, 0, "%s", msg);
}
