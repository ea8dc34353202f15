/* recommend.h — GET /v1/recommendations?action=&pool_id=&brief_id=&at=: stop, scale,
 * reuse and investigate recommendations (rules in planner/recommend.h). */
#ifndef GPUFLEET_API_RECOMMEND_H
#define GPUFLEET_API_RECOMMEND_H

#include "api/http.h"

enum MHD_Result api_recommendations(struct api_req *r);

/* The same recommendations as of at_us (µs since the epoch), read on c inside the
 * caller's transaction (the idle policy): appends every recommendation to all and the
 * hosts without usage data to no_usage, unfiltered. */
enum db_status api_recommend_in_tx(struct db_conn *c, int64_t at_us, json_t *all, json_t *no_usage);

#endif
