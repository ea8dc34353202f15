/* token.c — gpufleetd token: mints a signed JWT for a role (HS256 with the configured
 * secret, or ES256 with a private key file), in a project (--project NAME: the role is held
 * there; without it an admin is a platform admin and the other roles act on the project
 * named default), optionally scoped for a reporter. */
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
    const char *path = keyfile ? keyfile : cfg.jwt_secret_file;
    unsigned char *key;
    size_t keylen;
    if (secret_read_file(path, &key, &keylen, err, sizeof err) != 0) {
        config_free(&cfg);
        return cmd_fatal("token", err);
    }
    key[keylen] = '\0'; /* PEM text for ES256 */
    char *tok = NULL;
    int rc = auth_mint_scoped(keyfile ? JWT_ALG_ES256 : JWT_ALG_HS256, key, keylen, sub, role,
                              project, ttl, cfg.jwt_issuer, cfg.jwt_audience, (int64_t)time(NULL),
                              pools, npools, hosts, nhosts, &tok);
    secret_free(key, keylen);
    config_free(&cfg);
    if (rc != 0)
        return cmd_fatal("token", keyfile ? "cannot sign: is the file a PEM EC P-256 private key?"
                                          : "cannot sign the token");
    printf("%s\n", tok);
    free(tok);
    return 0;
}
