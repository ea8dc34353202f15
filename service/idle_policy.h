/* idle_policy.h — the auto_stop scheduler inside gpufleetd (issue 6, part 5).
 *
 * One thread, started by `serve` and `worker`. Every interval it opens a transaction,
 * takes pg_try_advisory_xact_lock (db/recommend.h) so that exactly one replica acts, and
 * if it got the lock computes the recommendations as GET /v1/recommendations does
 * (svc_recommend_in_tx, as of now). For each `stop` recommendation whose host's pool has
 * auto_stop: true, or whose project's monthly budget is exhausted with on_exhausted
 * stop_idle (project_spend, written by the budget pass: service/budget.h), it queues a
 * stop through the one host-command path with the reason "idle for N s (pool
 * idle_stop_after_seconds M); GPU utilization …" (preceded, for the budget, by the
 * project, its spend and budget), audited as host.stop by system:idle-policy (role
 * system). Hosts without usage data are never recommended for stopping, so never
 * stopped; a host with a queued or running job is left alone: running work is never
 * stopped. */
#ifndef GPUFLEET_SERVICE_IDLE_POLICY_H
#define GPUFLEET_SERVICE_IDLE_POLICY_H

#define IDLE_POLICY_PRINCIPAL "system:idle-policy"

/* interval_s > 0. Returns 0, or -1 when the thread cannot start. */
int idle_policy_start(int interval_s);
void idle_policy_stop(void);

/* One pass (exposed for tests): returns the number of stops queued, or -1 on a database
 * error. *locked is set to whether this pass held the lock. */
int idle_policy_run_once(int *locked);

#endif
