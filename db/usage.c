/* usage.c — see usage.h. */
#include "db/usage.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "db/costs.h"
#include "db/db_pg.h"

void db_usage_host_cols(const PGresult *r, int cols[DB_HOST_NCOLS])
{
    static const char *const names[DB_HOST_NCOLS] = {
        [DB_HOST_ID] = "id",
        [DB_HOST_NAME] = "name",
        [DB_HOST_POOL_ID] = "pool_id",
        [DB_HOST_POOL_NAME] = "pool_name",
        [DB_HOST_PROJECT_ID] = "project_id",
        [DB_HOST_PROJECT_NAME] = "project_name",
        [DB_HOST_HOUR] = "hour",
        [DB_HOST_STORAGE] = "storage",
        [DB_HOST_EGRESS] = "egress",
        [DB_HOST_OVERHEAD] = "overhead",
    };
    db_cols(r, names, DB_HOST_NCOLS, cols);
}

void db_usage_host(const PGresult *r, const int cols[DB_HOST_NCOLS], int i, struct usage_host *out)
{
    out->id = db_val(r, i, cols[DB_HOST_ID]);
    out->name = db_val(r, i, cols[DB_HOST_NAME]);
    out->pool_id = db_val(r, i, cols[DB_HOST_POOL_ID]);
    out->pool_name = db_val(r, i, cols[DB_HOST_POOL_NAME]);
    out->project_id = db_val(r, i, cols[DB_HOST_PROJECT_ID]);
    out->project_name = db_val(r, i, cols[DB_HOST_PROJECT_NAME]);
    out->prices = (struct usage_prices){
        db_val_num(r, i, cols[DB_HOST_HOUR]), db_val_num(r, i, cols[DB_HOST_STORAGE]),
        db_val_num(r, i, cols[DB_HOST_EGRESS]), db_val_num(r, i, cols[DB_HOST_OVERHEAD])};
    out->held_seconds = 0;
}

void db_usage_cols(const PGresult *r, int cols[DB_USE_NCOLS])
{
    static const char *const names[DB_USE_NCOLS] = {
        [DB_USE_HOST_ID] = "host_id",
        [DB_USE_BRIEF_ID] = "brief_id",
        [DB_USE_BRIEF_NAME] = "brief_name",
        [DB_USE_UNIT] = "unit",
        [DB_USE_REPORTS] = "reports",
        [DB_USE_COMPLETED] = "completed",
        [DB_USE_FAILED] = "failed",
        [DB_USE_RETRIED] = "retried",
        [DB_USE_BUSY] = "busy",
        [DB_USE_COVERED] = "covered",
        [DB_USE_SGS] = "sgs",
        [DB_USE_SS] = "ss",
        [DB_USE_BYTES] = "bytes",
    };
    db_cols(r, names, DB_USE_NCOLS, cols);
}

const char *db_usage_row(const PGresult *r, const int cols[DB_USE_NCOLS], int i,
                         const struct usage_host *hosts, size_t nh, size_t *pos,
                         struct usage_row *out)
{
    const char *host_id = PQgetvalue(r, i, cols[DB_USE_HOST_ID]);
    while (*pos < nh && strcmp(hosts[*pos].id, host_id) < 0)
        (*pos)++;
    out->host = *pos < nh && strcmp(hosts[*pos].id, host_id) == 0 ? *pos : DB_NO_HOST;
    out->brief_id = db_val(r, i, cols[DB_USE_BRIEF_ID]);
    out->brief_name = db_val(r, i, cols[DB_USE_BRIEF_NAME]);
    out->unit = util_lookup(usage_unit_names, PQgetvalue(r, i, cols[DB_USE_UNIT]));
    out->reports = db_val_long(r, i, cols[DB_USE_REPORTS]);
    out->completed = db_val_num(r, i, cols[DB_USE_COMPLETED]);
    out->failed = db_val_num(r, i, cols[DB_USE_FAILED]);
    out->retried = db_val_num(r, i, cols[DB_USE_RETRIED]);
    out->busy_seconds = db_val_num(r, i, cols[DB_USE_BUSY]);
    out->covered_seconds = db_val_num(r, i, cols[DB_USE_COVERED]);
    out->storage_gb_seconds = db_val_num(r, i, cols[DB_USE_SGS]);
    out->storage_seconds = db_val_num(r, i, cols[DB_USE_SS]);
    out->bytes_moved = db_val_num(r, i, cols[DB_USE_BYTES]);
    return host_id;
}

void db_usage_failure_cols(const PGresult *r, int cols[USAGE_FAIL_COUNT + 2])
{
    char name[32];
    for (int k = 0; k < USAGE_FAIL_COUNT; k++) {
        snprintf(name, sizeof name, "fl_%s", usage_failure_names[k]);
        cols[k] = PQfnumber(r, name);
    }
    cols[USAGE_FAIL_COUNT] = PQfnumber(r, "fl_reports");
    cols[USAGE_FAIL_COUNT + 1] = PQfnumber(r, "fl_units");
}

void db_usage_failures(const PGresult *r, const int cols[USAGE_FAIL_COUNT + 2], int i,
                       struct usage_failures *out)
{
    for (int k = 0; k < USAGE_FAIL_COUNT; k++)
        out->units[k] = cols[k] < 0 ? 0 : db_val_num(r, i, cols[k]);
    int n = USAGE_FAIL_COUNT;
    out->reports = cols[n] < 0 ? 0 : db_val_long(r, i, cols[n]);
    out->of_units = cols[n + 1] < 0 ? 0 : db_val_num(r, i, cols[n + 1]);
}
