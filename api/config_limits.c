/* config_limits.c — the settings of the rate limits and of /metrics (its token and its
 * cache), read with the rest of the configuration (config.c); docs/operations.md lists
 * them with their defaults. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/config.h"
#include "common/secret.h"
#include "common/util.h"

struct limit_setting {
    const char *name;
    long def, min, max;
    size_t off;
};
#define LIMIT_SETTING(name, def, min, max, member)               \
    {                                                            \
        name, def, min, max, offsetof(struct api_config, member) \
    }

/* Rates 0 turn that limit off; a burst is at least 1. */
static const struct limit_setting settings[] = {
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT", 1, 0, 1, rate_limit),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS", 50, 0, 1000000, rl_principal_rps),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST", 200, 1, 1000000, rl_principal_burst),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_REPORTER_RPS", 500, 0, 1000000, rl_reporter_rps),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_REPORTER_BURST", 5000, 1, 1000000, rl_reporter_burst),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_ADDRESS_RPS", 1000, 0, 1000000, rl_address_rps),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_ADDRESS_BURST", 2000, 1, 1000000, rl_address_burst),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE", 60, 0, 1000000,
                  rl_auth_failures_per_min),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_AUTH_FAILURE_BURST", 20, 1, 1000000, rl_auth_failure_burst),
    LIMIT_SETTING("GPUFLEET_RATE_LIMIT_TABLE_SIZE", 65536, 1024, 4194304, rl_table_size),
    LIMIT_SETTING("GPUFLEET_METRICS_CACHE_SECONDS", 5, 0, 300, metrics_cache_s),
};

/* The bearer token /metrics asks for: a secret file (at least 32 bytes, as gpufleetd
 * keygen writes) that only its owner may read, of printable ASCII without spaces. */
static int load_metrics_token(struct api_config *cfg, char *err, size_t errlen)
{
    const char *path = cfg->metrics_token_file;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "GPUFLEET_METRICS_TOKEN_FILE: cannot read %.200s: %s", path,
                 strerror(errno));
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, errlen,
                 "GPUFLEET_METRICS_TOKEN_FILE: %.200s has mode %04o: it must not be readable "
                 "or writable by group or others (chmod 600 it)",
                 path, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    char why[256];
    if (secret_read_file(path, &buf, &len, why, sizeof why) != 0) {
        snprintf(err, errlen, "GPUFLEET_METRICS_TOKEN_FILE: %s", why);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        if (buf[i] < 0x21 || buf[i] > 0x7e) {
            secret_free(buf, len);
            snprintf(err, errlen,
                     "GPUFLEET_METRICS_TOKEN_FILE: the token must be printable ASCII without "
                     "spaces (gpufleetd keygen PATH makes one)");
            return -1;
        }
    /* Only the token's SHA-256 is kept: /metrics compares digests in constant time. */
    util_sha256_hex(buf, len, cfg->metrics_token_sha256);
    secret_free(buf, len);
    return 0;
}

int config_load_limits(struct api_config *cfg, int serve, const char *(*get)(const char *),
                       char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const struct limit_setting *s = &settings[i];
        const char *v = get(s->name);
        long x = s->def;
        if (v != NULL && *v != '\0' && util_parse_long(v, s->min, s->max, &x) != 0) {
            snprintf(err, errlen, "%s must be a whole number from %ld to %ld (got \"%.40s\")",
                     s->name, s->min, s->max, v);
            return -1;
        }
        *(int *)(void *)((char *)cfg + s->off) = (int)x;
    }
    const char *tf = get("GPUFLEET_METRICS_TOKEN_FILE");
    if (tf != NULL && *tf != '\0') {
        cfg->metrics_token_file = strdup(tf);
        if (serve && load_metrics_token(cfg, err, errlen) != 0)
            return -1;
    }
    return 0;
}

void config_free_limits(struct api_config *cfg)
{
    free(cfg->metrics_token_file);
}

json_t *config_limits_json(const struct api_config *cfg)
{
    return json_pack("{s:b, s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}, s:i, "
                     "s:{s:s?, s:i}}",
                     "enabled", cfg->rate_limit, "principal", "rps", cfg->rl_principal_rps, "burst",
                     cfg->rl_principal_burst, "reporter", "rps", cfg->rl_reporter_rps, "burst",
                     cfg->rl_reporter_burst, "address", "rps", cfg->rl_address_rps, "burst",
                     cfg->rl_address_burst, "auth_failures", "per_minute",
                     cfg->rl_auth_failures_per_min, "burst", cfg->rl_auth_failure_burst,
                     "table_size", cfg->rl_table_size, "metrics", "token_file",
                     cfg->metrics_token_file, "cache_seconds", cfg->metrics_cache_s);
}
