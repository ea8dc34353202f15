/* recommend.h — GET /v1/recommendations?action=&pool_id=&brief_id=&at=: stop, scale,
 * reuse and investigate recommendations (rules in planner/recommend.h). */
#ifndef GPUFLEET_API_RECOMMEND_H
#define GPUFLEET_API_RECOMMEND_H

#include "api/http.h"

enum MHD_Result api_recommendations(struct api_req *r);

#endif
