/* token.c — gpufleetd token: mints a signed JWT for a role (HS256 with the configured
 * secret, or ES256 with a private key file), in a project (--project NAME: the role is held
 * there; without it an admin is a platform admin and the other roles act on the project
 * named default), optionally scoped for a reporter.
 *
 * Its lifetime is capped (GPUFLEET_TOKEN_MAX_TTL_SECONDS, 24 h by default; reporters
 * GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS, 90 d): a longer --ttl is refused, not clamped.
 * Its jti is recorded in the database (the tokens table) before the token is printed, so
 * that it can be revoked (POST /v1/tokens/revoke); no record, no token. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/config.h"
#include "api/role.h"
#include "cmd/cmd.h"
#include "common/secret.h"
#include "common/util.h"
#include "db/db.h"
#include "service/tokens.h"

/* The lifetime cap of the role's tokens, and a database to record the jti in. Returns 0,
 * or -1 with the reason. */
static int check_ttl(const struct api_config *cfg, enum api_role role, const char *ttl_s, long ttl,
                     char *err, size_t errlen)
{
    long cap = role == ROLE_REPORTER ? cfg->token_reporter_max_ttl_s : cfg->token_max_ttl_s;
    if (ttl > cap) {
        snprintf(err, errlen,
                 "--ttl %s (%ld s) is longer than a %s token may live: %ld s (%s); ask for "
                 "less, or raise the cap",
                 ttl_s, ttl, auth_role_name(role), cap,
                 role == ROLE_REPORTER ? "GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS"
                                       : "GPUFLEET_TOKEN_MAX_TTL_SECONDS");
        return -1;
    }
    if (cfg->database_url == NULL) {
        snprintf(err, errlen,
                 "GPUFLEET_DATABASE_URL is not set: each token's jti is recorded "
                 "there (so that it can be revoked) before it is issued");
        return -1;
    }
    return 0;
}

/* Records the token's jti, then prints the token (no record, no token). */
static int record_and_print(const char *url, char *tok, const char *jti, const char *sub,
                            enum api_role role, const char *project, int64_t iat, int64_t exp)
{
    enum db_status s = DB_UNAVAILABLE;
    if (db_pool_init(url, 1) == 0) {
        s = svc_token_record(jti, sub, auth_role_name(role), project, iat, exp);
        db_pool_shutdown();
    }
    if (s < 0) {
        free(tok);
        return cmd_fatal("token", s == DB_UNAVAILABLE || s == DB_TIMEOUT
                                      ? "cannot record the token's jti: the database is not "
                                        "reachable (GPUFLEET_DATABASE_URL); no token was issued"
                                      : "cannot record the token's jti (is the schema migrated? "
                                        "gpufleetd migrate); no token was issued");
    }
    printf("%s\n", tok);
    free(tok);
    return 0;
}

int cmd_token(int argc, char **argv)
{
    static const struct option opts[] = {{"sub", required_argument, NULL, 's'},
                                         {"role", required_argument, NULL, 'r'},
                                         {"ttl", required_argument, NULL, 't'},
                                         {"private-key-file", required_argument, NULL, 'k'},
                                         {"pool", required_argument, NULL, 'p'},
                                         {"host", required_argument, NULL, 'h'},
                                         {"project", required_argument, NULL, 'P'},
                                         {NULL, 0, NULL, 0}};
    const char *sub = NULL, *role_s = NULL, *ttl_s = "15m", *keyfile = NULL, *project = NULL;
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
        case 'P':
            if (!auth_project_name_ok(optarg))
                return cmd_fatal("token", "--project takes a project name: 1-63 of a-z, 0-9, "
                                          "'.', '_' and '-', starting with a letter or digit");
            project = optarg;
            break;
        case 'p':
        case 'h':
            if (!auth_scope_item_ok(optarg))
                return cmd_fatal("token",
                                 "--pool and --host take a name or id of 1-128 characters");
            if ((c == 'p' ? npools : nhosts) == AUTH_MAX_SCOPE_ITEMS)
                return cmd_fatal("token", "at most 256 --pool and 256 --host options");
            if (c == 'p')
                pools[npools++] = optarg;
            else
                hosts[nhosts++] = optarg;
            break;
        default: return cmd_usage(stderr);
        }
    }
    if (optind != argc || sub == NULL || role_s == NULL)
        return cmd_usage(stderr);
    enum api_role role = auth_role_parse(role_s);
    if (role == ROLE_NONE)
        return cmd_fatal("token", "--role must be viewer, operator, admin or reporter");
    if (npools + nhosts > 0 && role != ROLE_REPORTER)
        return cmd_fatal("token", "--pool and --host scope reporter tokens only");
    if (*sub == '\0' || strlen(sub) > 128)
        return cmd_fatal("token", "--sub must be 1-128 characters");
    for (const char *p = sub; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            return cmd_fatal("token", "--sub must be printable ASCII without spaces");
    long ttl;
    if (util_parse_duration(ttl_s, &ttl) != 0)
        return cmd_fatal("token", "--ttl must look like 90s, 15m, 12h or 7d");
    struct api_config cfg;
    char err[512];
    if (config_load(&cfg, keyfile ? 0 : CONFIG_NEED_JWT, cmd_env, err, sizeof err) != 0)
        return cmd_fatal("token", err);
    if (!keyfile && cfg.jwt_secret_file == NULL) {
        int oidc = cfg.jwt_jwks_url != NULL || cfg.jwt_jwks_file != NULL;
        config_free(&cfg);
        return cmd_fatal("token", oidc ? "with OIDC (GPUFLEET_JWT_JWKS_*) tokens come from the "
                                         "identity provider"
                                       : "ES256 tokens need --private-key-file (the server only "
                                         "holds the public key)");
    }
    if (check_ttl(&cfg, role, ttl_s, ttl, err, sizeof err) != 0) {
        config_free(&cfg);
        return cmd_fatal("token", err);
    }
    const char *path = keyfile ? keyfile : cfg.jwt_secret_file;
    unsigned char *key;
    size_t keylen;
    if (secret_read_file(path, &key, &keylen, err, sizeof err) != 0) {
        config_free(&cfg);
        return cmd_fatal("token", err);
    }
    key[keylen] = '\0'; /* PEM text for ES256 */
    char *tok = NULL, jti[UTIL_UUID_LEN + 1];
    util_uuid4(jti);
    int64_t now = (int64_t)time(NULL);
    int rc = auth_mint_jti(keyfile ? JWT_ALG_ES256 : JWT_ALG_HS256, key, keylen, sub, role, project,
                           ttl, cfg.jwt_issuer, cfg.jwt_audience, now, pools, npools, hosts, nhosts,
                           jti, &tok);
    secret_free(key, keylen);
    if (rc != 0) {
        config_free(&cfg);
        return cmd_fatal("token", keyfile ? "cannot sign: is the file a PEM EC P-256 private key?"
                                          : "cannot sign the token");
    }
    rc = record_and_print(cfg.database_url, tok, jti, sub, role, project, now, now + ttl);
    config_free(&cfg);
    return rc;
}
