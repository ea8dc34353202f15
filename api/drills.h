/* drills.h — restore drills (docs/hosts-and-gates.md "Restore drills"). */
#ifndef GPUFLEET_API_DRILLS_H
#define GPUFLEET_API_DRILLS_H

#include "api/http.h"

enum MHD_Result api_hosts_drill(struct api_req *r);
enum MHD_Result api_hosts_drills(struct api_req *r);
enum MHD_Result api_drills_list(struct api_req *r);
enum MHD_Result api_drills_get(struct api_req *r);

#endif
