/* baselines.h — throughput baselines recorded with their conditions (docs/rollouts.md §1,
 * db/baselines.h): the list and one baseline. They are recorded by accepted gate runs
 * with a workload and by work reports that name a baseline window, never written here. */
#ifndef GPUFLEET_API_BASELINES_H
#define GPUFLEET_API_BASELINES_H

#include "api/http.h"

/* GET /v1/baselines?pool=&stack=&gpu_model=&limit=&cursor=: newest first, keyset cursor;
 * pool and stack are ids (a malformed one is a 400), gpu_model the GPU name as recorded. */
enum MHD_Result api_baselines_list(struct api_req *r);
/* GET /v1/baselines/{id}. */
enum MHD_Result api_baselines_get(struct api_req *r);
/* GET /v1/gate-runs/{id}/baseline-comparison?stack=: the baseline the gate run recorded
 * compared with stack's baselines under the same conditions (svc_baseline_compare, as a
 * rollout compares them); 404 when the run is unknown or recorded no baseline. */
enum MHD_Result api_gate_runs_comparison(struct api_req *r);

#endif
