/* stop.h — POST /v1/hosts/{id}/stop (see stop.c). */
#ifndef GPUFLEET_API_STOP_H
#define GPUFLEET_API_STOP_H

#include "api/http.h"

enum MHD_Result api_hosts_stop(struct api_req *r);

#endif
