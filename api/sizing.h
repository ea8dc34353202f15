/* sizing.h — sizing estimates: GET /v1/briefs/{id}/sizing and POST /v1/sizing. */
#ifndef GPUFLEET_API_SIZING_H
#define GPUFLEET_API_SIZING_H

#include "api/http.h"

enum MHD_Result api_briefs_sizing(struct api_req *r);
enum MHD_Result api_sizing(struct api_req *r);

#endif
