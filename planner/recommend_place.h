/* recommend_place.h — the rightsize recommendation (docs/placement.md). Pure: no I/O.
 *
 * Over the placement rows of a brief (planner/placement.h): the current option is the
 * measured pool where the brief completed most units. A rightsize is recommended when
 *   - the current pool has at least min_days (rightsize_min_days, default 7) distinct
 *     UTC days of the brief's reports in the window, and a cost per completed unit;
 *   - another option costs less than current × (1 − margin_pct ÷ 100) (margin
 *     rightsize_margin_pct, default 20; strictly), and that option is either a measured
 *     pool with min_days of reports itself, or a declared api price. Estimates (pools the
 *     brief never ran on, on-demand and reserved capacity priced from throughput) never
 *     trigger one on their own.
 * The cheapest such option is named. Its evidence shows both sides. */
#ifndef GPUFLEET_RECOMMEND_PLACE_H
#define GPUFLEET_RECOMMEND_PLACE_H

#include <jansson.h>
#include <stddef.h>

#include "planner/placement.h"

/* The recommendation (schema Recommendation, action rightsize, rule rightsize; project
 * left to the caller), or NULL when none applies (or out of memory: *oom set). */
json_t *plan_rec_rightsize(const struct plan_place_brief *b, const struct plan_place_row *rows,
                           size_t n, const char *brief_id, const char *brief_name, int *oom);

#endif
