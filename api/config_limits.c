/* config_limits.c — the /metrics token file and the rate limits' part of the effective
 * configuration; their whole-number settings are in config.c's tables with the rest
 * (docs/operations.md lists them with their defaults). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/config.h"
#include "common/secret.h"
#include "common/util.h"

/* The bearer token /metrics asks for: a secret file (at least 32 bytes, as gpufleetd
 * keygen writes; secret_read_file refuses one its group or others may use), of printable
 * ASCII without spaces. */
static int load_metrics_token(struct api_config *cfg, char *err, size_t errlen)
{
    const char *path = cfg->metrics_token_file;
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
