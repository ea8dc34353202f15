/* cors.c — see cors.h. Exact origin match only; no wildcards, no credentials (tokens
 * travel in the Authorization header, never in cookies). */
#include "api/cors.h"

#include <string.h>

static char *const *allowed;
static int nallowed;

void api_cors_configure(char *const *origins, int n)
{
    allowed = origins;
    nallowed = n;
}

const char *api_cors_allowed(const char *origin)
{
    if (origin == NULL)
        return NULL;
    for (int i = 0; i < nallowed; i++)
        if (strcmp(origin, allowed[i]) == 0)
            return origin;
    return NULL;
}

void api_cors_add_headers(const char *cors_origin, struct MHD_Response *resp)
{
    if (nallowed > 0)
        MHD_add_response_header(resp, "Vary", "Origin");
    if (cors_origin == NULL)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", cors_origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "ETag, Location, X-Request-Id, Retry-After, Idempotent-Replayed, "
                            "RateLimit, RateLimit-Policy");
}
