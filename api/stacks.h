/* stacks.h — /v1/stacks: pinned software stacks (immutable; no PUT/PATCH/DELETE). */
#ifndef GPUFLEET_API_STACKS_H
#define GPUFLEET_API_STACKS_H

#include "api/http.h"

enum MHD_Result api_stacks_create(struct api_req *r);
enum MHD_Result api_stacks_list(struct api_req *r);
enum MHD_Result api_stacks_get(struct api_req *r);
enum MHD_Result api_stacks_lineage(struct api_req *r);

#endif
