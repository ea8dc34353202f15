/* costs.h — what the cost report reads: held seconds per host (from host_state_history)
 * and work reports summed per host, brief and unit, for a window [from, to). */
#ifndef GPUFLEET_DB_COSTS_H
#define GPUFLEET_DB_COSTS_H

#include <stddef.h>

#include "common/usage.h"
#include "db/db.h"

/* What the cost report reads for a window [from, to), as the inputs of plan_costs_group:
 *   hosts  every host (of the projects asked for), ordered by id, with its pool's prices,
 *          its project and the seconds it was held
 *          in the window (the planner leaves out those neither held nor reporting:
 *          cheaper than asking the reports which hosts they name). Held time: every state
 *          except stopped, from the last change before from on, never past now().
 *   rows   the reports whose window_start lies in [from, to), summed per host, brief and
 *          unit (from the week, day, quarter and hour rollups for the whole ones in the
 *          window), ordered by host id then brief id; row.host indexes hosts (the rows of
 *          a host not in hosts, deleted meanwhile, are left out).
 * The strings borrow from the results, which the struct owns (res: opaque outside db/).
 * Start it zeroed; db_cost_read frees what it held first, and on failure leaves it
 * empty; db_cost_input_free frees it and leaves it zeroed. */
struct db_cost_input {
    size_t nhosts, nrows;
    struct usage_host *hosts;
    struct usage_row *rows;
    void *res[2];
};
/* projects: a uuid[] literal of the projects whose hosts are read, or NULL for every
 * host. */
enum db_status db_cost_read(struct db_conn *c, const char *from, const char *to,
                            const char *projects, struct db_cost_input *in);
/* The placement's cost input of brief_id in project_id: the hosts of hosts (the uuid[]
 * literal place_pools gives, "{}" for none) with their held time, and their reports' 9
 * usage sums per brief and unit (no phases, no failure classes: the placement does not
 * price them), the hosts of the reports derived in SQL from the same day rollup as
 * place_pools (cost_reports_brief). db_cost_send_brief sends the reports' statement on
 * side, a second connection, before the caller reads place_pools on its own;
 * db_cost_read_brief then reads the hosts on c and receives the reports from side (side
 * NULL: it reads both on c). A side sent to is always received, whatever fails. */
enum db_status db_cost_send_brief(struct db_conn *side, const char *from, const char *to,
                                  const char *project_id, const char *brief_id);
enum db_status db_cost_read_brief(struct db_conn *c, struct db_conn *side, const char *from,
                                  const char *to, const char *project_id, const char *brief_id,
                                  const char *hosts, struct db_cost_input *in);
void db_cost_input_free(struct db_cost_input *in);

/* A usage row whose host is not among the hosts read with it (db/recommend.h). */
#define DB_NO_HOST ((size_t)-1)

#endif
