/* stop.c — stopping a host: the checks and the queued stop job, shared by
 * POST /v1/hosts/{id}/stop (api/stop.c) and the idle policy (service/idle_policy.c). A
 * host with a queued or running job is refused unless force is set: that job then ends
 * at once (cancelled, superseded) and the stop is queued in the same transaction. The
 * job's params keep the reason, the principal, the command and the host's state at the
 * time (the worker returns the host to it if the stop fails). */
#include "service/stop.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/audit.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"
#include "provisioner/shell.h"

/* The host's active job (queued or running), from its last job. */
static enum db_status active_job(struct db_conn *c, struct svc_stop *a)
{
    char *doc = NULL;
    a->busy_job[0] = a->busy_state[0] = '\0';
    enum db_status s = db_host_get(c, a->id, &doc);
    if (s <= 0)
        return s;
    json_t *h = json_loads(doc, 0, NULL);
    free(doc);
    const json_t *lj = json_object_get(h, "last_job");
    const char *st = json_string_value(json_object_get(lj, "state"));
    const char *jid = json_string_value(json_object_get(lj, "id"));
    if (st && jid && (!strcmp(st, "queued") || !strcmp(st, "running"))) {
        snprintf(a->busy_job, sizeof a->busy_job, "%s", jid);
        snprintf(a->busy_state, sizeof a->busy_state, "%s", st);
    }
    json_decref(h);
    return DB_ONE_RESULT;
}

/* Checks and queues (or plans, on a dry run) the stop; the caller audits. */
enum db_status svc_stop_queue(struct db_conn *c, struct svc_stop *a)
{
    a->refused = SVC_STOP_OK;
    struct db_host_target t;
    enum db_status s = db_host_target(c, a->id, &t);
    if (s <= 0) {
        if (s == DB_NO_RESULTS)
            a->refused = SVC_STOP_NO_HOST;
        return s;
    }
    if (t.stop_command == NULL || !prov_valid_stop_command(t.stop_command))
        a->refused = SVC_STOP_NO_COMMAND;
    else if (plan_host_allows(t.state, t.held, HE_STOP_REQUESTED, PLAN_ACTOR_OPERATOR) !=
             PLAN_HOST_OK)
        a->refused = !strcmp(t.state, "stopped") ? SVC_STOP_STOPPED : SVC_STOP_BUSY;
    if (!a->refused) {
        s = active_job(c, a);
        if (s < 0) {
            db_host_target_free(&t);
            return s;
        }
        if (a->busy_job[0] && !a->force)
            a->refused = SVC_STOP_BUSY;
    }
    if (a->refused) {
        db_host_target_free(&t);
        return DB_NO_RESULTS;
    }
    if (a->dry_run) {
        json_t *plan = json_pack(
            "{s:b, s:{s:s, s:s, s:s, s:i, s:s, s:s}, s:s, s:s, s:s, s:o}", "dry_run", 1, "host",
            "id", t.id, "name", t.name, "address", t.address, "port", t.port, "user", t.user,
            "state", t.state, "pool_id", t.pool_id, "command", t.stop_command, "reason", a->reason,
            "cancels_job_id", a->busy_job[0] ? json_string(a->busy_job) : json_null());
        db_host_target_free(&t);
        a->doc =
            plan ? json_dumps(plan, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))
                 : NULL; /* as api_json_text renders answers */
        json_decref(plan);
        return a->doc ? DB_ONE_RESULT : DB_HARD_ERROR;
    }
    char superseded[37] = "";
    if (a->busy_job[0]) {
        char why[200];
        snprintf(why, sizeof why, "superseded by a forced stop requested by %s", a->principal);
        s = db_job_supersede(c, a->id, why, superseded);
        if (s < 0) {
            db_host_target_free(&t);
            return s;
        }
    }
    json_t *params = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o}", "reason", a->reason,
                               "requested_by", a->principal, "command", t.stop_command,
                               "previous_state", t.state, "force", a->force, "superseded_job_id",
                               superseded[0] ? json_string(superseded) : json_null());
    db_host_target_free(&t);
    char *ptext = params ? json_dumps(params, JSON_COMPACT) : NULL;
    json_decref(params);
    if (ptext == NULL)
        return DB_HARD_ERROR;
    s = db_job_create(c, "stop", a->id, NULL, ptext, a->principal, &a->doc, a->job_id);
    free(ptext);
    if (s == DB_HARD_ERROR && db_conn_unique_violation(c)) {
        a->refused = SVC_STOP_BUSY; /* a job was queued in between */
        return s;
    }
    return s;
}

enum db_status svc_stop_queue_system(struct db_conn *c, const char *host_id, const char *principal,
                                     const char *reason, char job_id[37])
{
    struct svc_stop a = {.principal = principal, .id = host_id, .reason = reason};
    enum db_status s = svc_stop_queue(c, &a);
    free(a.doc);
    if (s < 0 || a.refused)
        return s < 0 ? s : DB_NO_RESULTS;
    if (job_id != NULL)
        snprintf(job_id, 37, "%s", a.job_id);
    char path[96];
    snprintf(path, sizeof path, "/v1/hosts/%s/stop", host_id);
    struct db_audit_event ev = {principal, "system", "host.stop",
                                "host",    host_id,  "POLICY",
                                path,      a.job_id, 202 /* Accepted, as the API answers a stop */,
                                reason};
    s = db_audit_insert(c, &ev);
    return s < 0 ? s : DB_ONE_RESULT;
}
