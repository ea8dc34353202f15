/* log.c — structured logging to stderr, one write(2) per line. */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static atomic_int current_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    atomic_store(&current_level, (int)level);
}
enum log_level log_get_level(void)
{
    return (enum log_level)atomic_load(&current_level);
}
int log_enabled(enum log_level level)
{
    return (int)level >= atomic_load(&current_level);
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

static void write_all(const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, buf, len);
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

void log_json_steal(enum log_level level, json_t *obj)
{
    if (obj == NULL)
        return;
    if (!log_enabled(level)) {
        json_decref(obj);
        return;
    }
    char ts[40];
    util_rfc3339(util_now_us(), ts, sizeof ts);
    /* Put time and level first for humans reading the raw stream. */
    json_t *line = json_pack("{s:s, s:s}", "time", ts, "level", level_names[level]);
    json_object_update(line, obj);
    json_decref(obj);
    char *s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII |
                                   JSON_REAL_PRECISION(9));
    json_decref(line);
    if (s == NULL)
        return;
    size_t n = strlen(s);
    s[n] = '\n'; /* overwrite NUL: json_dumps allocates n+1 */
    write_all(s, n + 1);
    free(s);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_json_steal(level, json_pack("{s:s}", "msg", buf));
}
