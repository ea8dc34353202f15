/* main.c — gpufleetd's entry point: one table of subcommands. serve and worker are
 * cmd/serve.c, token is cmd/token.c; the small ones that print or write one thing are
 * here, and what they share is cmd/cmd.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/config.h"
#include "api/routes.h"
#include "cmd/cmd.h"
#include "common/log.h"
#include "common/secret.h"
#include "db/db.h"
#include "db/migrate.h"
#include "planner/host_state.h"

static int cmd_migrate(int argc, char **argv)
{
    (void)argv;
    if (argc != 2)
        return cmd_usage(stderr);
    struct api_config cfg;
    char err[512];
    if (config_load(&cfg, CONFIG_NEED_DB, cmd_env, err, sizeof err) != 0)
        return cmd_fatal("migrate", err);
    log_set_level(cfg.log_level);
    int n = 0;
    int rc = db_migrate_roles(cfg.migrate_database_url, cfg.database_url, &n, err, sizeof err);
    config_free(&cfg);
    if (rc != 0)
        return cmd_fatal("migrate", err);
    if (n == 0)
        printf("schema is current (%zu migrations); nothing applied\n", db_migrations_count);
    else
        printf("applied %d migration(s); schema is current (%zu migrations)\n", n,
               db_migrations_count);
    return 0;
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpufleetd %s (commit %s)\n", GPUFLEET_VERSION, GPUFLEET_COMMIT);
    return 0;
}

static int cmd_state_machine(int argc, char **argv)
{
    int sql = argc > 2 && !strcmp(argv[2], "--sql");
    char *text = sql ? plan_host_sql() : plan_host_markdown();
    if (text == NULL)
        return 1;
    fputs(text, stdout);
    free(text);
    return 0;
}

static int cmd_sql(int argc, char **argv)
{
    const char *sql = argc > 2 ? db_statement_sql(argv[2]) : NULL;
    if (sql == NULL) {
        fprintf(stderr, "gpufleetd sql: no statement named %s\n", argc > 2 ? argv[2] : "(none)");
        return 2;
    }
    printf("%s\n", sql);
    return 0;
}

static int cmd_routes(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < api_routes_count; i++)
        printf("%s %s %s %s\n", api_routes[i].method, api_routes[i].path,
               api_routes[i].handler_name, api_routes[i].file);
    return 0;
}

static int cmd_keygen(int argc, char **argv)
{
    if (argc != 3)
        return cmd_usage(stderr);
    char err[512];
    if (secret_keygen(argv[2], err, sizeof err) != 0)
        return cmd_fatal("keygen", err);
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cmd_usage(stdout);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[1] is the name */
} commands[] = {
    {"version", cmd_version}, {"state-machine", cmd_state_machine},
    {"sql", cmd_sql},         {"routes", cmd_routes},
    {"keygen", cmd_keygen},   {"token", cmd_token},
    {"migrate", cmd_migrate}, {"serve", cmd_serve},
    {"worker", cmd_serve},    {"help", cmd_help},
    {"--help", cmd_help},     {"-h", cmd_help},
};

int main(int argc, char **argv)
{
    if (argc < 2)
        return cmd_usage(stderr);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc, argv);
    return cmd_usage(stderr);
}
