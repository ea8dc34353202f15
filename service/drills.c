/* drills.c — see drills.h. */
#include "service/drills.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "db/drills.h"
#include "service/host_commands.h"
#include "service/periodic.h"

#define DRILL_PICK_MAX 32

static struct svc_periodic loop = SVC_PERIODIC_INIT;

struct pass {
    int queued;
    char ids[DRILL_PICK_MAX][37];
    char jobs[DRILL_PICK_MAX][37];
};

static enum db_status pass_fn(struct db_conn *c, void *arg)
{
    struct pass *p = arg;
    int locked = 0, n = 0;
    p->queued = 0;
    enum db_status s = db_drill_lock(c, &locked);
    if (s < 0 || !locked)
        return s < 0 ? s : DB_NO_RESULTS;
    if ((s = db_drill_due(c, DRILL_PICK_MAX, p->ids, &n)) < 0)
        return s;
    for (int i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/hosts/%s/drills", p->ids[i]);
        struct actor who = actor_system(DRILL_SCHEDULER_PRINCIPAL, path, NULL);
        who.method = "POLICY";
        struct svc_host_cmd cmd = {.cmd = PLAN_CMD_DRILL, .who = &who, .host_id = p->ids[i]};
        s = svc_host_command(c, &cmd);
        free(cmd.doc);
        if (s < 0)
            return s;
        /* refused (the host changed since it was read): nothing queued, nothing written */
        if (cmd.refused == PLAN_CMD_OK)
            snprintf(p->jobs[p->queued++], 37, "%s", cmd.job_id);
    }
    return DB_ONE_RESULT;
}

int svc_drills_run_once(void)
{
    struct pass p;
    enum db_status s = db_run_tx(pass_fn, &p);
    if (s < 0) {
        log_msg(LOG_WARN, "drill scheduler: database error %d; retrying next interval", (int)s);
        return -1;
    }
    for (int i = 0; s == DB_ONE_RESULT && i < p.queued; i++)
        log_msg(LOG_INFO, "drill scheduler: queued drill job %s (pool drill.every_days due)",
                p.jobs[i]);
    return s == DB_ONE_RESULT ? p.queued : 0;
}

static void drill_pass(void *arg)
{
    (void)arg;
    svc_drills_run_once();
}

int svc_drills_start(int interval_s)
{
    if (interval_s <= 0 || interval_s > 2000000)
        return -1;
    return svc_periodic_start(&loop, interval_s * 1000, drill_pass, NULL);
}

void svc_drills_stop(void)
{
    svc_periodic_stop(&loop);
}
