/* usage.h — the decoding shared by the cost report (db/costs.c) and the recommendations
 * (db/recommend.c), internal to db/: hosts with their pools' prices, and work reports
 * summed per host, brief and unit, read by column name into the rows of common/usage.h
 * (what planner/costs.h prices). The SQL fragments they share are in usage_sql.h. */
#ifndef GPUFLEET_DB_USAGE_H
#define GPUFLEET_DB_USAGE_H

#include <stddef.h>

#include <libpq-fe.h>

#include "common/usage.h"

/* The columns of a hosts result: id, name, pool_id, pool_name, project_id, project_name
 * and the pool's prices hour, storage, egress and overhead (USAGE_POOL_PRICES), resolved
 * once per result. */
enum {
    DB_HOST_ID,
    DB_HOST_NAME,
    DB_HOST_POOL_ID,
    DB_HOST_POOL_NAME,
    DB_HOST_PROJECT_ID,
    DB_HOST_PROJECT_NAME,
    DB_HOST_HOUR,
    DB_HOST_STORAGE,
    DB_HOST_EGRESS,
    DB_HOST_OVERHEAD,
    DB_HOST_NCOLS
};
void db_usage_host_cols(const PGresult *r, int cols[DB_HOST_NCOLS]);
/* Row i as a host of the cost arithmetic (held_seconds 0: the caller reads its own). */
void db_usage_host(const PGresult *r, const int cols[DB_HOST_NCOLS], int i, struct usage_host *out);

/* The columns of a usage result: host_id, brief_id, brief_name, unit, reports, completed,
 * failed, retried, busy, covered, sgs, ss, bytes. */
enum {
    DB_USE_HOST_ID,
    DB_USE_BRIEF_ID,
    DB_USE_BRIEF_NAME,
    DB_USE_UNIT,
    DB_USE_REPORTS,
    DB_USE_COMPLETED,
    DB_USE_FAILED,
    DB_USE_RETRIED,
    DB_USE_BUSY,
    DB_USE_COVERED,
    DB_USE_SGS,
    DB_USE_SS,
    DB_USE_BYTES,
    DB_USE_NCOLS
};
void db_usage_cols(const PGresult *r, int cols[DB_USE_NCOLS]);
/* Row i as a row of the cost arithmetic. out->host is the index of its host in hosts
 * (nh of them), or DB_NO_HOST when that host is not among them (deleted meanwhile): the
 * rows and the hosts are both sorted by host id, and *pos (0 for the first row) is the
 * position of the merge. Returns the row's host id. */
const char *db_usage_row(const PGresult *r, const int cols[DB_USE_NCOLS], int i,
                         const struct usage_host *hosts, size_t nh, size_t *pos,
                         struct usage_row *out);

/* The failure class columns fl_<class> (enum order), fl_reports and fl_units of r (-1 for
 * a column r lacks: its figure reads 0; usage_sql.h: USAGE_FAIL_SUMS), and row i's. */
void db_usage_failure_cols(const PGresult *r, int cols[USAGE_FAIL_COUNT + 2]);
void db_usage_failures(const PGresult *r, const int cols[USAGE_FAIL_COUNT + 2], int i,
                       struct usage_failures *out);

#endif
