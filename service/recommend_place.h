/* recommend_place.h — the rightsize recommendations in the recommendations pass
 * (planner/recommend_place.h decides; service/placement.h prices). Read inside the
 * recommendations' read transaction (service/recommend.c). */
#ifndef GPUFLEET_SVC_RECOMMEND_PLACE_H
#define GPUFLEET_SVC_RECOMMEND_PLACE_H

#include <jansson.h>
#include <stdint.h>

#include "db/recommend.h"

/* For each brief of in that has work reports in the pass's day (a usage row names it),
 * its placement over [at − 30 days, at) on c; appends each rightsize recommendation to
 * out (each with its brief's project). */
enum db_status svc_rec_place_read(struct db_conn *c, int64_t at_us, const struct db_rec_input *in,
                                  json_t *out);

#endif
