/* briefs.h — /v1/briefs and sizing (/v1/briefs/{id}/sizing, /v1/sizing). */
#ifndef GPUFLEET_API_BRIEFS_H
#define GPUFLEET_API_BRIEFS_H

#include "api/http.h"

enum MHD_Result api_briefs_create(struct api_req *r);
enum MHD_Result api_briefs_list(struct api_req *r);
enum MHD_Result api_briefs_get(struct api_req *r);
enum MHD_Result api_briefs_replace(struct api_req *r);
enum MHD_Result api_briefs_delete(struct api_req *r);
enum MHD_Result api_briefs_sizing(struct api_req *r);
enum MHD_Result api_sizing(struct api_req *r);

#endif
