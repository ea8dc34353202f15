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

const char *api_cors_allowed(const struct api_req *r)
{
    const char *origin = api_header(r, "Origin");
    if (origin == NULL)
        return NULL;
    for (int i = 0; i < nallowed; i++)
        if (strcmp(origin, allowed[i]) == 0)
            return origin;
    return NULL;
}

void api_cors_add_headers(const struct api_req *r, struct MHD_Response *resp)
{
    if (nallowed > 0)
        MHD_add_response_header(resp, "Vary", "Origin");
    if (r->cors_origin == NULL)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->cors_origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "ETag, Location, X-Request-Id, Retry-After, Idempotent-Replayed");
}

enum MHD_Result api_cors_preflight(struct api_req *r, const char *allow)
{
    const char *req_method = api_header(r, "Access-Control-Request-Method");
    if (req_method != NULL && api_header(r, "Origin") != NULL && r->cors_origin == NULL)
        return api_reply_problem(r, API_ERR_ORIGIN_NOT_ALLOWED, NULL,
                                 "this origin is not in GPUFLEET_CORS_ORIGINS");
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (r->cors_origin != NULL && req_method != NULL) {
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, If-Match, If-None-Match, "
                                "Idempotency-Key, X-Request-Id, Last-Event-ID");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    return api_queue(r, MHD_HTTP_NO_CONTENT, resp);
}
