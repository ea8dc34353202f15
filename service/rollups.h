/* rollups.h — the work reports' rollups kept current (migrations/0045). An INSERT of work
 * reports only records which reports it added; the hour, quarter, day and week rollups
 * get them when the rollups are settled:
 *
 *   - before every read of the rollups (svc_rollups_run_tx), in transactions of their own,
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

#include "common/sbuf.h"
#include "db/db.h"

/* What every reader of the rollups runs instead of db_run_tx: first every pending report
 * is added to the rollups, in transactions of its own of at most 50,000 reports each
 * (inside the request transaction, under savepoints of it); then fn runs in a transaction
 * (db_run_tx). When the rollups may lack a report committed before the call (a database
 * error, or DB_TIMEOUT when 1,000 settles did not empty the backlog) fn does not run and
 * that status is returned. */
enum db_status svc_rollups_run_tx(db_tx_fn fn, void *arg);

/* interval_ms in 1..3600000. Returns 0, or -1 when the thread cannot start. */
int svc_rollups_start(int interval_ms);
void svc_rollups_stop(void);

/* /metrics: this process's settled reports and failed settles, and the backlog (pending
 * reports, the oldest batch's age; left out when the database cannot be read). */
void svc_rollups_metrics(struct sbuf *b);

#endif
