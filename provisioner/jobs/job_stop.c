/* job_stop.c — the stop job kind. One remote command: the pool's stop_command as requested
 * (kept in the job's params), validated again here to [A-Za-z0-9 ._/=:-] and run as is —
 * it is an operator-given command line with its own arguments, not one value, so it is
 * not quoted as one. Before it is sent, step 1 (check) records the intent, so a later
 * attempt knows the command may have gone out; its result is step 1 (apply). The host is
 * stopped when the command exits 0, or when the session drops after the server accepted
 * the exec request (a host powering off closes it). A session that drops before that was
 * no stop: the job is retried. A retried stop whose earlier attempt may have sent the
 * command checks first: if the host still answers, it sends the command again; if it
 * does not, the stop is unconfirmed (the job fails stop_unconfirmed, the host becomes
 * failed: still billed, for a person to confirm). A non-zero exit fails the job
 * (step_failed); a job that finally fails or is cancelled returns the host to the state
 * it had. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "provisioner/jobs/job.h"
#include "provisioner/shell.h"

struct stop_job {
    struct job_task t; /* first: the core's part */
    json_t *params;    /* the job's params: reason, requested_by, command, previous_state */
    int maybe_sent;    /* an earlier attempt may have sent the stop command */
    /* the command's outcome, acted on once it is recorded */
    int ok, ran, dropped;
    enum prov_ssh_err err;
    char msg[512];
};

static struct stop_job *sj_of(struct job_task *t)
{
    return (struct stop_job *)t;
}

static const char *param(const struct job_task *t, const char *key)
{
    const struct stop_job *sj = (const struct stop_job *)t;
    const char *v = json_string_value(json_object_get(sj->params, key));
    return v ? v : "";
}

/* The result is recorded: stopped, or why not. */
static void recorded(struct job_task *t)
{
    struct stop_job *sj = sj_of(t);
    if (sj->ok) {
        job_finish(t);
    } else if (sj->ran) {
        char err[600];
        snprintf(err, sizeof err, "step stop: %s", sj->msg);
        job_fail(t, "step_failed", err, 0);
    } else if (sj->dropped) {
        job_fail(t, "disconnected", sj->msg, 1);
    } else {
        job_fail(t, prov_ssh_err_name(sj->err), sj->msg, prov_ssh_err_transient(sj->err));
    }
}

static void on_exec(struct job_task *t, const struct prov_ssh_exec_result *r)
{
    struct stop_job *sj = sj_of(t);
    sj->ran = r->err == PROV_SSH_OK;
    sj->dropped = r->err == PROV_SSH_RESET || r->err == PROV_SSH_DISCONNECT;
    sj->ok = (sj->ran && r->exit_status == 0) || (sj->dropped && r->exec_sent);
    sj->err = r->err;
    char *msg = sj->msg;
    size_t n = sizeof sj->msg;
    if (sj->ran)
        snprintf(msg, n, "the stop command exited %d", r->exit_status);
    else if (sj->dropped && r->exec_sent)
        snprintf(msg, n,
                 "the session dropped after the host accepted the stop command (%s: %s), as it "
                 "does when the host powers off",
                 prov_ssh_err_name(r->err), r->message);
    else if (sj->dropped)
        snprintf(msg, n,
                 "the session dropped before the stop command was sent (%s: %s); not stopped",
                 prov_ssh_err_name(r->err), r->message);
    else if (job_timed_out(r))
        job_timeout_message(t, r, msg, n);
    else
        snprintf(msg, n, "%s: %s", prov_ssh_err_name(r->err), r->message);
    struct db_job_step st = {1,
                             "apply",
                             "stop",
                             t->cmd,
                             sj->ok    ? "changed"
                             : sj->ran ? "failed"
                                       : "error",
                             r->out_tail,
                             r->err_tail,
                             msg,
                             r->exit_status >= 0,
                             r->exit_status,
                             (double)r->duration_us / 1000.0};
    job_record(t, &st, r, 1, "the stop command's result", recorded);
}

/* The intent is recorded: send the command. */
static void send_command(struct job_task *t)
{
    t->cmd = strdup(param(t, "command"));
    if (t->cmd == NULL) {
        job_fail(t, "disconnected", "out of memory", 1);
        return;
    }
    job_exec(t, PROV_CMD_STOP, 0);
}

/* Contact is recorded: the intent first, since a later attempt must know the command may
 * have gone out. */
static void send_intent(struct job_task *t)
{
    struct stop_job *sj = sj_of(t);
    const char *msg = sj->maybe_sent ? "the host still answers after an earlier attempt; "
                                       "sending the stop command again"
                                     : "sending the stop command";
    struct db_job_step st = {1, "check", "stop", param(t, "command"), "ok", "", "", msg, 0, 0, 0.0};
    job_record(t, &st, NULL, 1, "the stop intent", send_command);
}

static void on_connect(struct job_task *t, const struct prov_ssh_conn_status *st)
{
    struct stop_job *sj = sj_of(t);
    if (st->err != PROV_SSH_OK && sj->maybe_sent &&
        (st->err == PROV_SSH_REFUSED || st->err == PROV_SSH_TIMEOUT || st->err == PROV_SSH_RESET ||
         st->err == PROV_SSH_DISCONNECT)) {
        char err[600];
        snprintf(err, sizeof err,
                 "an earlier attempt may have sent the stop command and the host no longer "
                 "answers (%s: %.250s); whether it stopped is unconfirmed: check it with the "
                 "provider",
                 prov_ssh_err_name(st->err), st->message);
        job_fail(t, "stop_unconfirmed", err, 0);
        return;
    }
    job_contact(t, st, send_intent);
}

static enum db_status reads(struct db_conn *c, struct job_task *t)
{
    struct stop_job *sj = sj_of(t);
    char *doc = NULL;
    enum db_status s = db_job_get(c, t->job.id, NULL, &doc);
    if (s <= 0)
        return s;
    json_t *job = json_loads(doc, 0, NULL);
    free(doc);
    if (job == NULL)
        return DB_HARD_ERROR;
    json_decref(sj->params);
    sj->params = json_incref(json_object_get(job, "params"));
    /* An earlier attempt that recorded its intent but no result may have sent it. */
    int intent = 0, result = 0;
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(job, "steps"), i, st)
    {
        const char *phase = json_string_value(json_object_get(st, "phase"));
        if (json_integer_value(json_object_get(st, "attempt")) >= t->job.attempt || phase == NULL)
            continue;
        if (!strcmp(phase, "check"))
            intent = 1;
        else
            result = 1;
    }
    sj->maybe_sent = intent && !result;
    json_decref(job);
    snprintf(t->load.reason, sizeof t->load.reason, "stop requested by %s: %s (job attempt %d)",
             param(t, "requested_by"), param(t, "reason"), t->job.attempt);
    return DB_ONE_RESULT;
}

static void loaded(struct job_task *t)
{
    if (!prov_valid_stop_command(param(t, "command"))) {
        job_fail(t, "step_failed", "the stop command is missing or does not pass validation", 0);
        return;
    }
    job_connect(t);
}

static void start(struct job_task *t)
{
    snprintf(t->load.reason, sizeof t->load.reason, "stop");
    job_load(t, HE_STOP_STARTED, reads, "the host, its pool or the job", loaded);
}

static enum db_status stop_succeed_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    enum db_status s = job_mark_done(c, t, NULL, NULL);
    if (s <= 0)
        return s;
    char reason[700];
    snprintf(reason, sizeof reason, "stopped by %s: %s", param(t, "requested_by"),
             param(t, "reason"));
    return job_host_event(c, t, HE_STOP_DONE, -1, reason, NULL);
}

static void stopped(struct job_task *t)
{
    log_json_steal(LOG_INFO,
                   json_pack("{s:s, s:s, s:s, s:s}", "msg", "host stopped", "job_id", t->job.id,
                             "host_id", t->job.host_id, "requested_by", param(t, "requested_by")));
}

static void finish(struct job_task *t)
{
    job_end(t, stop_succeed_fn, "success", stopped);
}

/* A stop that fails or is cancelled returns the host where it was; an unconfirmed one
 * leaves it failed (still billed), or quarantined when held. */
static enum plan_host_event end_event(const struct job_task *t, const char *error_class, int *hint)
{
    if (error_class != NULL && !strcmp(error_class, "stop_unconfirmed")) {
        *hint = t->host.held ? HS_QUARANTINED : HS_FAILED;
        return HE_STOP_FAILED;
    }
    *hint = (int)plan_host_stop_back(param(t, "previous_state"), t->host.held);
    return error_class == NULL ? HE_JOB_CANCELLED : HE_STOP_FAILED;
}

static void release(struct job_task *t)
{
    json_decref(sj_of(t)->params);
}

const struct job_kind job_kind_stop = JOB_KIND("stop", "stop", struct stop_job);
