/* placement.h — GET /v1/briefs/{id}/placement (docs/placement.md). */
#ifndef GPUFLEET_API_PLACEMENT_H
#define GPUFLEET_API_PLACEMENT_H

#include "api/http.h"

enum MHD_Result api_briefs_placement(struct api_req *r);

#endif
