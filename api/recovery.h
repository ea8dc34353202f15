/* recovery.h — automatic recoveries of isolated hosts (planner/recovery.h): the list. */
#ifndef GPUFLEET_API_RECOVERY_H
#define GPUFLEET_API_RECOVERY_H

#include "api/http.h"

/* GET /v1/hosts/{id}/recoveries: newest first, filter state, keyset cursor; 404 for an
 * unknown host. */
enum MHD_Result api_hosts_recoveries(struct api_req *r);

#endif
