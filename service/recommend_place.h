/* recommend_place.h — the rightsize recommendations in the recommendations pass
 * (planner/recommend_place.h decides; service/placement.h prices). Read on a connection
 * of its own beside the recommendations' other reads (service/recommend.c). */
#ifndef GPUFLEET_SVC_RECOMMEND_PLACE_H
#define GPUFLEET_SVC_RECOMMEND_PLACE_H

#include <jansson.h>
#include <stdint.h>

#include "db/db.h"

/* For each brief that has work reports in the pass's two days (those a usage row of
 * db/recommend.h names: db_rec_briefs_ran), its placement over [at − 30 days, at) on c;
 * appends each rightsize recommendation to out (each with its brief's project). */
enum db_status svc_rec_place_read(struct db_conn *c, int64_t at_us, json_t *out);

#endif
