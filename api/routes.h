/* routes.h — the one static route table: {method, path template, handler, roles, flags}. */
#ifndef GPUFLEET_ROUTES_H
#define GPUFLEET_ROUTES_H

#include <stddef.h>

#include "api/http.h"

enum api_route_flags {
    ROUTE_PUBLIC = 1,  /* no token needed */
    ROUTE_BODY = 2,    /* takes a JSON object body */
    ROUTE_MUTATES = 4, /* changes state: audited, honours Idempotency-Key on POST */
    ROUTE_TICKET = 8,  /* also accepts ?ticket= from POST /v1/event-tickets (api/events.h) */
    ROUTE_UI = 16,     /* the status page: its answers carry the page's policy (API_UI_CSP) */
    ROUTE_BODY_OPTIONAL = 32, /* takes an optional JSON object body (none: r->json NULL) */
    ROUTE_PROBE = 64, /* health and metrics: rate-limited per address in a bucket of their own */
};

struct api_route {
    const char *method;
    const char *path; /* "/v1/gpu-models/{key}" */
    api_handler handler;
    unsigned roles; /* allowed roles (bitmask of enum api_role); 0 for public routes */
    unsigned flags;
    const char *handler_name; /* "api_hosts_resume": the route's OpenAPI operationId */
    const char *file;         /* where the handler is defined: "api/gates.c" */
};

extern const struct api_route api_routes[];
extern const size_t api_routes_count;

enum api_match {
    MATCH_OK = 0,
    MATCH_NO_PATH,      /* 404 */
    MATCH_WRONG_METHOD, /* 405; allow lists the methods */
};

/* Matches method and path. On MATCH_OK, *route is set and params[] receive malloc'd copies
 * of the path parameters (caller frees). allow receives the comma-separated methods the
 * path supports (for 405 and CORS preflight). *label is a stable index for metrics: the
 * first route with the same path template, or -1 when no path matched. */
enum api_match api_route_match(const char *method, const char *path, const struct api_route **route,
                               char **params, int *nparams, char *allow, size_t allowlen,
                               int *label);

#endif
