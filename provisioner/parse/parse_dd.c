/* parse_dd.c — GNU dd's summary line (see parse_storage.h). */
#include "provisioner/parse/parse_storage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number at s[0..n) with '.' or ',' as its separator and an optional exponent
 * ("0.497434", "50,5", "9.44e-05", "11"); *used: the characters read. NAN when none. */
static double read_number(const char *s, size_t n, size_t *used)
{
    char buf[48];
    size_t k = 0, i = 0;
    while (i < n && k + 1 < sizeof buf) {
        char c = s[i];
        int exp_sign = k > 0 && (buf[k - 1] == 'e' || buf[k - 1] == 'E') && (c == '-' || c == '+');
        if (c >= '0' && c <= '9')
            buf[k++] = c;
        else if ((c == '.' || c == ',') && k > 0 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
            buf[k++] = '.';
        else if ((c == 'e' || c == 'E') && k > 0 && i + 1 < n &&
                 ((s[i + 1] >= '0' && s[i + 1] <= '9') || s[i + 1] == '-' || s[i + 1] == '+'))
            buf[k++] = c;
        else if (exp_sign)
            buf[k++] = c;
        else
            break;
        i++;
    }
    buf[k] = '\0';
    *used = i;
    if (k == 0)
        return NAN;
    char *end;
    double v = strtod(buf, &end);
    return *end == '\0' && isfinite(v) && v >= 0 ? v : NAN;
}

/* The multiplier of a rate unit to bytes/s ("kB/s" → 1e3, "MiB/s" → 2^20); 0 when it is
 * not one. */
static double unit_scale(const char *s, size_t n)
{
    static const struct {
        const char *u;
        double scale;
    } units[] = {{"B/s", 1},
                 {"kB/s", 1e3},
                 {"KB/s", 1e3},
                 {"MB/s", 1e6},
                 {"GB/s", 1e9},
                 {"TB/s", 1e12},
                 {"KiB/s", 1024.0},
                 {"MiB/s", 1048576.0},
                 {"GiB/s", 1073741824.0},
                 {"TiB/s", 1099511627776.0}};
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].u) == n && memcmp(units[i].u, s, n) == 0)
            return units[i].scale;
    return 0;
}

/* The last occurrence of ", " in s[0..n) before position end; -1 when none. */
static long last_sep(const char *s, size_t end)
{
    for (size_t i = end; i >= 2; i--)
        if (s[i - 2] == ',' && s[i - 1] == ' ')
            return (long)(i - 2);
    return -1;
}

/* One line: 0 and *o filled when it is a dd summary. */
static int parse_line(const char *s, size_t n, struct prov_dd_summary *o)
{
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || *s < '0' || *s > '9')
        return -1;
    size_t digits = 0;
    while (digits < n && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    if (digits >= n || digits > 20 || s[digits] != ' ')
        return -1;
    char num[24];
    memcpy(num, s, digits);
    num[digits] = '\0';
    double bytes = strtod(num, NULL);
    long r = last_sep(s, n);
    if (r <= (long)digits)
        return -1;
    long t = last_sep(s, (size_t)r);
    if (t <= (long)digits)
        return -1;
    /* the rate: "R UNIT" */
    size_t used;
    const char *rate = s + r + 2;
    size_t rlen = n - (size_t)r - 2;
    double rv = read_number(rate, rlen, &used);
    if (!isfinite(rv) || used >= rlen || rate[used] != ' ')
        return -1;
    double scale = unit_scale(rate + used + 1, rlen - used - 1);
    if (scale == 0)
        return -1;
    /* the time: "T s" (the unit word may be localized) */
    const char *tm = s + t + 2;
    size_t tlen = (size_t)(r - t - 2);
    double secs = read_number(tm, tlen, &used);
    if (!isfinite(secs) || used == 0 || used >= tlen || tm[used] != ' ')
        return -1;
    o->bytes = bytes;
    o->seconds = secs;
    o->printed_mbps = rv * scale / 1e6;
    o->mbps = secs > 0 ? bytes / secs / 1e6 : o->printed_mbps;
    return 0;
}

int prov_parse_dd(const char *text, size_t len, struct prov_dd_summary *out)
{
    memset(out, 0, sizeof *out);
    if (text == NULL)
        return -1;
    struct prov_dd_summary best = {0}, cur;
    int lines = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && text[j] != '\n' && text[j] != '\r' && text[j] != '\0')
            j++;
        memset(&cur, 0, sizeof cur);
        if (j - i < 512 && parse_line(text + i, j - i, &cur) == 0) {
            best = cur;
            lines++;
        }
        i = j + 1;
    }
    if (lines == 0)
        return -1;
    *out = best;
    out->lines = lines;
    return 0;
}
