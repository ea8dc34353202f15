/* rollouts.h — stack rollouts in waves, the HTTP side (docs/rollouts.md §2): create one
 * on a pool, read and list them, pause, resume and abort. The checks and the waves are the
 * engine's (db/rollouts.h); the document is db/rollouts_read.h's. */
#ifndef GPUFLEET_API_ROLLOUTS_H
#define GPUFLEET_API_ROLLOUTS_H

#include <jansson.h>

#include "api/http.h"

/* max_unavailable as given: an integer 1..1000000 (*hosts set, *pct 0) or a string "N%"
 * with N an integer 1..100 without leading zeros (*pct set, *hosts 0). Returns 0, or -1
 * when v is neither. */
int api_rollout_max_unavailable(const json_t *v, int *hosts, int *pct);

/* POST /v1/pools/{id}/rollouts: 201 with the document and its Location; operator (force:
 * admin). */
enum MHD_Result api_pools_rollouts_create(struct api_req *r);
/* GET /v1/rollouts?pool=&state=: newest first, keyset cursor. */
enum MHD_Result api_rollouts_list(struct api_req *r);
/* GET /v1/rollouts/{id}: the document with its cost view. */
enum MHD_Result api_rollouts_get(struct api_req *r);
/* POST /v1/rollouts/{id}/pause | resume | abort, body {"reason"} optional: 200 with the
 * document; 409 rollout_state_conflict when the action does not apply. */
enum MHD_Result api_rollouts_pause(struct api_req *r);
enum MHD_Result api_rollouts_resume(struct api_req *r);
enum MHD_Result api_rollouts_abort(struct api_req *r);

#endif
