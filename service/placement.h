/* placement.h — the placement of one brief (GET /v1/briefs/{id}/placement,
 * docs/placement.md): reads the brief's project's pools, the cost report's input over the
 * window, the brief's reports per pool and the baselines, sizes the brief against each
 * pool's GPU model, and lets planner/placement.h price every option and
 * planner/recommend_place.h decide the rightsize recommendation. */
#ifndef GPUFLEET_SVC_PLACEMENT_H
#define GPUFLEET_SVC_PLACEMENT_H

#include <jansson.h>

#include "db/costs.h"
#include "db/db.h"

/* The default window: the last 30 days. */
#define SVC_PLACE_DEFAULT_WINDOW_S (30 * 86400.0)

/* The placement document of brief (a stored brief document, with id and project) over
 * [from, to): {brief_id, from, to, unit, demand, items, recommendation}. NULL with
 * *status set when a read failed (DB_HARD_ERROR also when out of memory). */
json_t *svc_placement(struct db_conn *c, const json_t *brief, const char *from, const char *to,
                      enum db_status *status);
/* The same with the cost report's input of the brief's project over [from, to) read
 * already (db_cost_read with the scope "{project id}"), or NULL to read it: the
 * recommendations pass reads it once per project. */
json_t *svc_placement_with(struct db_conn *c, const json_t *brief, const char *from, const char *to,
                           const struct db_cost_input *cost, enum db_status *status);

#endif
