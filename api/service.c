/* service.c — /healthz, /readyz, /openapi.yaml (/metrics: metrics_serve.c). */
#include "api/service.h"

#include <stdlib.h>
#include <string.h>

#include "db/migrate.h"
#include "service/jwks.h"

enum MHD_Result api_healthz(struct api_req *r)
{
    return api_reply_json(
        r, MHD_HTTP_OK, json_pack("{s:s, s:s}", "status", "ok", "version", GPUFLEET_VERSION), NULL);
}

enum MHD_Result api_readyz(struct api_req *r)
{
    int applied = 0;
    char last[128];
    enum db_status s = db_schema_applied(&applied, last, sizeof last);
    if (s == DB_UNAVAILABLE)
        return api_reply_problem(r, API_ERR_DATABASE_UNAVAILABLE, NULL,
                                 "the database cannot be reached");
    if (s < 0)
        return api_reply_problem(r, API_ERR_SCHEMA_NOT_CURRENT, NULL,
                                 "the schema cannot be read; run gpufleetd migrate");
    const char *want = db_migrations_count ? db_migrations[db_migrations_count - 1].name : "";
    if ((size_t)applied != db_migrations_count || strcmp(last, want) != 0)
        return api_reply_problem(r, API_ERR_SCHEMA_NOT_CURRENT, NULL,
                                 "the schema has %d migrations applied, last %s; this binary "
                                 "expects %zu, last %s",
                                 applied, last, db_migrations_count, want);
    /* OIDC: no keys at all is not ready (every token would be refused); a failed refresh
     * with cached keys is "degraded" but still 200, so that an identity provider outage does
     * not take every replica out of its load balancer while the cached keys still verify. */
    int unavailable = 0;
    json_t *jwks = jwks_global() ? jwks_health(jwks_global(), &unavailable) : NULL;
    if (unavailable) {
        const char *why = json_string_value(json_object_get(jwks, "last_error"));
        enum MHD_Result ret = api_reply_problem(r, API_ERR_JWKS_UNAVAILABLE, NULL,
                                                "no signing keys are loaded from the identity "
                                                "provider's JWK set%s%s",
                                                why ? ": " : "", why ? why : "");
        json_decref(jwks);
        return ret;
    }
    int degraded =
        jwks != NULL && strcmp(json_string_value(json_object_get(jwks, "status")), "degraded") == 0;
    json_t *body = json_pack("{s:s, s:s, s:s, s:i}", "status", degraded ? "degraded" : "ready",
                             "database", "ok", "schema", "current", "migrations_applied", applied);
    if (jwks != NULL)
        json_object_set_new(body, "jwks", jwks);
    return api_reply_json(r, MHD_HTTP_OK, body, NULL);
}

enum MHD_Result api_openapi(struct api_req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        api_openapi_yaml_len, (void *)api_openapi_yaml, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/yaml");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=300");
    return api_queue(r, MHD_HTTP_OK, resp);
}
