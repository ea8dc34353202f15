/* briefs.h — /v1/briefs. */
#ifndef GPUFLEET_API_BRIEFS_H
#define GPUFLEET_API_BRIEFS_H

#include "api/http.h"

enum MHD_Result api_briefs_create(struct api_req *r);
enum MHD_Result api_briefs_list(struct api_req *r);
enum MHD_Result api_briefs_get(struct api_req *r);
enum MHD_Result api_briefs_replace(struct api_req *r);
enum MHD_Result api_briefs_delete(struct api_req *r);

/* The brief field spec, then the planner's cross-field rules. Returns 0, or -1 after
 * replying 400. */
int api_brief_check(struct api_req *r, const json_t *body);
/* The {id} path parameter when it is a UUID; otherwise replies 404 and returns NULL. */
const char *api_brief_id(struct api_req *r);

#endif
