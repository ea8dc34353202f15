/* drills.h — restore drills (migrations/0034_drills.sql, docs/hosts-and-gates.md "Restore
 * drills"): the finished drills, the pool's drill settings a POST checks, and the drills
 * the scheduler (service/drills.c) finds due. */
#ifndef GPUFLEET_DB_DRILLS_H
#define GPUFLEET_DB_DRILLS_H

#include "db/db.h"

struct db_drill_new {
    const char *host_id, *pool_id, *job_id, *stack_id, *verdict, *reason, *steps_json,
        *started_at; /* started_at: RFC 3339 */
    /* seconds; < 0: not reached (NULL) */
    double restore_s, start_s, first_work_s, recovery_s, max_recovery_s;
    long long bytes_restored;
};
enum db_status db_drill_insert(struct db_conn *c, const struct db_drill_new *d, char id[37]);
/* scope: a uuid[] literal or NULL (every project); another project's drill is
 * DB_NO_RESULTS, as one that does not exist. */
enum db_status db_drill_get(struct db_conn *c, const char *id, const char *scope, char **doc);
struct db_drill_filter {
    const char *host_id, *verdict, *after_seq;
    long limit;
    const char *scope, *project_id;
    const char *pool_id; /* NULL: every pool */
};
enum db_status db_drill_list(struct db_conn *c, const struct db_drill_filter *f,
                             struct db_page *page);

/* What a drill request needs of the host's pool, in scope: *durable (its spec has
 * durable_state.artifacts), *workload (its gate defines a workload). DB_NO_RESULTS: no such
 * host in scope. */
enum db_status db_drill_pool_ready(struct db_conn *c, const char *host_id, const char *scope,
                                   int *durable, int *workload);

/* The scheduler's pick: per pool whose spec sets drill.every_days, has durable_state and a
 * gate workload, with no drill job queued or running in the pool, and whose newest drill
 * is older than every_days (or none): ONE drained host with no active job (the one whose
 * newest drill is oldest). Up to max rows; host ids into ids (37 bytes each). */
enum db_status db_drill_due(struct db_conn *c, int max, char (*ids)[37], int *n);

/* The scheduler's transaction-scoped advisory lock: *locked when this replica acts. */
enum db_status db_drill_lock(struct db_conn *c, int *locked);

#endif
