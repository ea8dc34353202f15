/* recovery.h — the driver of automatic recoveries (planner/recovery.h, db/recovery.h).
 *
 * One thread per worker process (started beside the job workers: cmd/serve.c). Every
 * interval it lists the running recoveries not looked at in the last second and moves each
 * on in a transaction of its own: the recovery row is locked FOR UPDATE SKIP LOCKED, so
 * several worker processes share them without acting twice; the facts are read, the planner
 * decides, the driver applies (a state machine event with its history and audit, a job
 * queued, the next step, the end) and asks again until the answer is to wait. The steps'
 * jobs are ordinary durable jobs, claimed and run by any worker. A transition the state
 * machine refuses (the host changed meanwhile) ends the recovery failed, naming it. */
#ifndef GPUFLEET_SERVICE_RECOVERY_H
#define GPUFLEET_SERVICE_RECOVERY_H

/* interval_ms > 0. Returns 0, or -1 when the thread cannot start. */
int svc_recovery_start(int interval_ms);
void svc_recovery_stop(void);

/* One pass (exposed for tests): returns how many recoveries it looked at, or -1 on a
 * database error. */
int svc_recovery_run_once(void);

#endif
