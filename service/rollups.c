/* rollups.c — see rollups.h. */
#include "service/rollups.h"

#include <stdatomic.h>

#include "common/log.h"
#include "db/work_reports.h"
#include "service/periodic.h"

/* Reports one settle adds at most (about 1.5 s of PostgreSQL on a 2-core machine, far
 * inside the default 15 s statement timeout), and the settles one call runs at most before
 * it gives up (50 million reports: ingestion outrunning the settles for that long). */
#define SETTLE_MAX    50000
#define SETTLE_ROUNDS 1000

static struct svc_periodic loop = SVC_PERIODIC_INIT;
/* This process's settles (readers' and the pass's): reports added, settles that failed. */
static atomic_long settled_total;
static atomic_long failures_total;

struct settle {
    long settled, remaining;
};

static enum db_status settle_fn(struct db_conn *c, void *arg)
{
    struct settle *t = arg;
    return db_wr_rollups_settle(c, SETTLE_MAX, &t->settled, &t->remaining);
}

/* Every pending report into the rollups: settles until none is left (rollups.h). */
static enum db_status settle_all(void)
{
    struct settle t = {0, 0};
    long total = 0;
    for (int round = 0; round < SETTLE_ROUNDS; round++) {
        enum db_status s = db_run_tx(settle_fn, &t);
        if (s < 0) {
            atomic_fetch_add(&failures_total, 1);
            log_msg(LOG_WARN, "work report rollups: the settle failed (database error %d)", (int)s);
            return s;
        }
        total += t.settled;
        atomic_fetch_add(&settled_total, t.settled);
        if (t.remaining == 0) {
            if (round > 0)
                log_msg(LOG_INFO, "work report rollups: %ld reports settled in %d settles", total,
                        round + 1);
            return s;
        }
    }
    log_msg(LOG_WARN,
            "work report rollups: still %ld reports pending after %d settles (%ld reports)",
            t.remaining, SETTLE_ROUNDS, total);
    return DB_TIMEOUT; /* the rollups are not current: the read must not go on */
}

enum db_status svc_rollups_run_tx(db_tx_fn fn, void *arg)
{
    enum db_status s = settle_all();
    return s < 0 ? s : db_run_tx(fn, arg);
}

static void rollup_pass(void *arg)
{
    (void)arg;
    settle_all();
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

struct backlog {
    long reports;
    double age_s;
};

static enum db_status backlog_fn(struct db_conn *c, void *arg)
{
    struct backlog *b = arg;
    return db_wr_rollups_backlog(c, &b->reports, &b->age_s);
}

void svc_rollups_metrics(struct sbuf *b)
{
    sbuf_printf(b,
                "# HELP gpufleet_work_report_rollup_settled_total Work reports this process added "
                "to the rollups (its readers' settles and its rollup pass).\n"
                "# TYPE gpufleet_work_report_rollup_settled_total counter\n"
                "gpufleet_work_report_rollup_settled_total %ld\n"
                "# HELP gpufleet_work_report_rollup_settle_failures_total Settles of this process "
                "that failed (the read that ran it failed too).\n"
                "# TYPE gpufleet_work_report_rollup_settle_failures_total counter\n"
                "gpufleet_work_report_rollup_settle_failures_total %ld\n",
                atomic_load(&settled_total), atomic_load(&failures_total));
    struct backlog k = {0, 0};
    enum db_status s = db_run(backlog_fn, &k);
    if (s < 0) { /* unknown, not zero: the two gauges are left out of this scrape */
        log_msg(LOG_WARN, "metrics: the rollups' backlog read failed (database status %d)", (int)s);
        return;
    }
    sbuf_printf(b,
                "# HELP gpufleet_work_report_rollup_pending_reports Work reports inserted but not "
                "yet added to the rollups (every reader settles them first).\n"
                "# TYPE gpufleet_work_report_rollup_pending_reports gauge\n"
                "gpufleet_work_report_rollup_pending_reports %ld\n"
                "# HELP gpufleet_work_report_rollup_pending_age_seconds Age of the oldest pending "
                "batch (0 when none is pending).\n"
                "# TYPE gpufleet_work_report_rollup_pending_age_seconds gauge\n"
                "gpufleet_work_report_rollup_pending_age_seconds %.3f\n",
                k.reports, k.age_s);
}
