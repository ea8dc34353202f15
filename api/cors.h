/* cors.h — CORS for web frontends; allowed origins come from GPUFLEET_CORS_ORIGINS. Header
 * logic only: it knows no request and queues no reply (the preflight answer is the
 * request lifecycle's, api/http.c). */
#ifndef GPUFLEET_CORS_H
#define GPUFLEET_CORS_H

#include <microhttpd.h>

void api_cors_configure(char *const *origins, int n);
/* Returns origin (the request's Origin header) when it is allowed, else NULL. */
const char *api_cors_allowed(const char *origin);
/* Adds Access-Control-* headers for an allowed origin (NULL: only Vary). */
void api_cors_add_headers(const char *cors_origin, struct MHD_Response *resp);

#endif
