/* config.c — environment configuration, validated up front so a bad setting stops the
 * process at start with one clear line rather than failing later. */
#include "api/config.h"
#include "common/netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/rolemap.h"
#include "common/util.h"
#include "service/jwks.h"

static char *dup_or(const char *v, const char *def)
{
    const char *s = (v != NULL && *v != '\0') ? v : def;
    return s ? strdup(s) : NULL;
}

static int parse_int_var(const char *(*get)(const char *), const char *name, long def, long min,
                         long max, int *out, char *err, size_t errlen)
{
    const char *v = get(name);
    long x = def;
    if (v != NULL && *v != '\0' && util_parse_long(v, min, max, &x) != 0) {
        snprintf(err, errlen, "%s must be a whole number from %ld to %ld (got \"%.40s\")", name,
                 min, max, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* "host:port", "[v6]:port". Host must be a literal address. */
static int parse_listen(struct api_config *cfg, char *err, size_t errlen)
{
    const char *s = cfg->listen;
    const char *colon;
    char host[64];
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - s - 1) >= sizeof host)
            goto bad;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = '\0';
        colon = close + 1;
        struct in6_addr a6;
        if (inet_pton(AF_INET6, host, &a6) != 1)
            goto bad;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL || (size_t)(colon - s) >= sizeof host)
            goto bad;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        struct in_addr a4;
        if (strcmp(host, "localhost") == 0)
            snprintf(host, sizeof host, "127.0.0.1");
        if (inet_pton(AF_INET, host, &a4) != 1)
            goto bad;
    }
    long port;
    if (util_parse_long(colon + 1, 1, 65535, &port) != 0)
        goto bad;
    snprintf(cfg->listen_host, sizeof cfg->listen_host, "%s", host);
    cfg->listen_port = (int)port;
    return 0;
bad:
    snprintf(err, errlen,
             "GPUFLEET_LISTEN must be ADDRESS:PORT with a literal IPv4 or [IPv6] address "
             "(got \"%.80s\")",
             s);
    return -1;
}

/* An origin is scheme://host[:port] with no path, as browsers send it. */
static int valid_origin(const char *o)
{
    const char *rest;
    if (strncmp(o, "https://", 8) == 0)
        rest = o + 8;
    else if (strncmp(o, "http://", 7) == 0)
        rest = o + 7;
    else
        return 0;
    if (*rest == '\0' || strlen(o) > 200)
        return 0;
    for (const char *p = rest; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == ':' || *p == '[' ||
              *p == ']'))
            return 0;
    return 1;
}

static int parse_cors(struct api_config *cfg, const char *v, char *err, size_t errlen)
{
    if (v == NULL || *v == '\0')
        return 0;
    char *copy = strdup(v);
    char *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        if (!valid_origin(tok)) {
            snprintf(err, errlen,
                     "GPUFLEET_CORS_ORIGINS: \"%.80s\" is not an origin like "
                     "https://ui.example.com (wildcards are not accepted)",
                     tok);
            rc = -1;
            break;
        }
        if (cfg->ncors == CONFIG_MAX_ORIGINS) {
            snprintf(err, errlen, "GPUFLEET_CORS_ORIGINS: at most %d origins", CONFIG_MAX_ORIGINS);
            rc = -1;
            break;
        }
        cfg->cors_origins[cfg->ncors++] = strdup(tok);
    }
    free(copy);
    return rc;
}

static int readable_file(const char *var, const char *path, char *err, size_t errlen)
{
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: cannot read %.200s", var, path);
        return -1;
    }
    return 0;
}

/* A claim name: 1-128 printable ASCII characters. */
static int claim_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* The OIDC settings and GPUFLEET_ALLOW_UNSCOPED_REPORTERS (read whatever the command). */
static int load_oidc(struct api_config *cfg, const char *(*get)(const char *), char *err,
                     size_t errlen)
{
    cfg->jwt_jwks_url = dup_or(get("GPUFLEET_JWT_JWKS_URL"), NULL);
    cfg->jwt_jwks_file = dup_or(get("GPUFLEET_JWT_JWKS_FILE"), NULL);
    cfg->jwt_jwks_ca_file = dup_or(get("GPUFLEET_JWT_JWKS_CA_FILE"), NULL);
    cfg->jwt_role_claim = dup_or(get("GPUFLEET_JWT_ROLE_CLAIM"), "groups");
    cfg->jwt_role_map = dup_or(get("GPUFLEET_JWT_ROLE_MAP"), NULL);
    cfg->jwt_principal_claim = dup_or(get("GPUFLEET_JWT_PRINCIPAL_CLAIM"), "sub");
    if (parse_int_var(get, "GPUFLEET_JWT_JWKS_REFRESH_SECONDS", 600, 10, 86400,
                      &cfg->jwt_jwks_refresh_s, err, errlen) ||
        parse_int_var(get, "GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS", 30, 1, 3600,
                      &cfg->jwt_jwks_min_refresh_s, err, errlen) ||
        parse_int_var(get, "GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS", 5, 1, 60, &cfg->jwt_jwks_timeout_s,
                      err, errlen) ||
        parse_int_var(get, "GPUFLEET_ALLOW_UNSCOPED_REPORTERS", 0, 0, 1,
                      &cfg->allow_unscoped_reporters, err, errlen))
        return -1;
    if (cfg->jwt_jwks_min_refresh_s > cfg->jwt_jwks_refresh_s) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS (%d) must not exceed "
                 "GPUFLEET_JWT_JWKS_REFRESH_SECONDS (%d)",
                 cfg->jwt_jwks_min_refresh_s, cfg->jwt_jwks_refresh_s);
        return -1;
    }
    return 0;
}

/* Exactly one way of verifying tokens; OIDC settings only with OIDC, and complete. */
static int check_jwt(struct api_config *cfg, const char *(*get)(const char *), char *err,
                     size_t errlen)
{
    int modes = (cfg->jwt_secret_file != NULL) + (cfg->jwt_public_key_file != NULL) +
                (cfg->jwt_jwks_url != NULL) + (cfg->jwt_jwks_file != NULL);
    if (modes > 1) {
        snprintf(err, errlen,
                 "set only one of GPUFLEET_JWT_SECRET_FILE (HS256), "
                 "GPUFLEET_JWT_PUBLIC_KEY_FILE (ES256), GPUFLEET_JWT_JWKS_URL and "
                 "GPUFLEET_JWT_JWKS_FILE (OIDC)");
        return -1;
    }
    if (modes == 0) {
        snprintf(err, errlen,
                 "set GPUFLEET_JWT_SECRET_FILE (HS256), GPUFLEET_JWT_PUBLIC_KEY_FILE (ES256) or "
                 "GPUFLEET_JWT_JWKS_URL (OIDC); gpufleetd keygen PATH makes a secret");
        return -1;
    }
    if (cfg->jwt_secret_file &&
        readable_file("GPUFLEET_JWT_SECRET_FILE", cfg->jwt_secret_file, err, errlen))
        return -1;
    if (cfg->jwt_public_key_file &&
        readable_file("GPUFLEET_JWT_PUBLIC_KEY_FILE", cfg->jwt_public_key_file, err, errlen))
        return -1;
    int oidc = cfg->jwt_jwks_url != NULL || cfg->jwt_jwks_file != NULL;
    static const char *const oidc_only[] = {"GPUFLEET_JWT_ROLE_MAP",
                                            "GPUFLEET_JWT_ROLE_CLAIM",
                                            "GPUFLEET_JWT_PRINCIPAL_CLAIM",
                                            "GPUFLEET_JWT_JWKS_CA_FILE",
                                            "GPUFLEET_JWT_JWKS_REFRESH_SECONDS",
                                            "GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS",
                                            "GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS"};
    if (!oidc) {
        for (size_t i = 0; i < sizeof oidc_only / sizeof oidc_only[0]; i++) {
            const char *v = get(oidc_only[i]);
            if (v != NULL && *v != '\0') {
                snprintf(err, errlen,
                         "%s applies to OIDC tokens only (GPUFLEET_JWT_JWKS_URL or "
                         "GPUFLEET_JWT_JWKS_FILE)",
                         oidc_only[i]);
                return -1;
            }
        }
        return 0;
    }
    if (cfg->jwt_jwks_url && jwks_check_url(cfg->jwt_jwks_url, err, errlen) != 0)
        return -1;
    if (cfg->jwt_jwks_file &&
        readable_file("GPUFLEET_JWT_JWKS_FILE", cfg->jwt_jwks_file, err, errlen))
        return -1;
    if (cfg->jwt_jwks_ca_file &&
        readable_file("GPUFLEET_JWT_JWKS_CA_FILE", cfg->jwt_jwks_ca_file, err, errlen))
        return -1;
    static const char *const required[] = {"GPUFLEET_JWT_ISSUER", "GPUFLEET_JWT_AUDIENCE"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = get(required[i]);
        if (v == NULL || *v == '\0') {
            snprintf(err, errlen,
                     "%s must be set with OIDC: the identity provider's %s (tokens carrying "
                     "another are refused)",
                     required[i], i == 0 ? "issuer URL (iss)" : "audience for gpufleet (aud)");
            return -1;
        }
    }
    if (!claim_name_ok(cfg->jwt_role_claim) || !claim_name_ok(cfg->jwt_principal_claim)) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_ROLE_CLAIM and GPUFLEET_JWT_PRINCIPAL_CLAIM must be 1-128 "
                 "printable ASCII characters");
        return -1;
    }
    if (cfg->jwt_role_map == NULL) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_ROLE_MAP must be set with OIDC, e.g. "
                 "platform-admins:admin,platform:operator,gpu-reporters:reporter@POOL");
        return -1;
    }
    struct auth_rolemap *m = NULL;
    if (auth_rolemap_parse(cfg->jwt_role_map, &m, err, errlen) != 0)
        return -1;
    auth_rolemap_free(m);
    return 0;
}

/* Whole-number settings: the variable, its default and bounds, the member it sets. */
struct int_setting {
    const char *name;
    long def, min, max;
    size_t off;
};
#define INT_SETTING(name, def, min, max, member)                 \
    {                                                            \
        name, def, min, max, offsetof(struct api_config, member) \
    }

/* After GPUFLEET_THREADS and GPUFLEET_DB_POOL_SIZE (their defaults are the machine's). */
static const struct int_setting int_settings[] = {
    INT_SETTING("GPUFLEET_MAX_CONNECTIONS", 4096, 16, 65536, max_connections),
    INT_SETTING("GPUFLEET_MAX_CONNECTIONS_PER_IP", 256, 1, 65536, max_connections_per_ip),
    INT_SETTING("GPUFLEET_CONNECTION_TIMEOUT", 60, 1, 3600, connection_timeout_s),
    INT_SETTING("GPUFLEET_WORKERS", 1, 0, 64, workers),
    INT_SETTING("GPUFLEET_MONITOR", 1, 0, 1, monitor),
    INT_SETTING("GPUFLEET_MONITOR_KEEP_RAW", 7 * 86400, 3600, 3650 * 86400, monitor_keep_s[0]),
    INT_SETTING("GPUFLEET_MONITOR_KEEP_5M", 30 * 86400, 3600, 3650 * 86400, monitor_keep_s[1]),
    INT_SETTING("GPUFLEET_MONITOR_KEEP_1H", 400 * 86400, 3600, 3650 * 86400, monitor_keep_s[2]),
    INT_SETTING("GPUFLEET_MONITOR_KEEP_GPUS", 30 * 86400, 3600, 3650 * 86400, monitor_keep_s[3]),
    INT_SETTING("GPUFLEET_MONITOR_KMSG_PAGE", 100000, 100, 10000000, monitor_kmsg_page),
    INT_SETTING("GPUFLEET_MONITOR_KMSG_BACKLOG", 1000000, 1, 100000000, monitor_kmsg_backlog),
    INT_SETTING("GPUFLEET_MONITOR_GROUP_MAX", 64, 0, 256, monitor_group_max),
    INT_SETTING("GPUFLEET_MONITOR_GROUP_MS", 500, 0, 5000, monitor_group_ms),
    INT_SETTING("GPUFLEET_WORKER_CONCURRENCY", 256, 1, 4096, worker_concurrency),
    INT_SETTING("GPUFLEET_JOB_LEASE_SECONDS", 30, 3, 3600, job_lease_s),
    INT_SETTING("GPUFLEET_SSH_COMMAND_TIMEOUT", 86400, 1, 86400, ssh_command_timeout_s),
    INT_SETTING("GPUFLEET_SSH_QUERY_TIMEOUT", 30, 1, 3600, ssh_query_timeout_s),
    INT_SETTING("GPUFLEET_SSH_PULL_TIMEOUT", 1800, 1, 86400, ssh_pull_timeout_s),
    INT_SETTING("GPUFLEET_SSH_STOP_TIMEOUT", 120, 1, 3600, ssh_stop_timeout_s),
    INT_SETTING("GPUFLEET_SSH_CONTAINER_TIMEOUT", 120, 1, 3600, ssh_container_timeout_s),
    INT_SETTING("GPUFLEET_DB_KEEPALIVES_IDLE", 10, 1, 3600, db_keepalives_idle_s),
    INT_SETTING("GPUFLEET_DB_KEEPALIVES_INTERVAL", 5, 1, 600, db_keepalives_interval_s),
    INT_SETTING("GPUFLEET_DB_KEEPALIVES_COUNT", 3, 1, 100, db_keepalives_count),
    INT_SETTING("GPUFLEET_DB_TCP_USER_TIMEOUT_MS", 20000, 0, 3600000, db_tcp_user_timeout_ms),
    INT_SETTING("GPUFLEET_SSH_CONNECT_TIMEOUT", 10, 1, 300, ssh_connect_timeout_s),
    INT_SETTING("GPUFLEET_DIAG_TIMEOUT_L1", 60, 1, 86400, diag_timeout_s[0]),
    INT_SETTING("GPUFLEET_DIAG_TIMEOUT_L2", 300, 1, 86400, diag_timeout_s[1]),
    INT_SETTING("GPUFLEET_DIAG_TIMEOUT_L3", 1800, 1, 86400, diag_timeout_s[2]),
    INT_SETTING("GPUFLEET_IDLE_POLICY_INTERVAL", 60, 0, 86400, idle_policy_interval_s),
    INT_SETTING("GPUFLEET_BUDGET_INTERVAL", 60, 0, 86400, budget_interval_s),
    INT_SETTING("GPUFLEET_ROLLUP_INTERVAL_MS", 1000, 0, 3600000, rollup_interval_ms),
    INT_SETTING("GPUFLEET_DB_STATEMENT_TIMEOUT_MS", 15000, 100, 600000, db_statement_timeout_ms),
    INT_SETTING("GPUFLEET_EVENT_TICKET_TTL_SECONDS", 60, 1, 3600, event_ticket_ttl_s),
    INT_SETTING("GPUFLEET_EVENTS_HEARTBEAT_SECONDS", 15, 1, 3600, events_heartbeat_s),
    INT_SETTING("GPUFLEET_EVENTS_RING", 4096, 16, 1048576, events_ring),
    INT_SETTING("GPUFLEET_EVENTS_RETENTION", 604800, 60, 315360000, events_retention_s),
    INT_SETTING("GPUFLEET_EVENTS_INGEST_THROTTLE_SECONDS", 5, 0, 3600, events_ingest_throttle_s),
    INT_SETTING("GPUFLEET_TOKEN_MAX_TTL_SECONDS", 86400, 60, 31536000, token_max_ttl_s),
    INT_SETTING("GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS", 7776000, 60, 31536000,
                token_reporter_max_ttl_s),
    INT_SETTING("GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS", 5, 1, 300, token_revocation_refresh_s),
};

/* After the webhook address policy. */
static const struct int_setting webhook_settings[] = {
    INT_SETTING("GPUFLEET_WEBHOOK_TIMEOUT_MS", 10000, 100, 120000, webhook_timeout_ms),
    INT_SETTING("GPUFLEET_WEBHOOK_RETRY_BASE_MS", 5000, 10, 3600000, webhook_retry_base_ms),
    INT_SETTING("GPUFLEET_WEBHOOK_RETRY_MAX_SECONDS", 86400, 1, 2592000, webhook_retry_max_s),
    INT_SETTING("GPUFLEET_WEBHOOK_CONCURRENCY", 64, 1, 4096, webhook_concurrency),
};

/* Rates 0 turn that limit off; a burst is at least 1. */
/* The rate limits and /metrics' cache (config_limits.c reads the token file). */
static const struct int_setting limit_settings[] = {
    INT_SETTING("GPUFLEET_RATE_LIMIT", 1, 0, 1, rate_limit),
    INT_SETTING("GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS", 50, 0, 1000000, rl_principal_rps),
    INT_SETTING("GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST", 200, 1, 1000000, rl_principal_burst),
    INT_SETTING("GPUFLEET_RATE_LIMIT_REPORTER_RPS", 500, 0, 1000000, rl_reporter_rps),
    INT_SETTING("GPUFLEET_RATE_LIMIT_REPORTER_BURST", 5000, 1, 1000000, rl_reporter_burst),
    INT_SETTING("GPUFLEET_RATE_LIMIT_ADDRESS_RPS", 1000, 0, 1000000, rl_address_rps),
    INT_SETTING("GPUFLEET_RATE_LIMIT_ADDRESS_BURST", 2000, 1, 1000000, rl_address_burst),
    INT_SETTING("GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE", 60, 0, 1000000,
                rl_auth_failures_per_min),
    INT_SETTING("GPUFLEET_RATE_LIMIT_AUTH_FAILURE_BURST", 20, 1, 1000000, rl_auth_failure_burst),
    INT_SETTING("GPUFLEET_RATE_LIMIT_TABLE_SIZE", 65536, 1024, 4194304, rl_table_size),
    INT_SETTING("GPUFLEET_METRICS_CACHE_SECONDS", 5, 0, 300, metrics_cache_s),
};

/* Parses each setting in order; the first bad one names itself in err. */
static int parse_int_settings(struct api_config *cfg, const struct int_setting *s, size_t n,
                              const char *(*get)(const char *), char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (parse_int_var(get, s[i].name, s[i].def, s[i].min, s[i].max,
                          (int *)(void *)((char *)cfg + s[i].off), err, errlen) != 0)
            return -1;
    return 0;
}

/* The threads and the pool (defaults from the machine), then the table's settings. */
static int load_ints(struct api_config *cfg, const char *(*get)(const char *), char *err,
                     size_t errlen)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    if (parse_int_var(get, "GPUFLEET_THREADS", ncpu, 1, 256, &cfg->threads, err, errlen) ||
        parse_int_var(get, "GPUFLEET_DB_POOL_SIZE", cfg->threads, 1, 512, &cfg->db_pool_size, err,
                      errlen))
        return -1;
    return parse_int_settings(cfg, int_settings, sizeof int_settings / sizeof int_settings[0], get,
                              err, errlen);
}

/* A comma-separated CIDR list (empty: none); the copy goes to *out either way. */
static int load_cidrs(const char *(*get)(const char *), const char *name, char **out, char *err,
                      size_t errlen)
{
    *out = dup_or(get(name), "");
    if ((*out)[0] == '\0' || net_cidr_match("127.0.0.1", *out) >= 0)
        return 0;
    snprintf(err, errlen, "%s must be comma-separated CIDRs like 10.0.0.0/8 (got \"%.80s\")", name,
             *out);
    return -1;
}

/* What the command needs: the listen address, the database, a token verifier, the master
 * key. */
static int check_needs(struct api_config *cfg, unsigned need, const char *(*get)(const char *),
                       char *err, size_t errlen)
{
    if ((need & CONFIG_NEED_LISTEN) && parse_listen(cfg, err, errlen) != 0)
        return -1;
    if ((need & CONFIG_NEED_DB) && cfg->database_url == NULL) {
        snprintf(err, errlen,
                 "GPUFLEET_DATABASE_URL is not set (e.g. postgresql://user@host/gpufleet; "
                 "scripts/local-pg url prints the local one)");
        return -1;
    }
    if ((need & CONFIG_NEED_JWT) && check_jwt(cfg, get, err, errlen) != 0)
        return -1;
    if (!(need & CONFIG_NEED_MASTER_KEY))
        return 0;
    if (cfg->master_key_file == NULL) {
        snprintf(err, errlen,
                 "GPUFLEET_MASTER_KEY_FILE is not set; it encrypts credentials at rest "
                 "(gpufleetd keygen PATH makes one)");
        return -1;
    }
    return readable_file("GPUFLEET_MASTER_KEY_FILE", cfg->master_key_file, err, errlen);
}

int config_load(struct api_config *cfg, unsigned need, const char *(*get)(const char *), char *err,
                size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->database_url = dup_or(get("GPUFLEET_DATABASE_URL"), NULL);
    cfg->migrate_database_url = dup_or(get("GPUFLEET_MIGRATE_DATABASE_URL"), NULL);
    cfg->listen = dup_or(get("GPUFLEET_LISTEN"), "127.0.0.1:8080");
    cfg->jwt_secret_file = dup_or(get("GPUFLEET_JWT_SECRET_FILE"), NULL);
    cfg->jwt_public_key_file = dup_or(get("GPUFLEET_JWT_PUBLIC_KEY_FILE"), NULL);
    cfg->jwt_issuer = dup_or(get("GPUFLEET_JWT_ISSUER"), "gpufleet");
    cfg->jwt_audience = dup_or(get("GPUFLEET_JWT_AUDIENCE"), "gpufleet");
    cfg->master_key_file = dup_or(get("GPUFLEET_MASTER_KEY_FILE"), NULL);
    if (load_oidc(cfg, get, err, errlen) != 0)
        return -1;

    const char *lvl = get("GPUFLEET_LOG_LEVEL");
    cfg->log_level = LOG_INFO;
    if (lvl != NULL && *lvl != '\0' && log_parse_level(lvl, &cfg->log_level) != 0) {
        snprintf(err, errlen,
                 "GPUFLEET_LOG_LEVEL must be debug, info, warn or error (got \"%.20s\")", lvl);
        return -1;
    }
    if (load_ints(cfg, get, err, errlen) != 0 ||
        load_cidrs(get, "GPUFLEET_SSH_ALLOW_CIDRS", &cfg->ssh_allow_cidrs, err, errlen) != 0 ||
        load_cidrs(get, "GPUFLEET_WEBHOOK_ALLOW_CIDRS", &cfg->webhook_allow_cidrs, err, errlen) !=
            0 ||
        parse_int_settings(cfg, webhook_settings,
                           sizeof webhook_settings / sizeof webhook_settings[0], get, err,
                           errlen) != 0 ||
        parse_cors(cfg, get("GPUFLEET_CORS_ORIGINS"), err, errlen) != 0 ||
        parse_int_settings(cfg, limit_settings, sizeof limit_settings / sizeof limit_settings[0],
                           get, err, errlen) != 0 ||
        config_load_limits(cfg, (need & CONFIG_NEED_LISTEN) != 0, get, err, errlen) != 0)
        return -1;
    return check_needs(cfg, need, get, err, errlen);
}

void config_free(struct api_config *cfg)
{
    free(cfg->database_url);
    free(cfg->migrate_database_url);
    free(cfg->listen);
    free(cfg->jwt_secret_file);
    free(cfg->jwt_public_key_file);
    free(cfg->jwt_issuer);
    free(cfg->jwt_audience);
    free(cfg->jwt_jwks_url);
    free(cfg->jwt_jwks_file);
    free(cfg->jwt_jwks_ca_file);
    free(cfg->jwt_role_claim);
    free(cfg->jwt_role_map);
    free(cfg->jwt_principal_claim);
    free(cfg->master_key_file);
    free(cfg->ssh_allow_cidrs);
    free(cfg->webhook_allow_cidrs);
    config_free_limits(cfg);
    for (int i = 0; i < cfg->ncors; i++)
        free(cfg->cors_origins[i]);
    memset(cfg, 0, sizeof *cfg);
}

void config_redact_url(const char *url, char *out, size_t outlen)
{
    /* postgresql://user:password@host/... → postgresql://user:***@host/... ;
     * also key=value forms: password=... */
    snprintf(out, outlen, "%s", url ? url : "");
    char *scheme = strstr(out, "://");
    if (scheme != NULL) {
        char *at = strchr(scheme + 3, '@');
        char *colon = strchr(scheme + 3, ':');
        if (at != NULL && colon != NULL && colon < at) {
            char tail[512];
            snprintf(tail, sizeof tail, "%s", at);
            snprintf(colon, outlen - (size_t)(colon - out), ":***%s", tail);
        }
    }
    char *pw = strstr(out, "password=");
    if (pw != NULL) {
        char *end = pw + 9;
        while (*end && *end != '&' && *end != ' ')
            end++;
        char tail[512];
        snprintf(tail, sizeof tail, "%s", end);
        snprintf(pw + 9, outlen - (size_t)(pw + 9 - out), "***%s", tail);
    }
}

void config_log(const struct api_config *cfg)
{
    char url[512];
    config_redact_url(cfg->database_url, url, sizeof url);
    json_t *origins = json_array();
    for (int i = 0; i < cfg->ncors; i++)
        json_array_append_new(origins, json_string(cfg->cors_origins[i]));
    static const char *const lvl[] = {"debug", "info", "warn", "error"};
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:i, s:i, s:s, s:s?, s:s?, s:s, s:s, s:s?, s:o, s:s, s:i, s:i, s:i}",
        "msg", "effective configuration", "database_url", url, "listen", cfg->listen, "threads",
        cfg->threads, "db_pool_size", cfg->db_pool_size, "jwt_algorithm",
        cfg->jwt_secret_file ? "HS256" : "ES256", "jwt_secret_file", cfg->jwt_secret_file,
        "jwt_public_key_file", cfg->jwt_public_key_file, "jwt_issuer", cfg->jwt_issuer,
        "jwt_audience", cfg->jwt_audience, "master_key_file", cfg->master_key_file, "cors_origins",
        origins, "log_level", lvl[cfg->log_level], "max_connections", cfg->max_connections,
        "max_connections_per_ip", cfg->max_connections_per_ip, "connection_timeout_s",
        cfg->connection_timeout_s);
    if (cfg->jwt_jwks_url != NULL || cfg->jwt_jwks_file != NULL) {
        json_object_set_new(o, "jwt_algorithm", json_string("OIDC (RS256/ES256 per JWK)"));
        json_object_set_new(o, "jwt_oidc",
                            json_pack("{s:s?, s:s?, s:s?, s:i, s:i, s:i, s:s, s:s, s:s}",
                                      "jwks_url", cfg->jwt_jwks_url, "jwks_file",
                                      cfg->jwt_jwks_file, "jwks_ca_file", cfg->jwt_jwks_ca_file,
                                      "refresh_s", cfg->jwt_jwks_refresh_s, "min_refresh_s",
                                      cfg->jwt_jwks_min_refresh_s, "timeout_s",
                                      cfg->jwt_jwks_timeout_s, "role_claim", cfg->jwt_role_claim,
                                      "role_map", cfg->jwt_role_map ? cfg->jwt_role_map : "",
                                      "principal_claim", cfg->jwt_principal_claim));
    }
    if (cfg->migrate_database_url != NULL) { /* the owner's, for migrate (least privilege) */
        char owner[512];
        config_redact_url(cfg->migrate_database_url, owner, sizeof owner);
        json_object_set_new(o, "migrate_database_url", json_string(owner));
    }
    json_object_set_new(o, "allow_unscoped_reporters", json_boolean(cfg->allow_unscoped_reporters));
    json_object_set_new(o, "workers", json_integer(cfg->workers));
    json_object_set_new(o, "monitor", json_boolean(cfg->monitor));
    json_object_set_new(o, "monitor_kmsg_page", json_integer(cfg->monitor_kmsg_page));
    json_object_set_new(o, "monitor_kmsg_backlog", json_integer(cfg->monitor_kmsg_backlog));
    json_object_set_new(o, "monitor_group_max", json_integer(cfg->monitor_group_max));
    json_object_set_new(o, "monitor_group_ms", json_integer(cfg->monitor_group_ms));
    json_object_set_new(o, "monitor_keep_s",
                        json_pack("{s:i, s:i, s:i, s:i}", "raw", cfg->monitor_keep_s[0], "5m",
                                  cfg->monitor_keep_s[1], "1h", cfg->monitor_keep_s[2], "gpus",
                                  cfg->monitor_keep_s[3]));
    json_object_set_new(o, "idle_policy_interval_s", json_integer(cfg->idle_policy_interval_s));
    json_object_set_new(o, "budget_interval_s", json_integer(cfg->budget_interval_s));
    json_object_set_new(o, "rollup_interval_ms", json_integer(cfg->rollup_interval_ms));
    json_object_set_new(o, "db_statement_timeout_ms", json_integer(cfg->db_statement_timeout_ms));
    json_object_set_new(o, "worker_concurrency", json_integer(cfg->worker_concurrency));
    json_object_set_new(o, "job_lease_s", json_integer(cfg->job_lease_s));
    json_object_set_new(o, "ssh_command_timeout_s", json_integer(cfg->ssh_command_timeout_s));
    json_object_set_new(o, "ssh_query_timeout_s", json_integer(cfg->ssh_query_timeout_s));
    json_object_set_new(o, "ssh_pull_timeout_s", json_integer(cfg->ssh_pull_timeout_s));
    json_object_set_new(o, "ssh_stop_timeout_s", json_integer(cfg->ssh_stop_timeout_s));
    json_object_set_new(o, "ssh_container_timeout_s", json_integer(cfg->ssh_container_timeout_s));
    json_object_set_new(o, "db_keepalives",
                        json_pack("{s:i, s:i, s:i, s:i}", "idle_s", cfg->db_keepalives_idle_s,
                                  "interval_s", cfg->db_keepalives_interval_s, "count",
                                  cfg->db_keepalives_count, "tcp_user_timeout_ms",
                                  cfg->db_tcp_user_timeout_ms));
    json_object_set_new(o, "ssh_connect_timeout_s", json_integer(cfg->ssh_connect_timeout_s));
    json_object_set_new(o, "ssh_allow_cidrs", json_string(cfg->ssh_allow_cidrs));
    json_object_set_new(o, "event_ticket_ttl_s", json_integer(cfg->event_ticket_ttl_s));
    json_object_set_new(o, "events_heartbeat_s", json_integer(cfg->events_heartbeat_s));
    json_object_set_new(o, "events_ring", json_integer(cfg->events_ring));
    json_object_set_new(o, "events_retention_s", json_integer(cfg->events_retention_s));
    json_object_set_new(o, "events_ingest_throttle_s", json_integer(cfg->events_ingest_throttle_s));
    json_object_set_new(o, "token_max_ttl_s", json_integer(cfg->token_max_ttl_s));
    json_object_set_new(o, "token_reporter_max_ttl_s", json_integer(cfg->token_reporter_max_ttl_s));
    json_object_set_new(o, "token_revocation_refresh_s",
                        json_integer(cfg->token_revocation_refresh_s));
    json_object_set_new(o, "webhooks",
                        json_pack("{s:s, s:i, s:i, s:i, s:i}", "allow_cidrs",
                                  cfg->webhook_allow_cidrs, "timeout_ms", cfg->webhook_timeout_ms,
                                  "retry_base_ms", cfg->webhook_retry_base_ms, "retry_max_s",
                                  cfg->webhook_retry_max_s, "concurrency",
                                  cfg->webhook_concurrency));
    json_object_set_new(o, "rate_limits", config_limits_json(cfg));
    log_json_steal(LOG_INFO, o);
}
