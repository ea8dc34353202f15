/* rollout.h — the driver of stack rollouts (planner/rollout.h, db/rollouts.h).
 *
 * One thread per worker process (started beside the job workers, like the recovery
 * driver: cmd/serve.c). Every interval it lists the active rollouts not looked at in the
 * last second and moves each on in a transaction of its own: the rollout row is locked FOR UPDATE
 * SKIP LOCKED (several worker processes share the rollouts without acting twice), the
 * facts of the rollout and of every host are read from durable rows, the planner decides,
 * the driver applies (a state machine event with its history and audit by
 * rollout:<id>, a provision or gate job queued, a step, a wave, the rollback) and asks
 * again until the answer is to wait. The jobs are ordinary durable jobs that any worker
 * claims; after a kill -9 the next pass (of any worker process) picks the rollout up
 * from its rows. A transition the state machine refuses (the host changed meanwhile)
 * fails the rollout (or, rolling back, that host's rollback), naming it. */
#ifndef GPUFLEET_SERVICE_ROLLOUT_H
#define GPUFLEET_SERVICE_ROLLOUT_H

/* interval_ms > 0. Returns 0, or -1 when the thread cannot start. */
int svc_rollout_start(int interval_ms);
void svc_rollout_stop(void);

/* One pass (exposed for tests): how many rollouts it looked at, or -1 on a database
 * error. */
int svc_rollout_run_once(void);

/* The planner's view of a rollout's hosts (exposed for tests): an array of f->nhosts
 * (caller frees; NULL when out of memory) whose strings point into f. gate_ok is
 * plan_gate_covers_stack() of the host's accepted gate and its current stack. */
struct db_rollout_facts;
struct plan_ro_host;
struct plan_ro_host *svc_rollout_plan_hosts(const struct db_rollout_facts *f);

#endif
