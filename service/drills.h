/* drills.h — the restore drill scheduler (docs/hosts-and-gates.md "Restore drills").
 *
 * One thread per replica, one pass every GPUFLEET_IDLE_POLICY_INTERVAL seconds (as the
 * idle policy); an advisory lock picks the replica that acts. A pass queues, for each pool
 * whose drill.every_days is due (its newest drill is older, or it has none) and that has no
 * drill queued or running, a drill on ONE drained host of the pool with no active job,
 * through the one host-command path (PLAN_CMD_DRILL: drained hosts only), audited by
 * system:drill-scheduler. A host doing work (any state but drained) is never picked. */
#ifndef GPUFLEET_SERVICE_DRILLS_H
#define GPUFLEET_SERVICE_DRILLS_H

#define DRILL_SCHEDULER_PRINCIPAL "system:drill-scheduler"

/* interval_s > 0. Returns 0, or -1 when the thread cannot start. */
int svc_drills_start(int interval_s);
void svc_drills_stop(void);
/* One pass: the number of drills queued, or -1 on a database error. */
int svc_drills_run_once(void);

#endif
