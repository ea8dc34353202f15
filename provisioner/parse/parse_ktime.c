/* Kernel log line prefixes: the time stamps and "host kernel:" that dmesg,
 * syslog and journalctl put before a kernel message (see the list in
 * parse_monitor.h).  A prefix whose shape matches but whose values do not
 * (month 13, a 12-digit uptime) is skipped and reported as a bad time: the
 * line's time is then left unset, never guessed. */
#include "provisioner/parse/parse_internal.h"

#include <assert.h>
#include <string.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads exactly n digits at s->p[at]; -1 if any is not a digit. */
static long fixed_digits(prov_span_t s, size_t at, size_t n)
{
    long v = 0;
    if (at + n > s.n)
        return -1;
    for (size_t i = at; i < at + n; i++) {
        if (!is_digit(s.p[i]))
            return -1;
        v = v * 10 + (s.p[i] - '0');
    }
    return v;
}

/* Reads 1..max digits at *i (advancing it); -1 if none or too many. */
static long var_digits(prov_span_t s, size_t *i, size_t max)
{
    size_t st = *i;
    long v = 0;
    while (*i < s.n && is_digit(s.p[*i])) {
        if (*i - st >= max)
            return -1;
        v = v * 10 + (s.p[*i] - '0');
        (*i)++;
    }
    return *i > st ? v : -1;
}

/* A fraction of 1..9 digits at *i as microseconds (extra digits truncated). */
static long frac_usec(prov_span_t s, size_t *i)
{
    size_t st = *i;
    long v = 0, scale = 100000;
    while (*i < s.n && is_digit(s.p[*i])) {
        if (*i - st >= 9)
            return -1;
        v += (s.p[*i] - '0') * scale;
        scale /= 10;
        (*i)++;
    }
    return *i > st ? v : -1;
}

static int month_index(prov_span_t s)
{
    static const char *const mon[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; m++)
        if (prov_span_eq(s, mon[m]))
            return m + 1;
    return 0;
}

static bool is_weekday(prov_span_t s)
{
    static const char *const wd[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    for (int d = 0; d < 7; d++)
        if (prov_span_eq(s, wd[d]))
            return true;
    return false;
}

static int days_in_month(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && (leap || y == 0) ? 29 : dm[m - 1];
}

/* Checks the broken-down fields (year 0 = unknown). */
static bool time_valid(const prov_ktime_t *t)
{
    if (t->year != 0 && (t->year < 1970 || t->year > 9999))
        return false;
    if (t->month < 1 || t->month > 12 || t->day < 1 || t->day > days_in_month(t->year, t->month))
        return false;
    if (t->hour > 23 || t->min > 59 || t->sec > 60 || t->usec < 0 || t->usec > 999999)
        return false;
    return !t->has_tz || (t->tz_min >= -18 * 60 && t->tz_min <= 18 * 60);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* hh:mm:ss at s[at] (exactly 8 bytes). */
static bool hms(prov_span_t s, size_t at, prov_ktime_t *t)
{
    if (at + 8 > s.n || s.p[at + 2] != ':' || s.p[at + 5] != ':')
        return false;
    long h = fixed_digits(s, at, 2), mi = fixed_digits(s, at + 3, 2),
         se = fixed_digits(s, at + 6, 2);
    if (h < 0 || mi < 0 || se < 0)
        return false;
    t->hour = (int)h;
    t->min = (int)mi;
    t->sec = (int)se;
    return true;
}

/* Result of one prefix matcher: no match (nothing consumed), a valid stamp,
 * or a stamp-shaped token with bad values (consumed, time not set). */
enum { TM_NO = 0, TM_OK, TM_BAD };

/* "2024-11-15T05:39:15[,.]491363+00:00" / "+0000" / "Z" / no zone. */
static int try_iso(prov_span_t *s, prov_ktime_t *t)
{
    prov_span_t v = *s;
    if (v.n < 19 || v.p[4] != '-' || v.p[7] != '-' || v.p[10] != 'T')
        return TM_NO;
    prov_ktime_t k = {0};
    long y = fixed_digits(v, 0, 4), mo = fixed_digits(v, 5, 2), d = fixed_digits(v, 8, 2);
    bool ok = y >= 0 && mo >= 0 && d >= 0 && hms(v, 11, &k);
    size_t i = 19;
    if (ok && i < v.n && (v.p[i] == ',' || v.p[i] == '.')) {
        i++;
        k.usec = frac_usec(v, &i);
        ok = k.usec >= 0;
    }
    if (ok && i < v.n && v.p[i] == 'Z') {
        k.has_tz = true;
        i++;
    } else if (ok && i < v.n && (v.p[i] == '+' || v.p[i] == '-')) {
        int sign = v.p[i] == '-' ? -1 : 1;
        long zh = fixed_digits(v, i + 1, 2), zm = -1;
        size_t after = i + 3;
        if (after < v.n && v.p[after] == ':')
            after++;
        zm = fixed_digits(v, after, 2);
        ok = zh >= 0 && zm >= 0 && zm < 60;
        k.has_tz = true;
        k.tz_min = ok ? sign * (int)(zh * 60 + zm) : 0;
        i = after + 2;
    }
    /* the stamp must end at a blank */
    size_t end = i;
    while (end < v.n && v.p[end] != ' ' && v.p[end] != '\t')
        end++;
    ok = ok && end == i;
    *s = prov_span_from(v, end);
    k.year = (int)y;
    k.month = (int)mo;
    k.day = (int)d;
    if (!ok || !time_valid(&k))
        return TM_BAD;
    k.wall = k.has_tz ? PROV_WALL_ISO : PROV_WALL_CTIME;
    int64_t secs = days_from_civil(k.year, k.month, k.day) * 86400 + k.hour * 3600 + k.min * 60 +
                   k.sec - (int64_t)k.tz_min * 60;
    k.epoch_us = k.has_tz ? secs * 1000000 + k.usec : 0;
    k.has_mono = t->has_mono;
    k.mono_us = t->mono_us;
    *t = k;
    return TM_OK;
}

/* "[Sun Feb 23 16:24:18 2025]" (dmesg --ctime; the day may be blank-padded). */
static int try_ctime(prov_span_t *s, prov_ktime_t *t)
{
    prov_span_t v = *s;
    if (v.n < 3 || v.p[0] != '[' || v.p[1] < 'A' || v.p[1] > 'Z')
        return TM_NO;
    const char *rb = memchr(v.p, ']', v.n < 40 ? v.n : 40);
    if (!rb)
        return TM_NO;
    prov_span_t in = prov_span(v.p + 1, (size_t)(rb - v.p - 1));
    prov_span_t tok[6];
    size_t nt = prov_split_ws(in, tok, 6);
    if (nt < 1 || !is_weekday(tok[0]))
        return TM_NO; /* "[Firmware Bug]: ..." is a message, not a stamp */
    *s = prov_span_from(v, (size_t)(rb - v.p) + 1);
    prov_ktime_t k = *t;
    if (nt != 5 || tok[3].n != 8 || !hms(tok[3], 0, &k))
        return TM_BAD;
    k.month = month_index(tok[1]);
    size_t i = 0;
    long d = var_digits(tok[2], &i, 2);
    i = 0;
    long y = tok[4].n == 4 ? var_digits(tok[4], &i, 4) : -1;
    k.day = (int)d;
    k.year = (int)y;
    k.usec = 0;
    k.has_tz = false;
    if (d < 0 || y < 0 || k.month == 0 || !time_valid(&k))
        return TM_BAD;
    k.wall = PROV_WALL_CTIME;
    *t = k;
    return TM_OK;
}

/* "Jan  3 07:39:45[.123456] " (syslog, journalctl -o short[-precise]). */
static int try_syslog(prov_span_t *s, prov_ktime_t *t)
{
    prov_span_t v = *s;
    if (v.n < 15 || v.p[3] != ' ' || month_index(prov_span(v.p, 3)) == 0)
        return TM_NO;
    size_t i = 4;
    if (v.p[i] == ' ')
        i++;
    long d = var_digits(v, &i, 2);
    prov_ktime_t k = *t;
    if (d < 0 || i >= v.n || v.p[i] != ' ' || !hms(v, i + 1, &k))
        return TM_NO; /* not this shape: maybe a message starting with a month name */
    i += 9;
    k.usec = 0;
    if (i < v.n && v.p[i] == '.') {
        i++;
        k.usec = frac_usec(v, &i);
    }
    *s = prov_span_from(v, i);
    k.month = month_index(prov_span(v.p, 3));
    k.day = (int)d;
    k.year = 0;
    k.has_tz = false;
    if (k.usec < 0 || !time_valid(&k))
        return TM_BAD;
    k.wall = PROV_WALL_SYSLOG;
    *t = k;
    return TM_OK;
}

/* "[12345.678901]" / "[    1.234567]" (seconds since boot). */
static int try_mono(prov_span_t *s, prov_ktime_t *t)
{
    prov_span_t v = *s;
    size_t i = 1;
    if (v.n < 4 || v.p[0] != '[')
        return TM_NO;
    while (i < v.n && v.p[i] == ' ')
        i++;
    if (i >= v.n || !is_digit(v.p[i]))
        return TM_NO;
    long sec = var_digits(v, &i, 10);
    long us = -1;
    if (sec >= 0 && i < v.n && v.p[i] == '.') {
        i++;
        us = frac_usec(v, &i);
    }
    const char *rb = memchr(v.p, ']', v.n < 40 ? v.n : 40);
    if (!rb)
        return TM_NO;
    *s = prov_span_from(v, (size_t)(rb - v.p) + 1);
    if (sec < 0 || us < 0 || v.p + i != rb)
        return TM_BAD;
    t->has_mono = true;
    t->mono_us = (uint64_t)sec * 1000000u + (uint64_t)us;
    return TM_OK;
}

/* "kern  :warn  : " (dmesg --decode). */
static bool skip_decode(prov_span_t *s)
{
    size_t i = 0;
    for (int part = 0; part < 2; part++) {
        size_t st = i;
        while (i < s->n && s->p[i] >= 'a' && s->p[i] <= 'z')
            i++;
        if (i == st || i - st > 8)
            return false;
        while (i < s->n && s->p[i] == ' ')
            i++;
        if (i >= s->n || s->p[i] != ':')
            return false;
        i++;
    }
    *s = prov_span_from(*s, i);
    return true;
}

/* "<4>" (dmesg -r). */
static void skip_level(prov_span_t *s)
{
    size_t i = 1;
    if (s->n < 3 || s->p[0] != '<')
        return;
    if (var_digits(*s, &i, 3) >= 0 && i < s->n && s->p[i] == '>')
        *s = prov_span_from(*s, i + 1);
}

/* "kernel:" or "kernel[123]:" as a whole token. */
static bool is_kernel_ident(prov_span_t tok)
{
    if (prov_span_eq(tok, "kernel:"))
        return true;
    return tok.n > 9 && prov_span_starts(tok, "kernel[") && tok.p[tok.n - 1] == ':' &&
           tok.p[tok.n - 2] == ']';
}

/* Skips "host kernel: " (or "kernel: ").  With `required`, anything else
 * means the line is some other program's: false. */
static bool skip_ident(prov_span_t *s, bool required)
{
    prov_span_t v = prov_trim(*s);
    prov_span_t tok[2];
    size_t nt = prov_split_ws(v, tok, 2);
    if (nt >= 1 && is_kernel_ident(tok[0])) {
        *s = prov_span_from(v, tok[0].n);
        return true;
    }
    if (nt == 2 && is_kernel_ident(tok[1])) {
        *s = prov_span_from(v, (size_t)(tok[1].p - v.p) + tok[1].n);
        return true;
    }
    return !required;
}

static void note(int r, bool *bad)
{
    if (r == TM_BAD)
        *bad = true;
}

bool prov_kline_split(prov_span_t line, prov_ktime_t *t, prov_span_t *body, bool *bad_time)
{
    assert(t && body && bad_time);
    memset(t, 0, sizeof *t);
    *bad_time = false;
    prov_span_t s = line;
    skip_level(&s);
    skip_decode(&s);
    while (s.n && s.p[0] == ' ')
        s = prov_span_from(s, 1);
    int wall = try_iso(&s, t);
    bool syslog = false;
    if (wall == TM_NO)
        wall = try_ctime(&s, t);
    if (wall == TM_NO) {
        wall = try_syslog(&s, t);
        syslog = wall != TM_NO;
    }
    note(wall, bad_time);
    prov_span_t after_wall = prov_trim(s);
    int mono = try_mono(&after_wall, t);
    note(mono, bad_time);
    if (!skip_ident(&after_wall, syslog))
        return false;
    after_wall = prov_trim(after_wall);
    if (mono == TM_NO)
        note(try_mono(&after_wall, t), bad_time);
    *body = prov_trim(after_wall);
    return true;
}
