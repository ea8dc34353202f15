/* test_config.c — environment parsing and refusal reasons. */
#include <stdio.h>

#include "api/config.h"
#include "tests/unit/unit.h"

static const char *const *vars;

static const char *fake_env(const char *name)
{
    for (const char *const *v = vars; v && *v; v += 2)
        if (strcmp(v[0], name) == 0)
            return v[1];
    return NULL;
}

static int load(const char *const *table, unsigned need, struct api_config *cfg, char *err)
{
    vars = table;
    return config_load(cfg, need, fake_env, err, 512);
}

static void defaults(void)
{
    struct api_config cfg;
    char err[512];
    static const char *const t[] = {NULL};
    CHECK(load(t, CONFIG_NEED_LISTEN, &cfg, err) == 0);
    CHECK_STR(cfg.listen_host, "127.0.0.1");
    CHECK(cfg.listen_port == 8080);
    CHECK(cfg.threads >= 1 && cfg.db_pool_size == cfg.threads);
    CHECK_STR(cfg.jwt_issuer, "gpufleet");
    CHECK_STR(cfg.jwt_audience, "gpufleet");
    CHECK(cfg.log_level == LOG_INFO && cfg.ncors == 0);
    /* One address may not hold all connections (issue 25); behind a proxy, raise it. */
    CHECK(cfg.max_connections == 4096 && cfg.max_connections_per_ip == 256);
    /* Rate limits on by default (docs/operations.md#rate-limits), /metrics open, cached. */
    CHECK(cfg.rate_limit == 1 && cfg.rl_principal_rps == 50 && cfg.rl_principal_burst == 200);
    CHECK(cfg.rl_reporter_rps == 500 && cfg.rl_reporter_burst == 5000);
    CHECK(cfg.rl_address_rps == 1000 && cfg.rl_address_burst == 2000);
    CHECK(cfg.rl_auth_failures_per_min == 60 && cfg.rl_auth_failure_burst == 20);
    CHECK(cfg.rl_table_size == 65536);
    CHECK(cfg.metrics_token_file == NULL && cfg.metrics_token_sha256[0] == '\0');
    CHECK(cfg.metrics_cache_s == 5);
    CHECK(cfg.event_ticket_ttl_s == 60 && cfg.events_heartbeat_s == 15);
    CHECK(cfg.events_ring == 4096 && cfg.events_retention_s == 604800);
    CHECK(cfg.events_ingest_throttle_s == 5);
    config_free(&cfg);
}

static void event_settings(void)
{
    struct api_config cfg;
    char err[512];
    static const char *const t[] = {"GPUFLEET_EVENT_TICKET_TTL_SECONDS",
                                    "1",
                                    "GPUFLEET_EVENTS_HEARTBEAT_SECONDS",
                                    "2",
                                    "GPUFLEET_EVENTS_RING",
                                    "16",
                                    "GPUFLEET_EVENTS_RETENTION",
                                    "3600",
                                    "GPUFLEET_EVENTS_INGEST_THROTTLE_SECONDS",
                                    "0",
                                    NULL};
    CHECK(load(t, 0, &cfg, err) == 0);
    CHECK(cfg.event_ticket_ttl_s == 1 && cfg.events_heartbeat_s == 2 && cfg.events_ring == 16);
    CHECK(cfg.events_retention_s == 3600 && cfg.events_ingest_throttle_s == 0);
    config_free(&cfg);
    static const char *const bad[][3] = {
        {"GPUFLEET_EVENT_TICKET_TTL_SECONDS", "0", NULL},
        {"GPUFLEET_EVENT_TICKET_TTL_SECONDS", "3601", NULL},
        {"GPUFLEET_EVENTS_HEARTBEAT_SECONDS", "0", NULL},
        {"GPUFLEET_EVENTS_RING", "15", NULL},
        {"GPUFLEET_EVENTS_RETENTION", "59", NULL},
        {"GPUFLEET_EVENTS_INGEST_THROTTLE_SECONDS", "-1", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(load(bad[i], 0, &cfg, err) != 0 && strstr(err, bad[i][0]) != NULL);
        config_free(&cfg);
    }
}

static void refusals(void)
{
    struct api_config cfg;
    char err[512];
    static const char *const bad_listen[] = {"GPUFLEET_LISTEN", "example.com:80", NULL};
    CHECK(load(bad_listen, CONFIG_NEED_LISTEN, &cfg, err) != 0);
    CHECK(strstr(err, "GPUFLEET_LISTEN") != NULL);
    config_free(&cfg);
    static const char *const bad_port[] = {"GPUFLEET_LISTEN", "127.0.0.1:70000", NULL};
    CHECK(load(bad_port, CONFIG_NEED_LISTEN, &cfg, err) != 0);
    config_free(&cfg);
    static const char *const threads[] = {"GPUFLEET_THREADS", "0", NULL};
    CHECK(load(threads, 0, &cfg, err) != 0 && strstr(err, "GPUFLEET_THREADS") != NULL);
    config_free(&cfg);
    static const char *const level[] = {"GPUFLEET_LOG_LEVEL", "loud", NULL};
    CHECK(load(level, 0, &cfg, err) != 0 && strstr(err, "GPUFLEET_LOG_LEVEL") != NULL);
    config_free(&cfg);
    static const char *const cors[] = {"GPUFLEET_CORS_ORIGINS", "*", NULL};
    CHECK(load(cors, 0, &cfg, err) != 0 && strstr(err, "GPUFLEET_CORS_ORIGINS") != NULL);
    config_free(&cfg);
    static const char *const nodb[] = {NULL};
    CHECK(load(nodb, CONFIG_NEED_DB, &cfg, err) != 0 && strstr(err, "GPUFLEET_DATABASE_URL"));
    config_free(&cfg);
    static const char *const both[] = {"GPUFLEET_JWT_SECRET_FILE", "/etc/hostname",
                                       "GPUFLEET_JWT_PUBLIC_KEY_FILE", "/etc/hostname", NULL};
    CHECK(load(both, CONFIG_NEED_JWT, &cfg, err) != 0 && strstr(err, "only one"));
    config_free(&cfg);
    static const char *const nojwt[] = {NULL};
    CHECK(load(nojwt, CONFIG_NEED_JWT, &cfg, err) != 0);
    config_free(&cfg);
    static const char *const missing[] = {"GPUFLEET_MASTER_KEY_FILE", "/nonexistent/mk", NULL};
    CHECK(load(missing, CONFIG_NEED_MASTER_KEY, &cfg, err) != 0 && strstr(err, "cannot read"));
    config_free(&cfg);
}

static void origins_and_v6(void)
{
    struct api_config cfg;
    char err[512];
    static const char *const t[] = {"GPUFLEET_CORS_ORIGINS",
                                    "https://ui.example.com, http://localhost:5173",
                                    "GPUFLEET_LISTEN", "[::1]:9090", NULL};
    CHECK(load(t, CONFIG_NEED_LISTEN, &cfg, err) == 0);
    CHECK(cfg.ncors == 2);
    CHECK_STR(cfg.cors_origins[1], "http://localhost:5173");
    CHECK_STR(cfg.listen_host, "::1");
    CHECK(cfg.listen_port == 9090);
    config_free(&cfg);
}

static void redaction(void)
{
    char out[256];
    config_redact_url("postgresql://app:s3cr3t@db:5432/gpufleet", out, sizeof out);
    CHECK_STR(out, "postgresql://app:***@db:5432/gpufleet");
    config_redact_url("postgresql://app@db/gpufleet?password=s3cr3t&sslmode=require", out,
                      sizeof out);
    CHECK(strstr(out, "s3cr3t") == NULL && strstr(out, "sslmode=require") != NULL);
    config_redact_url("host=db password=s3cr3t dbname=x", out, sizeof out);
    CHECK(strstr(out, "s3cr3t") == NULL);
}

UNIT_SUITE(config_tests) = {
    {"config: defaults", defaults},
    {"config: refuses bad settings with the variable named", refusals},
    {"config: CORS origins and IPv6 listen", origins_and_v6},
    {"config: event stream settings and their ranges", event_settings},
    {"config: database password never printed", redaction},
    UNIT_END,
};
