/* rollups.h — the work reports' rollups kept current (migrations/0045). An INSERT of work
 * reports only records which reports it added; the hour, quarter, day and week rollups
 * get them when the rollups are settled:
 *
 *   - before every read of the rollups: svc_rollups_settle() in a transaction of its own,
 *     so a read counts every report committed before it started (the cost report, the
 *     recommendations and the idle policy, placement, bottlenecks, budgets, rollout
 *     costs). A reader whose settle fails fails as well: it never answers from rollups
 *     that may lack reports;
 *   - and by the rollup pass (svc_rollups_start: one thread in `serve` and `worker`,
 *     every GPUFLEET_ROLLUP_INTERVAL_MS), which keeps the backlog, and so what a reader
 *     pays, small.
 *
 * Settles run one at a time across every process (an advisory lock in the database). */
#ifndef GPUFLEET_SERVICE_ROLLUPS_H
#define GPUFLEET_SERVICE_ROLLUPS_H

#include "db/db.h"

/* Adds every pending report to the rollups, in its own transaction (inside the request
 * transaction, under a savepoint of it). DB_NO_RESULTS or DB_ONE_RESULT when the rollups
 * are current; a negative status when they may not be (the caller must not read them). */
enum db_status svc_rollups_settle(void);

/* interval_ms in 1..3600000. Returns 0, or -1 when the thread cannot start. */
int svc_rollups_start(int interval_ms);
void svc_rollups_stop(void);

#endif
