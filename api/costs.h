/* costs.h — GET /v1/costs: cost per completed work, per host, pool or brief. */
#ifndef GPUFLEET_API_COSTS_H
#define GPUFLEET_API_COSTS_H

#include "api/http.h"

#define COSTS_DEFAULT_WINDOW_S 86400             /* from defaults to 24 h before to */
#define COSTS_MAX_WINDOW_S     (366LL * 86400LL) /* at most a year per report */

enum MHD_Result api_costs(struct api_req *r);

#endif
