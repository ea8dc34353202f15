/* serve.c — gpufleetd serve (the API, and GPUFLEET_WORKERS job workers beside it) and
 * gpufleetd worker (job workers only): one table of components, started in order and
 * stopped in reverse (cmd/components.h), and the wait for SIGINT or SIGTERM between.
 *
 * What runs where: the token verifier, the event hub, the webhook dispatcher and the
 * HTTP server run in `serve`; the job workers, and one recovery driver and one rollout
 * driver beside them, in every process that runs workers (`worker` always; `serve` unless
 * GPUFLEET_WORKERS=0); the idle policy in every process unless
 * GPUFLEET_IDLE_POLICY_INTERVAL=0 (an advisory lock picks the replica that acts); the
 * budget pass in every process unless GPUFLEET_BUDGET_INTERVAL=0 (every replica computes;
 * the alerts' inserts decide which one emits). */
#include <libssh2.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "api/auth.h"
#include "api/config.h"
#include "api/events.h"
#include "api/server.h"
#include "api/sse.h"
#include "api/tokens.h"
#include "api/webhooks.h"
#include "api/work_reports.h"
#include "cmd/cmd.h"
#include "cmd/components.h"
#include "common/crypt.h"
#include "common/log.h"
#include "db/db.h"
#include "db/migrate.h"
#include "provisioner/host_port.h"
#include "provisioner/jobs/worker.h"
#include "service/budget.h"
#include "service/catalog.h"
#include "service/drills.h"
#include "service/events_hub.h"
#include "service/host_commands.h"
#include "service/idle_policy.h"
#include "service/jwks.h"
#include "service/recovery.h"
#include "service/rollout.h"
#include "service/rollups.h"
#include "service/tokens.h"
#include "service/webhooks.h"

#define RECOVERY_MS 2000 /* how often the recovery driver looks at running recoveries */
#define ROLLOUT_MS  1000 /* how often the rollout driver looks at active rollouts */

struct serve {
    struct api_config cfg;
    struct api_auth auth;
    int api;     /* serve: the HTTP API runs here; worker: it does not */
    int migrate; /* --migrate */
};

static int api_wanted(const void *ctx)
{
    return ((const struct serve *)ctx)->api;
}

static int workers_wanted(const void *ctx)
{
    return ((const struct serve *)ctx)->cfg.workers > 0;
}

static int idle_policy_wanted(const void *ctx)
{
    return ((const struct serve *)ctx)->cfg.idle_policy_interval_s > 0;
}

static int budget_wanted(const void *ctx)
{
    return ((const struct serve *)ctx)->cfg.budget_interval_s > 0;
}

static int rollup_wanted(const void *ctx)
{
    return ((const struct serve *)ctx)->cfg.rollup_interval_ms > 0;
}

/* A start that answers 0 or not: "cannot start the WHAT" when not. */
static int started(int rc, const char *what, char *err, size_t errlen)
{
    if (rc == 0)
        return 0;
    snprintf(err, errlen, "cannot start the %s", what);
    return -1;
}

/* The stop of a component whose stop takes no context. */
#define STOP_ADAPTER(name, fn)  \
    static void name(void *ctx) \
    {                           \
        (void)ctx;              \
        fn();                   \
    }

STOP_ADAPTER(ssh_stop, libssh2_exit)
STOP_ADAPTER(master_key_stop, crypt_shutdown)
STOP_ADAPTER(pool_stop, db_pool_shutdown)
STOP_ADAPTER(catalog_stop, svc_catalog_shutdown)
STOP_ADAPTER(hub_stop, ev_hub_stop)
STOP_ADAPTER(tokens_stop, svc_tokens_stop)
STOP_ADAPTER(http_stop, api_server_stop)
STOP_ADAPTER(webhooks_stop, svc_webhooks_stop)
STOP_ADAPTER(workers_stop, prov_workers_stop)
STOP_ADAPTER(recovery_stop, svc_recovery_stop)
STOP_ADAPTER(rollout_stop, svc_rollout_stop)
STOP_ADAPTER(idle_policy_stop_c, idle_policy_stop)
STOP_ADAPTER(budget_stop_c, svc_budget_stop)
STOP_ADAPTER(rollup_stop_c, svc_rollups_stop)
STOP_ADAPTER(drills_stop_c, svc_drills_stop)

/* ---- what the others stand on ---- */

static int ssh_start(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    if (libssh2_init(0) == 0)
        return 0;
    snprintf(err, errlen, "cannot initialise libssh2");
    return -1;
}

/* Loads the JWK set of an OIDC provider (fetched now, refreshed in the background). An
 * unreachable JWKS URL at start is logged, not fatal: /readyz answers 503
 * jwks_unavailable until a refresh succeeds. A bad JWKS file is fatal. */
static int oidc_start(struct serve *s, char *err, size_t errlen)
{
    const struct api_config *cfg = &s->cfg;
    struct jwks_config jc = {cfg->jwt_jwks_url,           cfg->jwt_jwks_file,
                             cfg->jwt_jwks_ca_file,       cfg->jwt_jwks_refresh_s,
                             cfg->jwt_jwks_min_refresh_s, cfg->jwt_jwks_timeout_s};
    struct jwks *j = jwks_new(&jc);
    if (j == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char why[256];
    if (jwks_load(j, why, sizeof why) != 0) {
        if (cfg->jwt_jwks_file != NULL) {
            snprintf(err, errlen, "GPUFLEET_JWT_JWKS_FILE: %s", why);
            jwks_free(j);
            return -1;
        }
        log_json_steal(LOG_ERROR,
                       json_pack("{s:s, s:s}", "msg",
                                 "the JWK set cannot be loaded at start; tokens are refused and "
                                 "/readyz answers 503 until a refresh succeeds",
                                 "reason", why));
    }
    if (auth_init_oidc(&s->auth, j, cfg->jwt_role_map, cfg->jwt_role_claim,
                       cfg->jwt_principal_claim, cfg->jwt_issuer, cfg->jwt_audience, err,
                       errlen) != 0)
        return -1; /* auth_init_oidc freed j */
    if (jwks_start(j) != 0) {
        snprintf(err, errlen, "cannot start the JWKS refresher");
        auth_free(&s->auth);
        return -1;
    }
    jwks_set_global(j);
    return 0;
}

/* The token verifier: HS256/ES256 with a configured key, or OIDC. */
static int auth_start(void *ctx, char *err, size_t errlen)
{
    struct serve *s = ctx;
    const struct api_config *cfg = &s->cfg;
    if (cfg->jwt_jwks_url != NULL || cfg->jwt_jwks_file != NULL)
        return oidc_start(s, err, errlen);
    if (auth_init(&s->auth, cfg->jwt_secret_file, cfg->jwt_public_key_file, cfg->jwt_issuer,
                  cfg->jwt_audience, err, errlen) != 0)
        return -1;
    /* gpufleetd's own tokens: a lifetime over the cap (minted before it) is refused. */
    s->auth.max_ttl_s = cfg->token_max_ttl_s;
    s->auth.reporter_max_ttl_s = cfg->token_reporter_max_ttl_s;
    return 0;
}

static void auth_stop(void *ctx)
{
    auth_free(&((struct serve *)ctx)->auth);
}

/* A bad master key file stops the service at start, not at the first credential. */
static int master_key_start(void *ctx, char *err, size_t errlen)
{
    return crypt_init_from_file(((struct serve *)ctx)->cfg.master_key_file, err, errlen);
}

/* Applies the migrations when asked (--migrate), then refuses a schema that is not this
 * binary's. */
static int schema_start(void *ctx, char *err, size_t errlen)
{
    struct serve *s = ctx;
    int n;
    if (s->migrate &&
        db_migrate_roles(s->cfg.migrate_database_url, s->cfg.database_url, &n, err, errlen) != 0)
        return -1;
    enum db_schema_state st = db_schema_check(s->cfg.database_url, &n, err, errlen);
    if (st == DB_SCHEMA_PENDING)
        strncat(err, " (or start with --migrate)", errlen - strlen(err) - 1);
    return st == DB_SCHEMA_CURRENT ? 0 : -1;
}

/* API threads, worker threads and (serve) the event hub and the webhook dispatcher each
 * need a connection now and then. Each worker thread writes through its own writer
 * threads (provisioner/jobs/job_writer.c), each borrowing a connection per write: they get
 * slots of their own, beyond the API's. */
static int pool_start(void *ctx, char *err, size_t errlen)
{
    const struct serve *s = ctx;
    const struct api_config *cfg = &s->cfg;
    int size = (s->api ? cfg->db_pool_size + 3 : 0) + cfg->workers * (PROV_DB_WRITERS + 1) +
               2 * (cfg->idle_policy_interval_s > 0) + (cfg->budget_interval_s > 0) +
               (cfg->rollup_interval_ms > 0);
    db_set_statement_timeout(cfg->db_statement_timeout_ms);
    db_set_keepalives(cfg->db_keepalives_idle_s, cfg->db_keepalives_interval_s,
                      cfg->db_keepalives_count, cfg->db_tcp_user_timeout_ms);
    if (db_pool_init(cfg->database_url, size) == 0)
        return 0;
    snprintf(err, errlen, "cannot create the database pool");
    return -1;
}

/* Every command on a host takes the service's one path (service/host_commands.h): the
 * registration's SSH allow list, and the apply path the jobs and the monitor change host
 * states through (provisioner/host_port.h), installed before any worker starts. */
static int host_commands_start(void *ctx, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    svc_host_commands_configure(((struct serve *)ctx)->cfg.ssh_allow_cidrs);
    prov_host_port_install(svc_host_apply);
    return 0;
}

/* ---- the API's background parts ---- */

static int hub_start(void *ctx, char *err, size_t errlen)
{
    const struct api_config *cfg = &((struct serve *)ctx)->cfg;
    struct ev_hub_config hc = {
        cfg->database_url,       cfg->events_heartbeat_s,       cfg->events_ring,
        cfg->events_retention_s, cfg->events_ingest_throttle_s, &api_sse_wire};
    return started(ev_hub_start(&hc), "event hub", err, errlen);
}

/* The revocation list every request's token is checked against (service/tokens.h; one
 * more pooled connection, now and then). */
static int tokens_start(void *ctx, char *err, size_t errlen)
{
    return started(svc_tokens_start(((struct serve *)ctx)->cfg.token_revocation_refresh_s),
                   "token revocation list", err, errlen);
}

/* Event streams hold a socket each: allow as many descriptors as the hard limit does. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            log_msg(LOG_WARN, "cannot raise the open-files limit to %llu",
                    (unsigned long long)rl.rlim_max);
    }
}

static int http_start(void *ctx, char *err, size_t errlen)
{
    struct serve *s = ctx;
    const struct api_config *cfg = &s->cfg;
    raise_nofile();
    api_webhooks_configure(cfg->webhook_allow_cidrs);
    api_work_reports_configure(cfg->allow_unscoped_reporters);
    api_events_configure(cfg->event_ticket_ttl_s);
    api_tokens_configure(cfg->token_reporter_max_ttl_s > cfg->token_max_ttl_s
                             ? cfg->token_reporter_max_ttl_s
                             : cfg->token_max_ttl_s);
    return api_server_start(cfg, &s->auth, err, errlen);
}

/* Webhook deliveries (one more pooled connection). */
static int webhooks_start(void *ctx, char *err, size_t errlen)
{
    const struct api_config *cfg = &((struct serve *)ctx)->cfg;
    struct svc_webhooks_config whc = {cfg->database_url,        cfg->webhook_allow_cidrs,
                                      cfg->webhook_timeout_ms,  cfg->webhook_retry_base_ms,
                                      cfg->webhook_retry_max_s, cfg->webhook_concurrency};
    return started(svc_webhooks_start(&whc), "webhook dispatcher", err, errlen);
}

/* ---- the workers and the drivers beside them ---- */

static int workers_start(void *ctx, char *err, size_t errlen)
{
    const struct api_config *cfg = &((struct serve *)ctx)->cfg;
    struct prov_worker_config wc = {
        .database_url = cfg->database_url,
        .threads = cfg->workers,
        .concurrency = cfg->worker_concurrency,
        .lease_s = cfg->job_lease_s,
        .command_timeout_s = cfg->ssh_command_timeout_s,
        .query_timeout_s = cfg->ssh_query_timeout_s,
        .pull_timeout_s = cfg->ssh_pull_timeout_s,
        .stop_timeout_s = cfg->ssh_stop_timeout_s,
        .container_timeout_s = cfg->ssh_container_timeout_s,
        .connect_timeout_s = cfg->ssh_connect_timeout_s,
        .allow_cidrs = cfg->ssh_allow_cidrs,
        .diag_timeout_s = {cfg->diag_timeout_s[0], cfg->diag_timeout_s[1], cfg->diag_timeout_s[2]},
        .monitor = cfg->monitor,
        .monitor_keep_s = {cfg->monitor_keep_s[0], cfg->monitor_keep_s[1], cfg->monitor_keep_s[2],
                           cfg->monitor_keep_s[3]},
        .monitor_kmsg_page = cfg->monitor_kmsg_page,
        .monitor_kmsg_backlog = cfg->monitor_kmsg_backlog,
        .monitor_group_max = cfg->monitor_group_max,
        .monitor_group_ms = cfg->monitor_group_ms,
    };
    return started(prov_workers_start(&wc), "job workers", err, errlen);
}

/* One recovery driver per worker process (service/recovery.h): the recoveries' steps
 * are jobs that any worker claims. */
static int recovery_start(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    return started(svc_recovery_start(RECOVERY_MS), "recovery driver", err, errlen);
}

/* One rollout driver per worker process too (service/rollout.h): its hosts' provision
 * and gate jobs are jobs that any worker claims. */
static int rollout_start(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    return started(svc_rollout_start(ROLLOUT_MS), "rollout driver", err, errlen);
}

/* The auto_stop scheduler: every replica runs one; an advisory lock picks who acts. */
static int idle_policy_start_c(void *ctx, char *err, size_t errlen)
{
    return started(idle_policy_start(((struct serve *)ctx)->cfg.idle_policy_interval_s),
                   "idle policy scheduler", err, errlen);
}

/* The restore drill scheduler (service/drills.h): every replica runs one, at the idle
 * policy's interval; an advisory lock picks who acts. */
static int drills_start_c(void *ctx, char *err, size_t errlen)
{
    return started(svc_drills_start(((struct serve *)ctx)->cfg.idle_policy_interval_s),
                   "drill scheduler", err, errlen);
}

/* The budget pass: every replica runs one; the alerts' inserts decide who emits. */
static int budget_start_c(void *ctx, char *err, size_t errlen)
{
    return started(svc_budget_start(((struct serve *)ctx)->cfg.budget_interval_s), "budget pass",
                   err, errlen);
}

/* The rollup pass (service/rollups.h): every replica runs one; settles take turns. */
static int rollup_start_c(void *ctx, char *err, size_t errlen)
{
    return started(svc_rollups_start(((struct serve *)ctx)->cfg.rollup_interval_ms), "rollup pass",
                   err, errlen);
}

/* Started in this order, stopped in reverse. */
static const struct cmd_component components[] = {
    {"SSH library", NULL, ssh_start, ssh_stop},
    {"token verifier", api_wanted, auth_start, auth_stop},
    {"master key", NULL, master_key_start, master_key_stop},
    {"database schema", NULL, schema_start, NULL},
    {"database pool", NULL, pool_start, pool_stop},
    {"host commands", NULL, host_commands_start, NULL},
    /* loaded on demand through the pool; its last reference goes before the pool does */
    {"GPU catalog cache", NULL, NULL, catalog_stop},
    {"token revocation list", api_wanted, tokens_start, tokens_stop},
    {"event hub", api_wanted, hub_start, hub_stop},
    {"HTTP server", api_wanted, http_start, http_stop},
    {"webhook dispatcher", api_wanted, webhooks_start, webhooks_stop},
    {"job workers", workers_wanted, workers_start, workers_stop},
    {"recovery driver", workers_wanted, recovery_start, recovery_stop},
    {"rollout driver", workers_wanted, rollout_start, rollout_stop},
    {"idle policy", idle_policy_wanted, idle_policy_start_c, idle_policy_stop_c},
    {"budget pass", budget_wanted, budget_start_c, budget_stop_c},
    {"rollup pass", rollup_wanted, rollup_start_c, rollup_stop_c},
    {"drill scheduler", idle_policy_wanted, drills_start_c, drills_stop_c},
};

/* serve: the API (and GPUFLEET_WORKERS job workers); worker: job workers only. */
int cmd_serve(int argc, char **argv)
{
    struct serve s; /* the components' context */
    const char *what = argv[1];
    memset(&s, 0, sizeof s);
    s.api = strcmp(what, "worker") != 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--migrate") != 0)
            return cmd_usage(stderr);
        s.migrate = 1;
    }
    char err[512];
    unsigned need = CONFIG_NEED_DB | CONFIG_NEED_MASTER_KEY;
    if (s.api)
        need |= CONFIG_NEED_JWT | CONFIG_NEED_LISTEN;
    if (config_load(&s.cfg, need, cmd_env, err, sizeof err) != 0)
        return cmd_fatal(what, err);
    log_set_level(s.cfg.log_level);
    if (!s.api && s.cfg.workers == 0)
        s.cfg.workers = 1;
    config_log(&s.cfg);
    /* Block the stop signals before threads start, so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct cmd_run run = {components, sizeof components / sizeof components[0], &s, {0}};
    const char *failed = NULL;
    if (cmd_components_start(&run, &failed, err, sizeof err) != 0) {
        log_msg(LOG_INFO, "%s: %s did not start; the others stopped", what, failed);
        config_free(&s.cfg);
        return cmd_fatal(what, err);
    }
    log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:i, s:s, s:s}", "msg",
                                       s.api ? "listening" : "workers running", "listen",
                                       s.api ? s.cfg.listen : "", "workers", s.cfg.workers,
                                       "version", GPUFLEET_VERSION, "commit", GPUFLEET_COMMIT));
    int sig = 0;
    sigwait(&stop, &sig);
    log_msg(LOG_INFO, "signal %d: shutting down", sig);
    cmd_components_stop(&run);
    config_free(&s.cfg);
    return 0;
}
