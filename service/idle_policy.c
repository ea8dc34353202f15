/* idle_policy.c — see idle_policy.h. */
#include "service/idle_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "db/recommend.h"
#include "service/host_commands.h"
#include "service/periodic.h"
#include "service/recommend.h"
#include "service/rollups.h"

static struct svc_periodic loop = SVC_PERIODIC_INIT;

struct pass {
    int locked, queued;
    long opened, withdrawn;
    size_t items; /* the pass's recommendations */
    json_t *done; /* [{host_id, job_id, reason}] of the committed pass, for the log */
};

/* The policy's stop, through the one host-command path (a system actor, audited as
 * POLICY): DB_NO_RESULTS when refused (busy, stopped, no command). */
static enum db_status stop_idle(struct db_conn *c, const char *host, const char *reason,
                                char job[37])
{
    char path[96];
    snprintf(path, sizeof path, "/v1/hosts/%s/stop", host);
    struct actor who = actor_system(IDLE_POLICY_PRINCIPAL, path, NULL);
    who.method = "POLICY";
    struct svc_host_cmd cmd = {
        .cmd = PLAN_CMD_STOP, .who = &who, .host_id = host, .reason = reason};
    enum db_status s = svc_host_command(c, &cmd);
    free(cmd.doc);
    if (s < 0 || cmd.refused != PLAN_CMD_OK)
        return s < 0 ? s : DB_NO_RESULTS;
    snprintf(job, 37, "%s", cmd.job_id);
    return DB_ONE_RESULT;
}

/* The stop's reason: both signals of the recommendation (planner/recommend.c stops
 * nothing without them: no useful work reported, and GPU utilization sampled low), and,
 * when the pool does not have auto_stop, the exhausted budget that stops it. */
static void stop_reason(const json_t *rec, const struct db_idle_host *why, char *out, size_t n)
{
    const json_t *ev = json_object_get(rec, "evidence");
    const json_t *gpu = json_object_get(ev, "gpu_utilization");
    int k = 0;
    if (!why->auto_stop)
        k = snprintf(out, n,
                     "project %s's monthly budget is exhausted (spend %.2f of %.2f; "
                     "on_exhausted stop_idle); ",
                     why->project, why->spend, why->budget);
    if (k < 0 || (size_t)k >= n)
        k = 0;
    snprintf(out + k, n - (size_t)k,
             "idle for %.0f s (pool idle_stop_after_seconds %.0f); GPU utilization at most "
             "%.4g%% (under %.4g%%) over %.4g%% of the window",
             json_number_value(json_object_get(ev, "idle_seconds")),
             json_number_value(json_object_get(ev, "idle_stop_after_seconds")),
             json_number_value(json_object_get(gpu, "max_pct")),
             json_number_value(json_object_get(gpu, "threshold_pct")),
             json_number_value(json_object_get(gpu, "coverage_pct")));
}

static enum db_status pass_fn(struct db_conn *c, void *arg)
{
    struct pass *p = arg;
    p->locked = p->queued = 0;
    p->opened = p->withdrawn = 0;
    p->items = 0;
    json_array_clear(p->done);
    enum db_status s = db_idle_policy_lock(c, &p->locked);
    if (s < 0 || !p->locked)
        return s < 0 ? s : DB_NO_RESULTS;
    json_t *all = json_array();
    if (all == NULL)
        return DB_HARD_ERROR;
    /* no no_usage list: the policy never reads it (10,000 entries at 10,000 hosts); malloc's
     * free pages handed back midway (the pass's RSS peak, issue 28 item 7) */
    s = svc_recommend_in_tx(c, util_now_us(), 1, all, NULL);
    p->items = json_array_size(all);
    if (s >= 0) {
        /* The stream's recommendation.opened / .withdrawn: this pass against the last. */
        char *text = json_dumps(all, JSON_COMPACT | JSON_REAL_PRECISION(15));
        s = text ? db_recommend_sync(c, text, &p->opened, &p->withdrawn) : DB_HARD_ERROR;
        free(text);
    }
    size_t i;
    json_t *it;
    json_array_foreach(all, i, it)
    {
        if (s < 0)
            break;
        if (strcmp(json_string_value(json_object_get(it, "action")), "stop") != 0)
            continue;
        const json_t *ids = json_object_get(json_object_get(it, "target"), "host_ids");
        const char *host = json_string_value(json_array_get(ids, 0));
        if (host == NULL)
            continue;
        struct db_idle_host why;
        s = db_idle_policy_host(c, host, &why);
        if (s < 0)
            break;
        if (!why.auto_stop && !why.budget_stop)
            continue;
        char reason[512], job[37] = "";
        stop_reason(it, &why, reason, sizeof reason);
        s = stop_idle(c, host, reason, job);
        if (s > 0) {
            p->queued++;
            json_array_append_new(p->done, json_pack("{s:s,s:s,s:s}", "host_id", host, "job_id",
                                                     job, "reason", reason));
        }
    }
    json_decref(all);
    return s < 0 ? s : DB_ONE_RESULT;
}

int idle_policy_run_once(int *locked)
{
    struct pass p = {.done = json_array()};
    if (p.done == NULL)
        return -1;
    enum db_status s = svc_rollups_run_tx(pass_fn, &p); /* the recommendations' reads */
    if (locked)
        *locked = p.locked;
    if (s < 0) {
        json_decref(p.done);
        log_msg(LOG_WARN, "idle policy: database error %d; retrying next interval", (int)s);
        return -1;
    }
    size_t i;
    json_t *it;
    json_array_foreach(p.done, i, it)
    {
        json_t *line =
            json_pack("{s:s,s:s,s:O,s:O,s:O}", "msg", "idle policy stopped a host", "principal",
                      IDLE_POLICY_PRINCIPAL, "host_id", json_object_get(it, "host_id"), "job_id",
                      json_object_get(it, "job_id"), "reason", json_object_get(it, "reason"));
        log_json_steal(LOG_INFO, line);
    }
    json_decref(p.done);
    if (p.opened > 0 || p.withdrawn > 0)
        log_msg(LOG_INFO, "idle policy: %ld recommendations opened, %ld withdrawn", p.opened,
                p.withdrawn);
    log_msg(LOG_DEBUG, "idle policy: pass over %zu recommendations, %d stops queued", p.items,
            p.queued);
    return p.queued;
}

static void policy_pass(void *arg)
{
    (void)arg;
    idle_policy_run_once(NULL);
}

int idle_policy_start(int interval_s)
{
    if (interval_s <= 0 || interval_s > 2000000)
        return -1;
    return svc_periodic_start(&loop, interval_s * 1000, policy_pass, NULL);
}

void idle_policy_stop(void)
{
    svc_periodic_stop(&loop);
}
