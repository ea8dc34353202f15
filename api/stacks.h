/* stacks.h — /v1/stacks: pinned software stacks (immutable: no PUT or DELETE; PATCH
 * changes only whether the stack is shared with every project, by a platform admin). */
#ifndef GPUFLEET_API_STACKS_H
#define GPUFLEET_API_STACKS_H

#include "api/http.h"

enum MHD_Result api_stacks_create(struct api_req *r);
enum MHD_Result api_stacks_list(struct api_req *r);
enum MHD_Result api_stacks_get(struct api_req *r);
enum MHD_Result api_stacks_lineage(struct api_req *r);
enum MHD_Result api_stacks_patch(struct api_req *r);

#endif
