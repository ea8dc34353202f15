/* rollout_create.h — creating a rollout, and pausing, resuming and aborting one
 * (docs/rollouts.md §2). Both run in the caller's transaction (which may be retried: the
 * results are reset first) and follow one path:
 *
 *   load     db/rollouts.h's typed reads, under the pool's (or the rollout's) row lock
 *   decide   planner/rollout_create.h: the hosts in scope and the skipped, the refusal
 *            in its order, the waves; or what the action does to the rollout's state
 *   write    db/rollouts.h: the rollout with its hosts and skipped; the new state
 *
 * A refusal changes nothing: it returns DB_NO_RESULTS with *refusal set and *detail the
 * members the problem document adds (caller owns; NULL when the refusal has none):
 *   PLAN_RO_ACTIVE           {rollout_id}
 *   PLAN_RO_NOTHING          {skipped: [{host_id, name, state, reason}]}
 *   PLAN_RO_DRIVER_MISMATCH  {driver_version (the stack's, or null), hosts: [{id, name,
 *                            driver_version|null}]} (the hosts in scope that differ)
 *   PLAN_RO_NO_BASELINE      {hosts: [{id, name}]} (the hosts in scope)
 *   PLAN_RO_CANARY_TOO_BIG   {in_scope}
 *   PLAN_RO_BAD_STATE        {state}
 * A database failure returns its status (the transaction must then roll back). */
#ifndef GPUFLEET_SVC_ROLLOUT_CREATE_H
#define GPUFLEET_SVC_ROLLOUT_CREATE_H

#include <jansson.h>

#include "db/db.h"
#include "db/rollouts.h"
#include "planner/rollout_create.h"

/* Creates the rollout in when the planner accepts it: DB_ONE_RESULT with its id in
 * id_out. Refusals: PLAN_RO_POOL_UNKNOWN (also a pool outside in->scope) …
 * PLAN_RO_CANARY_TOO_BIG; PLAN_RO_STACK_UNKNOWN also for a stack of another project than
 * the pool's (shared stacks serve every project). */
enum db_status svc_rollout_create(struct db_conn *c, const struct db_rollout_new *in,
                                  char id_out[37], enum plan_ro_refusal *refusal, json_t **detail);

/* Applies action to rollout id for actor (its subject; an abort records it with the
 * optional reason): DB_ONE_RESULT. scope: the projects whose pools' rollouts the caller may
 * control (a uuid[] literal, NULL: every project). Refusals: PLAN_RO_NOT_FOUND (also for a
 * rollout of another project), PLAN_RO_BAD_STATE. */
enum db_status svc_rollout_control(struct db_conn *c, const char *id, const char *scope,
                                   enum plan_ro_ctl action, const char *actor, const char *reason,
                                   enum plan_ro_refusal *refusal, json_t **detail);

#endif
