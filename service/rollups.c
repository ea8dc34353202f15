/* rollups.c — see rollups.h. */
#include "service/rollups.h"

#include "common/log.h"
#include "db/work_reports.h"
#include "service/periodic.h"

static struct svc_periodic loop = SVC_PERIODIC_INIT;

static enum db_status settle_fn(struct db_conn *c, void *arg)
{
    return db_wr_rollups_settle(c, arg);
}

enum db_status svc_rollups_settle(void)
{
    long reports = 0;
    enum db_status s = db_run_tx(settle_fn, &reports);
    if (s < 0)
        log_msg(LOG_WARN, "work report rollups: the settle failed (database error %d)", (int)s);
    return s;
}

static void rollup_pass(void *arg)
{
    (void)arg;
    svc_rollups_settle();
}

int svc_rollups_start(int interval_ms)
{
    if (interval_ms <= 0 || interval_ms > 3600000)
        return -1;
    return svc_periodic_start(&loop, interval_ms, rollup_pass, NULL);
}

void svc_rollups_stop(void)
{
    svc_periodic_stop(&loop);
}
