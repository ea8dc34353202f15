/* placement.h — the placement of one brief (GET /v1/briefs/{id}/placement,
 * docs/placement.md): reads the brief's project's pools, the cost report's input over the
 * window (of the hosts that ran the brief), the brief's reports per pool and the baselines, sizes
 * the brief against each pool's GPU model, and lets planner/placement.h price every option and
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
/* The same; with cost_out not NULL, the cost input it read (of the hosts that ran the
 * brief in the window, db_cost_read_brief) is handed over to *cost_out (start it zeroed;
 * the caller frees it with db_cost_input_free) when the document is returned. */
json_t *svc_placement_with(struct db_conn *c, const json_t *brief, const char *from, const char *to,
                           struct db_cost_input *cost_out, enum db_status *status);

#endif
