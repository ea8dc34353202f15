/* log.h — one JSON object per line on stderr. Never pass secrets here. */
#ifndef GPUFLEET_LOG_H
#define GPUFLEET_LOG_H

#include <jansson.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "debug|info|warn|error"; returns 0 on success. */
int log_parse_level(const char *s, enum log_level *out);
int log_enabled(enum log_level level);

/* Adds "time" and "level" to obj and writes it as one line. Steals obj. */
void log_json_steal(enum log_level level, json_t *obj);
/* {"time","level","msg"} with a printf-formatted message. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
