/* parse_fio.c — fio's JSON output (see parse_storage.h). */
#include "provisioner/parse/parse_storage.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static double num(const json_t *o, const char *key, int *present)
{
    const json_t *v = json_object_get(o, key);
    if (present)
        *present = json_is_number(v);
    return json_is_number(v) ? json_number_value(v) : 0;
}

int prov_parse_fio(const char *text, size_t len, const char *dir, struct prov_fio_summary *out,
                   char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (why && whylen)
        why[0] = '\0';
    if (text == NULL || dir == NULL) {
        snprintf(why, whylen, "no fio output");
        return -1;
    }
    size_t start = 0;
    while (start < len && !(text[start] == '{' && (start == 0 || text[start - 1] == '\n')))
        start++;
    if (start >= len) {
        snprintf(why, whylen, "no JSON object in fio's output");
        return -1;
    }
    json_error_t err;
    json_t *doc = json_loadb(text + start, len - start, JSON_DISABLE_EOF_CHECK, &err);
    if (!json_is_object(doc)) {
        snprintf(why, whylen, "fio's JSON does not read: line %d: %.120s", err.line, err.text);
        json_decref(doc);
        return -1;
    }
    const json_t *jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
        snprintf(why, whylen, "fio's JSON has no jobs");
        json_decref(doc);
        return -1;
    }
    struct prov_fio_summary s = {0};
    const char *ver = json_string_value(json_object_get(doc, "fio version"));
    snprintf(s.version, sizeof s.version, "%.31s", ver ? ver : "");
    for (char *p = s.version; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            *p = '?';
    size_t i;
    const json_t *job;
    double rate = 0;
    json_array_foreach(jobs, i, job)
    {
        if (num(job, "error", NULL) != 0) {
            snprintf(why, whylen, "fio job %zu ended with error %.0f", i, num(job, "error", NULL));
            json_decref(doc);
            return -1;
        }
        const json_t *d = json_object_get(job, dir);
        if (!json_is_object(d))
            continue;
        int has_kbytes, has_bw_bytes;
        double io = num(d, "io_bytes", NULL);
        (void)num(d, "io_kbytes", &has_kbytes);
        if (!has_kbytes) /* fio 2.x: io_bytes counted KiB */
            io *= 1024.0;
        double bw_bytes = num(d, "bw_bytes", &has_bw_bytes);
        double bw = has_bw_bytes ? bw_bytes : num(d, "bw", NULL) * 1024.0;
        if (!(io > 0) || !isfinite(io) || !isfinite(bw) || bw < 0)
            continue;
        double rt = num(d, "runtime", NULL);
        s.bytes += io;
        rate += bw;
        if (isfinite(rt) && rt > s.runtime_ms)
            s.runtime_ms = rt;
        s.jobs++;
    }
    json_decref(doc);
    if (s.jobs == 0) {
        snprintf(why, whylen, "no fio job %s any data", strcmp(dir, "read") ? "wrote" : "read");
        return -1;
    }
    s.mbps = rate / 1e6;
    *out = s;
    return 0;
}
