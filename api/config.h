/* config.h — configuration from the environment (the table: docs/operations.md). */
#ifndef GPUFLEET_CONFIG_H
#define GPUFLEET_CONFIG_H

#include "common/log.h"

#define CONFIG_MAX_ORIGINS 16

struct api_config {
    char *database_url;
    char *migrate_database_url; /* GPUFLEET_MIGRATE_DATABASE_URL: the owner's, for migrate */
    char *listen;               /* as given */
    char listen_host[64];
    int listen_port;
    int threads;
    int db_pool_size;
    int db_statement_timeout_ms; /* a query running longer is cancelled: 503 query_timeout */
    int db_keepalives_idle_s, db_keepalives_interval_s, db_keepalives_count;
    int db_tcp_user_timeout_ms; /* unacknowledged data for longer drops the connection */
    char *jwt_secret_file;
    char *jwt_public_key_file;
    char *jwt_issuer;
    char *jwt_audience;
    /* OIDC: keys from a JWK set (URL or file), roles through the role map. */
    char *jwt_jwks_url;
    char *jwt_jwks_file;
    char *jwt_jwks_ca_file;
    int jwt_jwks_refresh_s;     /* scheduled refresh */
    int jwt_jwks_min_refresh_s; /* at most one fetch per this (unknown kid, retries) */
    int jwt_jwks_timeout_s;     /* one fetch */
    char *jwt_role_claim;
    char *jwt_role_map;
    char *jwt_principal_claim;
    int allow_unscoped_reporters; /* reporter tokens without pools/hosts may post reports */
    char *master_key_file;
    char *cors_origins[CONFIG_MAX_ORIGINS];
    int ncors;
    enum log_level log_level;
    int max_connections;
    int max_connections_per_ip;
    int connection_timeout_s;
    /* Jobs and SSH */
    int workers;              /* worker threads inside serve (0 = none); `worker` runs them alone */
    int monitor;              /* GPUFLEET_MONITOR: the workers run the health monitor (default 1) */
    int monitor_keep_s[4];    /* GPUFLEET_MONITOR_KEEP_RAW/_5M/_1H/_GPUS: retention, seconds */
    int monitor_kmsg_page;    /* GPUFLEET_MONITOR_KMSG_PAGE: kernel log entries read per sample */
    int monitor_kmsg_backlog; /* GPUFLEET_MONITOR_KMSG_BACKLOG: entries left to read later */
    int monitor_group_max;    /* GPUFLEET_MONITOR_GROUP_MAX: samples committed together (0: one
                               * transaction of five round trips per sample, the path before
                               * issue 28, kept for bench/monitor's comparison) */
    int monitor_group_ms;     /* GPUFLEET_MONITOR_GROUP_MS: how long a group collects samples */
    int worker_concurrency;   /* jobs one worker thread holds at once */
    int job_lease_s;
    int ssh_command_timeout_s;   /* upper bound on every remote command (unset: none) */
    int ssh_query_timeout_s;     /* nvidia-smi, docker version/inspect, file checks */
    int ssh_pull_timeout_s;      /* docker pull */
    int ssh_stop_timeout_s;      /* the pool's stop command */
    int ssh_container_timeout_s; /* docker run of the pinned image (container_gpu) */
    int ssh_connect_timeout_s;
    char *ssh_allow_cidrs;      /* comma-separated CIDRs SSH targets must be in; empty = none */
    int diag_timeout_s[3];      /* dcgmi diag -r 1, 2, 3 */
    int idle_policy_interval_s; /* auto_stop scheduler period (0 = off) */
    int budget_interval_s;      /* budget pass period (0 = off) */
    int rollup_interval_ms;     /* the work reports' rollup pass period (0 = off) */
    /* The event stream (GET /v1/events) */
    int event_ticket_ttl_s;       /* lifetime of a ticket from POST /v1/event-tickets */
    int events_heartbeat_s;       /* ": heartbeat" comment period */
    int events_ring;              /* events held in memory for live streams */
    int events_retention_s;       /* events older than this are deleted */
    int events_ingest_throttle_s; /* work_reports.ingested: at most one per pool per this */
    /* Tokens (service/tokens.h, docs/security.md) */
    int token_max_ttl_s;            /* gpufleetd token: the longest lifetime (viewer..admin) */
    int token_reporter_max_ttl_s;   /* the same for reporter tokens */
    int token_revocation_refresh_s; /* each process polls the revocation list this often */
    /* Webhooks (service/webhooks.h) */
    char *webhook_allow_cidrs; /* loopback/private receivers allowed; empty = public only */
    int webhook_timeout_ms, webhook_retry_base_ms, webhook_retry_max_s, webhook_concurrency;
    /* Rate limits (api/ratelimit.h; config_limits.c): requests per second and bursts per
     * principal, per reporter principal, per client address; 401s per minute per address. */
    int rate_limit; /* GPUFLEET_RATE_LIMIT: 0 turns every limit off */
    int rl_principal_rps, rl_principal_burst;
    int rl_reporter_rps, rl_reporter_burst;
    int rl_address_rps, rl_address_burst;
    int rl_auth_failures_per_min, rl_auth_failure_burst;
    int rl_table_size; /* buckets per table (addresses; principals) */
    /* /metrics: the bearer token's file and SHA-256 (hex; "" when no token is asked), and
     * how long a rendered body is served again. */
    char *metrics_token_file;
    char metrics_token_sha256[65];
    int metrics_cache_s;
};

/* What a command needs; missing required settings are refused. */
enum config_need {
    CONFIG_NEED_DB = 1,
    CONFIG_NEED_JWT = 2,
    CONFIG_NEED_MASTER_KEY = 4,
    CONFIG_NEED_LISTEN = 8,
};

/* Reads GPUFLEET_* variables. Returns 0, or -1 with a one-line reason in err.
 * getenv_fn is getenv in production and a table lookup in unit tests. */
int config_load(struct api_config *cfg, unsigned need, const char *(*getenv_fn)(const char *),
                char *err, size_t errlen);
void config_free(struct api_config *cfg);
/* Logs the effective configuration (never a secret; the database password is masked). */
void config_log(const struct api_config *cfg);
/* config_limits.c: the rate limits and /metrics; serve: read the token file too. */
int config_load_limits(struct api_config *cfg, int serve, const char *(*getenv_fn)(const char *),
                       char *err, size_t errlen);
void config_free_limits(struct api_config *cfg);
json_t *config_limits_json(const struct api_config *cfg);
/* Writes url with any password replaced by "***". */
void config_redact_url(const char *url, char *out, size_t outlen);

#endif
