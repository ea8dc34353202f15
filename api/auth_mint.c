/* auth_mint.c — minting gpufleetd's own tokens (`gpufleetd token`, the tests), and the
 * form of a project name as tokens carry it. Verification is auth.c's. */
#include "api/auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/role.h"
#include "common/util.h"

int auth_project_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || strchr("._-", s[i])))
            return 0;
    return 1;
}

int auth_mint_scoped(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
                     enum api_role role, const char *project, long ttl_s, const char *issuer,
                     const char *audience, int64_t now, const char *const *pools, size_t npools,
                     const char *const *hosts, size_t nhosts, char **out)
{
    char jti[UTIL_UUID_LEN + 1];
    util_uuid4(jti);
    return auth_mint_jti(alg, key, keylen, sub, role, project, ttl_s, issuer, audience, now, pools,
                         npools, hosts, nhosts, jti, out);
}

int auth_mint_jti(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
                  enum api_role role, const char *project, long ttl_s, const char *issuer,
                  const char *audience, int64_t now, const char *const *pools, size_t npools,
                  const char *const *hosts, size_t nhosts, const char *jti, char **out)
{
    jwt_t *jwt = NULL;
    int rc = -1;
    char *scope = NULL;
    if (npools > AUTH_MAX_SCOPE_ITEMS || nhosts > AUTH_MAX_SCOPE_ITEMS)
        return -1;
    if (npools + nhosts > 0) {
        json_t *o = json_pack("{s:[], s:[]}", "pools", "hosts");
        for (size_t i = 0; i < npools; i++)
            json_array_append_new(json_object_get(o, "pools"), json_string(pools[i]));
        for (size_t i = 0; i < nhosts; i++)
            json_array_append_new(json_object_get(o, "hosts"), json_string(hosts[i]));
        if (npools == 0)
            json_object_del(o, "pools");
        if (nhosts == 0)
            json_object_del(o, "hosts");
        scope = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (scope == NULL)
            return -1;
    }
    if (jwt_new(&jwt) != 0)
        goto cleanup;
    if (jwt_add_grant(jwt, "sub", sub) || jwt_add_grant(jwt, "role", auth_role_name(role)) ||
        jwt_add_grant(jwt, "iss", issuer) || jwt_add_grant(jwt, "aud", audience) ||
        jwt_add_grant(jwt, "jti", jti) || jwt_add_grant_int(jwt, "iat", (long)now) ||
        (project != NULL && jwt_add_grant(jwt, "project", project)) ||
        jwt_add_grant_int(jwt, "nbf", (long)now) ||
        jwt_add_grant_int(jwt, "exp", (long)(now + ttl_s)) ||
        (scope != NULL && jwt_add_grants_json(jwt, scope)) ||
        jwt_set_alg(jwt, alg, key, (int)keylen))
        goto cleanup;
    *out = jwt_encode_str(jwt);
    rc = *out ? 0 : -1;
cleanup:
    jwt_free(jwt);
    free(scope);
    return rc;
}

int auth_mint(jwt_alg_t alg, const unsigned char *key, size_t keylen, const char *sub,
              enum api_role role, long ttl_s, const char *issuer, const char *audience, int64_t now,
              char **out)
{
    return auth_mint_scoped(alg, key, keylen, sub, role, NULL, ttl_s, issuer, audience, now, NULL,
                            0, NULL, 0, out);
}
