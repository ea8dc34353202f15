/* cors.h — CORS for web frontends; allowed origins come from GPUFLEET_CORS_ORIGINS. */
#ifndef GPUFLEET_CORS_H
#define GPUFLEET_CORS_H

#include "api/http.h"

void api_cors_configure(char *const *origins, int n);
/* Returns the request's Origin when it is allowed, else NULL. */
const char *api_cors_allowed(const struct api_req *r);
/* Adds Access-Control-* headers for an allowed origin (no-op otherwise). */
void api_cors_add_headers(const struct api_req *r, struct MHD_Response *resp);
/* Answers an OPTIONS request (preflight or not). allow lists the path's methods. */
enum MHD_Result api_cors_preflight(struct api_req *r, const char *allow);

#endif
