/* stop.c — POST /v1/hosts/{id}/stop {reason, dry_run?, force?}: stop a host by running
 * its pool's stop_command over SSH, as a durable job of kind `stop`.
 *
 *   - operator or admin; `force` only for admin (403 insufficient_role otherwise);
 *   - the pool needs a stop_command (409 no_stop_command); a stopped host is refused
 *     (409 host_stopped);
 *   - a host with a queued or running job is refused (409 host_busy) unless an admin sets
 *     force: then that job ends at once (state cancelled, cancel_requested, error_class
 *     superseded — its worker is fenced out at its next write or heartbeat) and the stop
 *     is queued in the same transaction;
 *   - dry_run answers 200 with what would run (host, exact command, the job force would
 *     cancel) and queues, changes and audits nothing;
 *   - otherwise 202 with the job; the audit event host.stop carries the principal and the
 *     reason. The job's params keep the reason, the principal, the command and the host's
 *     state at the time (the worker returns the host to it if the stop fails). */
#include "api/stop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "db/audit.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"
#include "provisioner/shell.h"

static int valid_reason(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static const struct spec_field stop_spec[] = {
    {"reason", SPEC_STRING, SPEC_REQUIRED, 1, 500, valid_reason,
     "1-500 characters without control characters", NULL, NULL},
    {"dry_run", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL},
    {"force", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

enum stop_refusal { STOP_OK = 0, STOP_NO_HOST, STOP_NO_COMMAND, STOP_STOPPED, STOP_BUSY };

struct stop_arg {
    struct api_req *r;     /* NULL when the system acts (api_stop_queue_system) */
    const char *principal; /* who asks: the caller's sub, or the system's name */
    const char *id, *reason;
    int dry_run, force;
    enum stop_refusal refused;
    json_t *plan;     /* dry run answer */
    char *doc;        /* the queued job */
    char job_id[37];
    char busy_job[37];
    char busy_state[16];
};

/* The host's active job (queued or running), from its last job. */
static enum db_status active_job(struct db_conn *c, struct stop_arg *a)
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
static enum db_status stop_queue(struct db_conn *c, struct stop_arg *a)
{
    free(a->doc);
    a->doc = NULL;
    json_decref(a->plan);
    a->plan = NULL;
    a->refused = STOP_OK;
    struct db_host_target t;
    enum db_status s = db_host_target(c, a->id, &t);
    if (s <= 0) {
        if (s == DB_NO_RESULTS)
            a->refused = STOP_NO_HOST;
        return s;
    }
    if (t.stop_command == NULL || !prov_valid_stop_command(t.stop_command))
        a->refused = STOP_NO_COMMAND;
    else {
        enum plan_host_state to;
        unsigned fx;
        enum plan_host_answer ans =
            plan_host_next((enum plan_host_state)plan_host_state_parse(t.state), t.held,
                           HE_STOP_REQUESTED, -1, PLAN_ACTOR_OPERATOR, &to, &fx);
        if (ans != PLAN_HOST_OK)
            a->refused = !strcmp(t.state, "stopped") ? STOP_STOPPED : STOP_BUSY;
    }
    if (!a->refused) {
        s = active_job(c, a);
        if (s < 0) {
            db_host_target_free(&t);
            return s;
        }
        if (a->busy_job[0] && !a->force)
            a->refused = STOP_BUSY;
    }
    if (a->refused) {
        db_host_target_free(&t);
        return DB_NO_RESULTS;
    }
    if (a->dry_run) {
        a->plan = json_pack(
            "{s:b, s:{s:s, s:s, s:s, s:i, s:s, s:s}, s:s, s:s, s:s, s:o}", "dry_run", 1, "host",
            "id", t.id, "name", t.name, "address", t.address, "port", t.port, "user", t.user,
            "state", t.state, "pool_id", t.pool_id, "command", t.stop_command, "reason",
            a->reason, "cancels_job_id", a->busy_job[0] ? json_string(a->busy_job) : json_null());
        db_host_target_free(&t);
        return a->plan ? DB_ONE_RESULT : DB_HARD_ERROR;
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
        a->refused = STOP_BUSY; /* a job was queued in between */
        return s;
    }
    return s;
}

static enum db_status stop_fn(struct db_conn *c, void *arg)
{
    struct stop_arg *a = arg;
    enum db_status s = stop_queue(c, a);
    if (s < 0 || a->refused || a->dry_run)
        return s;
    return api_audit_reason(c, a->r, "host.stop", "host", a->id, MHD_HTTP_ACCEPTED, a->reason);
}

enum db_status api_stop_queue_system(struct db_conn *c, const char *host_id, const char *principal,
                                     const char *reason, char job_id[37])
{
    struct stop_arg a = {.principal = principal, .id = host_id, .reason = reason};
    enum db_status s = stop_queue(c, &a);
    free(a.doc);
    json_decref(a.plan);
    if (s < 0 || a.refused)
        return s < 0 ? s : DB_NO_RESULTS;
    if (job_id != NULL)
        snprintf(job_id, 37, "%s", a.job_id);
    char path[96];
    snprintf(path, sizeof path, "/v1/hosts/%s/stop", host_id);
    struct db_audit_event ev = {principal, "system", "host.stop", "host", host_id, "POLICY", path,
                                a.job_id, MHD_HTTP_ACCEPTED, reason};
    s = db_audit_insert(c, &ev);
    return s < 0 ? s : DB_ONE_RESULT;
}

static enum db_status denied_fn(struct db_conn *c, void *arg)
{
    struct stop_arg *a = arg;
    return api_audit_reason(c, a->r, "host.denied", "host", a->id, MHD_HTTP_FORBIDDEN, a->reason);
}

enum MHD_Result api_hosts_stop(struct api_req *r)
{
    const char *id = api_param(r, 0);
    if (!api_valid_uuid(id))
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    if (api_spec_check(r, r->json, stop_spec) != 0)
        return MHD_YES;
    struct stop_arg a = {.r = r,
                         .principal = r->principal.sub,
                         .id = id,
                         .reason = json_string_value(json_object_get(r->json, "reason")),
                         .dry_run = json_is_true(json_object_get(r->json, "dry_run")),
                         .force = json_is_true(json_object_get(r->json, "force"))};
    if (a.force && r->principal.role != ROLE_ADMIN) {
        enum MHD_Result ret = api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "force",
                                                "only an admin may force a stop");
        db_run_tx(denied_fn, &a); /* denied attempts are audited too */
        return ret;
    }
    enum db_status s = db_run_tx(stop_fn, &a);
    switch (a.refused) {
    case STOP_OK: break;
    case STOP_NO_HOST:
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    case STOP_NO_COMMAND:
        return api_reply_problem(r, API_ERR_NO_STOP_COMMAND, NULL,
                                 "the host's pool has no stop_command; set one "
                                 "(PUT /v1/pools/{id}) first");
    case STOP_STOPPED:
        return api_reply_problem(r, API_ERR_HOST_STOPPED, NULL, "the host is already stopped");
    case STOP_BUSY:
        free(a.doc);
        json_decref(a.plan);
        return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                                 "this host already has a queued or running job%s%s; an admin "
                                 "may set force to cancel it and stop the host",
                                 a.busy_job[0] ? " " : "", a.busy_job);
    }
    if (s < 0) {
        free(a.doc);
        json_decref(a.plan);
        return api_reply_db(r, s);
    }
    if (a.plan != NULL)
        return api_reply_json(r, MHD_HTTP_OK, a.plan, NULL);
    char location[96];
    snprintf(location, sizeof location, "/v1/jobs/%s", a.job_id);
    return api_reply_text(r, MHD_HTTP_ACCEPTED, a.doc, location);
}
