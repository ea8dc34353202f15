/* costs.h — what the cost report reads: held seconds per host (from host_state_history)
 * and work reports summed per host, brief and unit, for a window [from, to). */
#ifndef GPUFLEET_DB_COSTS_H
#define GPUFLEET_DB_COSTS_H

#include "db/db.h"

extern const struct db_stmt db_cost_stmts[];
extern const size_t db_cost_nstmts;

/* Every host, ordered by id (the caller leaves out those neither held nor reporting in
 * the window: cheaper than asking the reports which hosts they name): columns id, name,
 * pool_id, pool_name, price_per_hour, storage_price_per_gb_month, egress_price_per_gb,
 * overhead_pct, held_seconds. Held time: every state except stopped, from the last
 * change before `from` on, never past now(). *res is the caller's to PQclear. */
enum db_status db_cost_hosts(struct db_conn *c, const char *from, const char *to,
                             PGresult **res);
/* Reports whose window_start lies in [from, to), summed per host, brief and unit (from the
 * week, day, quarter and hour rollups for the whole ones in the window), ordered
 * by host id then brief id: columns host_id, brief_id, brief_name, unit, reports,
 * completed, failed, retried, busy_seconds, covered_seconds, storage_gb_seconds,
 * storage_seconds, bytes_moved. */
enum db_status db_cost_reports(struct db_conn *c, const char *from, const char *to,
                               PGresult **res);

#endif
