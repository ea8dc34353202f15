/* bottlenecks.h — GET /v1/bottlenecks?pool=|brief=|host=&from=&to=: where the time goes in
 * a pool, a brief or a host, and the next test (docs/bottlenecks.md). */
#ifndef GPUFLEET_API_BOTTLENECKS_H
#define GPUFLEET_API_BOTTLENECKS_H

#include "api/http.h"

#define BN_DEFAULT_WINDOW_S 86400             /* from defaults to 24 h before to */
#define BN_MAX_WINDOW_S     (366LL * 86400LL) /* at most a year */
#define BN_REPEATED_MAX     50                /* hosts listed under repeated_loads */

enum MHD_Result api_bottlenecks(struct api_req *r);

#endif
