/* main.c — gpufleetd: serve | migrate | token | keygen | routes | sql | version. */
#include <getopt.h>
#include <libssh2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/config.h"
#include "api/events.h"
#include "api/hosts.h"
#include "api/role.h"
#include "api/routes.h"
#include "api/server.h"
#include "api/sse.h"
#include "api/webhooks.h"
#include "api/work_reports.h"
#include "common/crypt.h"
#include "common/log.h"
#include "common/secret.h"
#include "common/util.h"
#include "db/db.h"
#include "db/migrate.h"
#include "planner/host_state.h"
#include "provisioner/host_port.h"
#include "provisioner/jobs/worker.h"
#include "service/catalog.h"
#include "service/events_hub.h"
#include "service/host_commands.h"
#include "service/idle_policy.h"
#include "service/jwks.h"
#include "service/webhooks.h"

#include <openssl/crypto.h>

static const char *env(const char *name)
{
    return getenv(name);
}

static int usage(FILE *out)
{
    fprintf(out,
            "usage: gpufleetd COMMAND\n"
            "  serve [--migrate]      run the API (configuration from GPUFLEET_* variables)\n"
            "  worker [--migrate]     run job workers only (no API)\n"
            "  migrate                apply pending database migrations\n"
            "  token --sub NAME --role viewer|operator|admin|reporter [--ttl 15m]\n"
            "        [--pool NAME_OR_ID]... [--host NAME_OR_ID]...   (reporter scope)\n"
            "        [--private-key-file EC_P256.pem]   print a signed JWT (HS256 with\n"
            "                         GPUFLEET_JWT_SECRET_FILE, or ES256 with the key file)\n"
            "  keygen PATH            write a new random secret file (mode 0600)\n"
            "  routes                 print the route table (METHOD PATH HANDLER FILE)\n"
            "  sql NAME               print the SQL of a prepared statement (for EXPLAIN)\n"
            "  state-machine [--sql]  print the host state machine (Markdown, or the SQL rows\n"
            "                         that migrations/0012 loads)\n"
            "  version                print the version\n");
    return out == stderr ? 2 : 0;
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

static int fatal(const char *what, const char *reason)
{
    fprintf(stderr, "gpufleetd %s: %s\n", what, reason);
    return 1;
}

static int cmd_migrate(void)
{
    struct api_config cfg;
    char err[512];
    if (config_load(&cfg, CONFIG_NEED_DB, env, err, sizeof err) != 0)
        return fatal("migrate", err);
    log_set_level(cfg.log_level);
    int n = 0;
    int rc = db_migrate(cfg.database_url, &n, err, sizeof err);
    config_free(&cfg);
    if (rc != 0)
        return fatal("migrate", err);
    if (n == 0)
        printf("schema is current (%zu migrations); nothing applied\n", db_migrations_count);
    else
        printf("applied %d migration(s); schema is current (%zu migrations)\n", n,
               db_migrations_count);
    return 0;
}

/* The token verifier: HS256/ES256 with a configured key, or OIDC (a JWK set, fetched now
 * and refreshed in the background). An unreachable JWKS URL at start is logged, not fatal:
 * /readyz answers 503 jwks_unavailable until a refresh succeeds. A bad JWKS file is
 * fatal. */
static int init_auth(struct api_auth *auth, const struct api_config *cfg, char *err, size_t errlen)
{
    if (cfg->jwt_jwks_url == NULL && cfg->jwt_jwks_file == NULL)
        return auth_init(auth, cfg->jwt_secret_file, cfg->jwt_public_key_file, cfg->jwt_issuer,
                         cfg->jwt_audience, err, errlen);
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
    if (auth_init_oidc(auth, j, cfg->jwt_role_map, cfg->jwt_role_claim, cfg->jwt_principal_claim,
                       cfg->jwt_issuer, cfg->jwt_audience, err, errlen) != 0)
        return -1; /* auth_init_oidc freed j */
    if (jwks_start(j) != 0) {
        snprintf(err, errlen, "cannot start the JWKS refresher");
        auth_free(auth);
        return -1;
    }
    jwks_set_global(j);
    return 0;
}

/* serve: the API (and GPUFLEET_WORKERS job workers); worker: job workers only. */
static int cmd_serve(int argc, char **argv, int workers_only)
{
    const char *what = workers_only ? "worker" : "serve";
    int do_migrate = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--migrate") == 0)
            do_migrate = 1;
        else
            return usage(stderr);
    }
    struct api_config cfg;
    struct api_auth auth;
    memset(&auth, 0, sizeof auth);
    char err[512];
    int rc = 1;
    unsigned need = CONFIG_NEED_DB | CONFIG_NEED_MASTER_KEY;
    if (!workers_only)
        need |= CONFIG_NEED_JWT | CONFIG_NEED_LISTEN;
    if (config_load(&cfg, need, env, err, sizeof err) != 0)
        return fatal(what, err);
    log_set_level(cfg.log_level);
    if (workers_only && cfg.workers == 0)
        cfg.workers = 1;
    if (!workers_only && init_auth(&auth, &cfg, err, sizeof err) != 0) {
        config_free(&cfg);
        return fatal(what, err);
    }
    /* A bad master key file stops the service at start, not at the first credential. */
    if (crypt_init_from_file(cfg.master_key_file, err, sizeof err) != 0) {
        fatal(what, err);
        goto cleanup_auth;
    }
    config_log(&cfg);
    if (do_migrate) {
        int n;
        if (db_migrate(cfg.database_url, &n, err, sizeof err) != 0) {
            fatal(what, err);
            goto cleanup_auth;
        }
    }
    int applied;
    enum db_schema_state st = db_schema_check(cfg.database_url, &applied, err, sizeof err);
    if (st != DB_SCHEMA_CURRENT) {
        if (st == DB_SCHEMA_PENDING)
            strncat(err, " (or start with --migrate)", sizeof err - strlen(err) - 1);
        fatal(what, err);
        goto cleanup_auth;
    }
    /* Block the stop signals before threads start, so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* API threads, worker threads and (serve) the event hub and the webhook dispatcher
     * each need a connection now and then. */
    /* Each worker thread writes through its own writer threads (provisioner/jobs/job_writer.c),
     * each borrowing a connection per write: they get slots of their own, beyond the API's. */
    int pool = (workers_only ? 0 : cfg.db_pool_size + 2) + cfg.workers * (PROV_DB_WRITERS + 1) +
               (cfg.idle_policy_interval_s > 0);
    db_set_statement_timeout(cfg.db_statement_timeout_ms);
    db_set_keepalives(cfg.db_keepalives_idle_s, cfg.db_keepalives_interval_s,
                      cfg.db_keepalives_count, cfg.db_tcp_user_timeout_ms);
    if (db_pool_init(cfg.database_url, pool) != 0) {
        fatal(what, "cannot create the database pool");
        goto cleanup_auth;
    }
    svc_host_commands_configure(cfg.ssh_allow_cidrs);
    /* the jobs and the monitor apply host events through the service's one path */
    prov_host_port_install(svc_host_apply);
    api_webhooks_configure(cfg.webhook_allow_cidrs);
    api_work_reports_configure(cfg.allow_unscoped_reporters);
    if (!workers_only) {
        raise_nofile();
        api_events_configure(cfg.event_ticket_ttl_s);
        struct ev_hub_config hc = {
            cfg.database_url,       cfg.events_heartbeat_s,       cfg.events_ring,
            cfg.events_retention_s, cfg.events_ingest_throttle_s, &api_sse_wire};
        if (ev_hub_start(&hc) != 0) {
            fatal(what, "cannot start the event hub");
            goto cleanup_pool;
        }
        if (api_server_start(&cfg, &auth, err, sizeof err) != 0) {
            ev_hub_stop();
            fatal(what, err);
            goto cleanup_pool;
        }
        /* Webhook deliveries (one more pooled connection); stopped at cleanup_pool. */
        struct svc_webhooks_config whc = {cfg.database_url,        cfg.webhook_allow_cidrs,
                                          cfg.webhook_timeout_ms,  cfg.webhook_retry_base_ms,
                                          cfg.webhook_retry_max_s, cfg.webhook_concurrency};
        if (svc_webhooks_start(&whc) != 0) {
            api_server_stop();
            ev_hub_stop();
            fatal(what, "cannot start the webhook dispatcher");
            goto cleanup_pool;
        }
    }
    struct prov_worker_config wc = {
        .database_url = cfg.database_url,
        .threads = cfg.workers,
        .concurrency = cfg.worker_concurrency,
        .lease_s = cfg.job_lease_s,
        .command_timeout_s = cfg.ssh_command_timeout_s,
        .query_timeout_s = cfg.ssh_query_timeout_s,
        .pull_timeout_s = cfg.ssh_pull_timeout_s,
        .stop_timeout_s = cfg.ssh_stop_timeout_s,
        .container_timeout_s = cfg.ssh_container_timeout_s,
        .connect_timeout_s = cfg.ssh_connect_timeout_s,
        .allow_cidrs = cfg.ssh_allow_cidrs,
        .diag_timeout_s = {cfg.diag_timeout_s[0], cfg.diag_timeout_s[1], cfg.diag_timeout_s[2]},
        .monitor = cfg.monitor,
        .monitor_keep_s = {cfg.monitor_keep_s[0], cfg.monitor_keep_s[1], cfg.monitor_keep_s[2]},
    };
    if (cfg.workers > 0 && prov_workers_start(&wc) != 0) {
        fatal(what, "cannot start the job workers");
        if (!workers_only) {
            api_server_stop();
            ev_hub_stop();
        }
        goto cleanup_pool;
    }
    /* The auto_stop scheduler: every replica runs one; an advisory lock picks who acts. */
    if (cfg.idle_policy_interval_s > 0 && idle_policy_start(cfg.idle_policy_interval_s) != 0) {
        fatal(what, "cannot start the idle policy scheduler");
        if (cfg.workers > 0)
            prov_workers_stop();
        if (!workers_only) {
            api_server_stop();
            ev_hub_stop();
        }
        goto cleanup_pool;
    }
    log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:i, s:s, s:s}", "msg",
                                       workers_only ? "workers running" : "listening", "listen",
                                       workers_only ? "" : cfg.listen, "workers", cfg.workers,
                                       "version", GPUFLEET_VERSION, "commit", GPUFLEET_COMMIT));
    int sig = 0;
    sigwait(&stop, &sig);
    log_msg(LOG_INFO, "signal %d: shutting down", sig);
    idle_policy_stop();
    if (!workers_only) {
        api_server_stop();
        ev_hub_stop();
    }
    if (cfg.workers > 0)
        prov_workers_stop();
    svc_catalog_shutdown();
    rc = 0;
cleanup_pool:
    svc_webhooks_stop();
    db_pool_shutdown();
cleanup_auth:
    crypt_shutdown();
    if (!workers_only)
        auth_free(&auth);
    config_free(&cfg);
    return rc;
}

static int cmd_token(int argc, char **argv)
{
    static const struct option opts[] = {{"sub", required_argument, NULL, 's'},
                                         {"role", required_argument, NULL, 'r'},
                                         {"ttl", required_argument, NULL, 't'},
                                         {"private-key-file", required_argument, NULL, 'k'},
                                         {"pool", required_argument, NULL, 'p'},
                                         {"host", required_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *sub = NULL, *role_s = NULL, *ttl_s = "15m", *keyfile = NULL;
    const char *pools[AUTH_MAX_SCOPE_ITEMS], *hosts[AUTH_MAX_SCOPE_ITEMS];
    size_t npools = 0, nhosts = 0;
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': sub = optarg; break;
        case 'r': role_s = optarg; break;
        case 't': ttl_s = optarg; break;
        case 'k': keyfile = optarg; break;
        case 'p':
        case 'h':
            if (!auth_scope_item_ok(optarg))
                return fatal("token", "--pool and --host take a name or id of 1-128 characters");
            if ((c == 'p' ? npools : nhosts) == AUTH_MAX_SCOPE_ITEMS)
                return fatal("token", "at most 256 --pool and 256 --host options");
            if (c == 'p')
                pools[npools++] = optarg;
            else
                hosts[nhosts++] = optarg;
            break;
        default: return usage(stderr);
        }
    }
    if (optind != argc || sub == NULL || role_s == NULL)
        return usage(stderr);
    enum api_role role = auth_role_parse(role_s);
    if (role == ROLE_NONE)
        return fatal("token", "--role must be viewer, operator, admin or reporter");
    if (npools + nhosts > 0 && role != ROLE_REPORTER)
        return fatal("token", "--pool and --host scope reporter tokens only");
    if (*sub == '\0' || strlen(sub) > 128)
        return fatal("token", "--sub must be 1-128 characters");
    for (const char *p = sub; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            return fatal("token", "--sub must be printable ASCII without spaces");
    long ttl;
    if (util_parse_duration(ttl_s, &ttl) != 0)
        return fatal("token", "--ttl must look like 90s, 15m, 12h or 7d");
    struct api_config cfg;
    char err[512];
    if (config_load(&cfg, keyfile ? 0 : CONFIG_NEED_JWT, env, err, sizeof err) != 0)
        return fatal("token", err);
    if (!keyfile && cfg.jwt_secret_file == NULL) {
        int oidc = cfg.jwt_jwks_url != NULL || cfg.jwt_jwks_file != NULL;
        config_free(&cfg);
        return fatal("token", oidc ? "with OIDC (GPUFLEET_JWT_JWKS_*) tokens come from the "
                                     "identity provider"
                                   : "ES256 tokens need --private-key-file (the server only "
                                     "holds the public key)");
    }
    const char *path = keyfile ? keyfile : cfg.jwt_secret_file;
    unsigned char *key;
    size_t keylen;
    if (secret_read_file(path, &key, &keylen, err, sizeof err) != 0) {
        config_free(&cfg);
        return fatal("token", err);
    }
    key[keylen] = '\0'; /* PEM text for ES256 */
    char *tok = NULL;
    int rc = auth_mint_scoped(keyfile ? JWT_ALG_ES256 : JWT_ALG_HS256, key, keylen, sub, role, ttl,
                              cfg.jwt_issuer, cfg.jwt_audience, (int64_t)time(NULL), pools, npools,
                              hosts, nhosts, &tok);
    secret_free(key, keylen);
    config_free(&cfg);
    if (rc != 0)
        return fatal("token", keyfile ? "cannot sign: is the file a PEM EC P-256 private key?"
                                      : "cannot sign the token");
    printf("%s\n", tok);
    free(tok);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "version")) {
        printf("gpufleetd %s (commit %s)\n", GPUFLEET_VERSION, GPUFLEET_COMMIT);
        return 0;
    }
    if (!strcmp(cmd, "state-machine")) {
        int sql = argc > 2 && !strcmp(argv[2], "--sql");
        char *text = sql ? plan_host_sql() : plan_host_markdown();
        if (text == NULL)
            return 1;
        fputs(text, stdout);
        free(text);
        return 0;
    }
    if (!strcmp(cmd, "sql")) {
        const char *sql = argc > 2 ? db_statement_sql(argv[2]) : NULL;
        if (sql == NULL) {
            fprintf(stderr, "gpufleetd sql: no statement named %s\n",
                    argc > 2 ? argv[2] : "(none)");
            return 2;
        }
        printf("%s\n", sql);
        return 0;
    }
    if (!strcmp(cmd, "routes")) {
        for (size_t i = 0; i < api_routes_count; i++)
            printf("%s %s %s %s\n", api_routes[i].method, api_routes[i].path,
                   api_routes[i].handler_name, api_routes[i].file);
        return 0;
    }
    if (!strcmp(cmd, "keygen")) {
        if (argc != 3)
            return usage(stderr);
        char err[512];
        if (secret_keygen(argv[2], err, sizeof err) != 0)
            return fatal("keygen", err);
        return 0;
    }
    if (!strcmp(cmd, "token"))
        return cmd_token(argc, argv);
    if (!strcmp(cmd, "migrate"))
        return argc == 2 ? cmd_migrate() : usage(stderr);
    if (!strcmp(cmd, "serve") || !strcmp(cmd, "worker")) {
        libssh2_init(0);
        int rc = cmd_serve(argc, argv, !strcmp(cmd, "worker"));
        libssh2_exit();
        return rc;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
        return usage(stdout);
    return usage(stderr);
}
