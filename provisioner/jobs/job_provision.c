/* job_provision.c — the provision job kind: load the host and the stack (the host goes
 * provisioning), connect, then each step of prov_provision_steps: check → [apply →
 * verify], one command at a time, each result recorded before the next command runs;
 * finally the host's facts and current stack (provisioned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "db/stacks.h"
#include "provisioner/jobs/job.h"

struct prov_job {
    struct job_task t; /* first: the core's part */
    struct prov_provision prov;
    char *stack_doc; /* the stack document, as the start transaction read it */
    int step;        /* index into prov_provision_steps */
    int phase;       /* 0 check, 1 apply, 2 verify */
    /* the last command's outcome, acted on once it is recorded */
    int ran, timed_out;
    enum prov_ssh_err err;
    enum prov_verdict v;
    char msg[512];
};

static struct prov_job *pj_of(struct job_task *t)
{
    return (struct prov_job *)t;
}

static const char *const phase_names[] = {"check", "apply", "verify"};

static void run_current(struct job_task *t)
{
    struct prov_job *pj = pj_of(t);
    const struct prov_step_def *d = &prov_provision_steps[pj->step];
    t->cmd = pj->phase == 0   ? d->check_cmd(&pj->prov)
             : pj->phase == 1 ? d->apply_cmd(&pj->prov)
                              : d->verify_cmd(&pj->prov);
    if (t->cmd == NULL) {
        job_fail(t, "step_failed", "a value failed validation while building the command", 0);
        return;
    }
    enum prov_cmd_class k = pj->phase == 0   ? d->check_class
                            : pj->phase == 1 ? d->apply_class
                                             : d->verify_class;
    job_exec(t, k, 0);
}

static enum prov_verdict evaluate(struct prov_job *pj, const struct prov_ssh_exec_result *r,
                                  char *msg, size_t n)
{
    const struct prov_step_def *d = &prov_provision_steps[pj->step];
    struct prov_cmd_result cr = {r->err == PROV_SSH_OK && r->exit_status >= 0, r->exit_status,
                                 r->out_tail, r->err_tail};
    return pj->phase == 0   ? d->check_eval(&pj->prov, &cr, msg, n)
           : pj->phase == 1 ? d->apply_eval(&pj->prov, &cr, msg, n)
                            : d->verify_eval(&pj->prov, &cr, msg, n);
}

/* The command's result is recorded: fail, or go on to the next phase or step. */
static void recorded(struct job_task *t)
{
    struct prov_job *pj = pj_of(t);
    const struct prov_step_def *d = &prov_provision_steps[pj->step];
    if (pj->timed_out) {
        job_fail(t, "timed_out", pj->msg, 0);
        return;
    }
    if (!pj->ran) {
        job_fail(t, prov_ssh_err_name(pj->err), pj->msg, prov_ssh_err_transient(pj->err));
        return;
    }
    if (pj->v == PROV_FAIL) {
        char err[600];
        snprintf(err, sizeof err, "step %s: %s", d->name, pj->msg);
        job_fail(t, "step_failed", err, 0);
        return;
    }
    if (pj->v == PROV_APPLY && pj->phase == 0 && d->apply_cmd != NULL) {
        pj->phase = 1;
    } else if (pj->phase == 1 && d->verify_cmd != NULL) {
        pj->phase = 2;
    } else {
        pj->step++;
        pj->phase = 0;
    }
    if (pj->step == prov_provision_nsteps) {
        job_finish(t);
        return;
    }
    run_current(t);
}

static void on_exec(struct job_task *t, const struct prov_ssh_exec_result *r)
{
    struct prov_job *pj = pj_of(t);
    const struct prov_step_def *d = &prov_provision_steps[pj->step];
    pj->msg[0] = '\0';
    pj->v = PROV_FAIL;
    pj->ran = r->err == PROV_SSH_OK;
    pj->timed_out = job_timed_out(r);
    pj->err = r->err;
    if (pj->ran)
        pj->v = evaluate(pj, r, pj->msg, sizeof pj->msg);
    else if (pj->timed_out)
        job_timeout_message(t, r, pj->msg, sizeof pj->msg);
    else
        snprintf(pj->msg, sizeof pj->msg, "%s: %s", prov_ssh_err_name(r->err), r->message);
    const char *outcome = !pj->ran              ? "error"
                          : pj->v == PROV_FAIL  ? "failed"
                          : pj->phase == 1      ? "changed"
                          : pj->v == PROV_APPLY ? "needs_apply"
                                                : "ok";
    int64_t took = r->duration_us + (t->cmd_retried ? t->first_try_us : 0);
    struct db_job_step st = {pj->step + 1,
                             phase_names[pj->phase],
                             d->name,
                             t->cmd,
                             outcome,
                             r->out_tail,
                             r->err_tail,
                             pj->msg,
                             r->exit_status >= 0,
                             r->exit_status,
                             (double)took / 1000.0};
    job_record(t, &st, r, prov_provision_nsteps, "a step's result", recorded);
}

static void on_connect(struct job_task *t, const struct prov_ssh_conn_status *st)
{
    job_contact(t, st, run_current);
}

static enum db_status reads(struct db_conn *c, struct job_task *t)
{
    struct prov_job *pj = pj_of(t);
    free(pj->stack_doc);
    pj->stack_doc = NULL;
    return db_stack_get(c, t->job.stack_id, NULL, &pj->stack_doc);
}

static void loaded(struct job_task *t)
{
    struct prov_job *pj = pj_of(t);
    json_t *stack = json_loads(pj->stack_doc, 0, NULL);
    free(pj->stack_doc);
    pj->stack_doc = NULL;
    char err[256];
    int bad = stack == NULL || prov_provision_init(&pj->prov, stack, t->host.durable_path,
                                                   t->host.scratch_path, err, sizeof err) != 0;
    if (bad) {
        json_decref(stack);
        job_fail(t, "step_failed", stack ? err : "the stack document is unreadable", 0);
        return;
    }
    pj->prov.stack_json = stack; /* prov points into it */
    job_connect(t);
}

static void start(struct job_task *t)
{
    snprintf(t->load.reason, sizeof t->load.reason, "provisioning (job attempt %d)",
             t->job.attempt);
    job_load(t, HE_PROVISION_STARTED, reads, "the host or the stack", loaded);
}

static enum db_status succeed_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    struct prov_job *pj = pj_of(t);
    enum db_status s = job_mark_done(c, t, NULL, NULL);
    if (s <= 0)
        return s;
    char *facts = pj->prov.facts ? json_dumps(pj->prov.facts, JSON_COMPACT) : NULL;
    if (pj->prov.facts != NULL && facts == NULL)
        return DB_HARD_ERROR; /* out of memory: the job is not recorded as succeeded */
    s = db_host_provisioned(c, t->job.host_id, facts ? facts : "{}", t->job.stack_id);
    free(facts);
    if (s < 0)
        return s;
    return job_host_event(c, t, HE_PROVISION_SUCCEEDED, -1,
                          "provisioning succeeded; the host needs the acceptance gate", NULL);
}

static void succeeded(struct job_task *t)
{
    log_json_steal(LOG_INFO,
                   json_pack("{s:s, s:s, s:s, s:i}", "msg", "job succeeded", "job_id", t->job.id,
                             "host_id", t->job.host_id, "attempt", t->job.attempt));
}

static void finish(struct job_task *t)
{
    job_end(t, succeed_fn, "success", succeeded);
}

static enum plan_host_event end_event(const struct job_task *t, const char *error_class, int *hint)
{
    (void)t;
    *hint = -1;
    return error_class == NULL ? HE_JOB_CANCELLED : HE_PROVISION_FAILED;
}

static void release(struct job_task *t)
{
    struct prov_job *pj = pj_of(t);
    free(pj->stack_doc);
    json_decref(pj->prov.stack_json);
    prov_provision_free(&pj->prov);
}

const struct job_kind job_kind_provision = JOB_KIND("provision", "provisioning", struct prov_job);
