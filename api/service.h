/* service.h — service endpoints that need no token: health, readiness, metrics, spec. */
#ifndef GPUFLEET_SERVICE_H
#define GPUFLEET_SERVICE_H

#include <stddef.h>

#include "api/http.h"

extern const char api_openapi_yaml[];
extern const size_t api_openapi_yaml_len;

enum MHD_Result api_healthz(struct api_req *r);
enum MHD_Result api_readyz(struct api_req *r);
/* metrics_serve.c */
enum MHD_Result api_metrics(struct api_req *r);
enum MHD_Result api_openapi(struct api_req *r);

#endif
