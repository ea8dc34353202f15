/* worker.c — see worker.h. Per job, a small state machine:
 *   start → (load host, stack, credential; check address) → connect → host key pinned or
 *   recorded → step 1 check [→ apply → verify] → … → step n → finish (fenced transaction).
 * Every command's result is recorded before the next one runs. Every host state change
 * is an event of the host state machine (planner/host_state.h).
 *
 * Leases: each task keeps a local lease deadline (claim or last successful heartbeat +
 * lease); no remote command starts after it, a failed heartbeat does not extend it, and
 * contact, step and finish writes are fenced by the attempt. A task whose lease lapsed
 * stops without another write; another worker takes the job over.
 *
 * Timeouts: every command has the timeout of its class (query, pull, workload, diag,
 * stop). A query that times out is retried once; a second timeout fails the job
 * timed_out, naming the command and the seconds. */
#include "provisioner/worker.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/crypt.h"
#include "common/utf8.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "db/audit.h"
#include "db/credentials.h"
#include "db/db.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "db/stacks.h"
#include "provisioner/ssh.h"
#include "provisioner/gate_checks.h"
#include "provisioner/shell.h"
#include "provisioner/steps.h"
#include "db/gates.h"
#include "planner/gate.h"
#include "planner/host_state.h"
#include "planner/stack.h"

#define MAX_WORKERS 64
#define CLAIM_BATCH 32

struct worker;

struct task {
    struct worker *w;
    struct db_job_claim job;
    struct db_host_target host;
    struct prov_provision prov;
    struct prov_ssh_conn *conn;
    int step;  /* index into prov_provision_steps */
    int phase; /* 0 check, 1 apply, 2 verify */
    char *cmd; /* the command running now (recorded with its result) */
    enum prov_cmd_class cmd_class; /* of cmd */
    int cmd_timeout_s;             /* of cmd */
    int cmd_retried;               /* cmd is the retry of a query that timed out */
    int64_t first_try_us;          /* how long the timed-out first try ran */
    int64_t next_heartbeat_us;
    int64_t lease_deadline_us;     /* no remote command starts after this */
    int finished; /* no more writes: done, failed, lost or cancelled */
    struct task *next;
    /* gate and diagnostics jobs */
    int is_gate, is_diag;
    struct prov_gate gate;
    struct db_gate_context gctx;
    json_t *pool;          /* pool spec (owns strings the gate points into) */
    json_t *stack;         /* current stack doc */
    char *image_ref;
    int check;             /* current enum prov_check */
    int cmd_i;             /* command within the check */
    int cmd_no;            /* commands run so far (job step index) */
    struct prov_cmd_result res[GATE_MAX_CMDS];
    char *res_out[GATE_MAX_CMDS], *res_err[GATE_MAX_CMDS];
    double check_command_ms;
    int64_t check_started_us, connect_started_us;
    double connect_ms;
    int check_timed_out;
    json_t *checks;        /* recorded entries so far */
    struct plan_check_outcome outs[PROV_CHECK__COUNT]; /* the outcomes, in memory */
    int nouts;
    char timed_out_msg[320]; /* a query timed out twice: the gate stops here */
    char started_at[40];
    /* stop jobs */
    int is_stop;
    json_t *stop_params;   /* the job's params: reason, requested_by, command, previous_state */
    int stop_maybe_sent;   /* an earlier attempt may have sent the stop command */
};

struct worker {
    int idx;
    char owner[80];
    const struct prov_worker_config *cfg;
    struct prov_ssh_loop *loop;
    struct db_listener *listener;
    struct task *tasks;
    int active;
    pthread_t thread;
};

static struct prov_worker_config config;
static struct worker workers[MAX_WORKERS];
static int nworkers;
static atomic_int stopping;

/* ---- database helpers (each a short transaction on the shared pool) ---- */

struct step_arg {
    struct task *t;
    struct db_job_step s;
    int total; /* steps the job has (progress) */
};

/* What a host printed is untrusted bytes: cut anywhere, NULs, invalid UTF-8. Steps keep a
 * cleaned copy of each tail (at most 8 KiB) and of the message (PostgreSQL, JSON and the
 * logs take valid UTF-8 only). The tails may hold NULs: their lengths come from the
 * engine's totals. Returns -1 when out of memory. */
struct clean_step {
    char *out, *err, *msg;
};
static size_t tail_len(size_t total) { return total < 8192 ? total : 8192; }
static int clean_step(struct db_job_step *st, const struct prov_ssh_exec_result *r,
                      struct clean_step *k)
{
    size_t ol = r ? tail_len(r->out_total) : strlen(st->stdout_tail ? st->stdout_tail : "");
    size_t el = r ? tail_len(r->err_total) : strlen(st->stderr_tail ? st->stderr_tail : "");
    k->out = utf8_dup_tail(st->stdout_tail ? st->stdout_tail : "", st->stdout_tail ? ol : 0, 8192);
    k->err = utf8_dup_tail(st->stderr_tail ? st->stderr_tail : "", st->stderr_tail ? el : 0, 8192);
    k->msg = utf8_dup(st->message ? st->message : "", strlen(st->message ? st->message : ""), 1024);
    if (k->out == NULL || k->err == NULL || k->msg == NULL)
        return -1;
    st->stdout_tail = k->out;
    st->stderr_tail = k->err;
    st->message = k->msg;
    return 0;
}
static void clean_step_free(struct clean_step *k)
{
    free(k->out);
    free(k->err);
    free(k->msg);
}

static enum db_status step_fn(struct db_conn *c, void *arg)
{
    struct step_arg *a = arg;
    return db_job_step(c, a->t->job.id, a->t->job.attempt, &a->s, a->total);
}

/* Records a step (cleaned) in its own transaction. r: the command's result, or NULL. */
static enum db_status record_step(struct task *t, struct db_job_step st,
                                  const struct prov_ssh_exec_result *r, int total)
{
    struct clean_step k = {NULL, NULL, NULL};
    if (clean_step(&st, r, &k) != 0) {
        clean_step_free(&k);
        return DB_HARD_ERROR;
    }
    struct step_arg a = {t, st, total};
    enum db_status s = db_run_tx(step_fn, &a);
    clean_step_free(&k);
    return s;
}

struct finish_arg {
    struct task *t;
    const char *error_class;
    const char *error;
    int transient;
    int fenced_out; /* the job's attempt moved on: nothing was written */
};

static const char *actor(const struct task *t) { return t->w->owner; }

static enum db_status audit_system(struct db_conn *c, const struct task *t, const char *action,
                                   int status)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", t->job.id);
    struct db_audit_event ev = {actor(t), "system", action, "host", t->job.host_id, "WORKER",
                                path, t->job.id, status, NULL};
    return db_audit_insert(c, &ev);
}

static const char *stop_str(const struct task *t, const char *key)
{
    const char *v = json_string_value(json_object_get(t->stop_params, key));
    return v ? v : "";
}

static const char *job_what(const struct task *t)
{
    return t->is_stop ? "stop" : t->is_gate ? t->job.kind : "provisioning";
}

/* Applies a host state machine event for this job (fenced by the caller's write). */
static enum db_status host_event(struct db_conn *c, const struct task *t, enum plan_host_event ev,
                                 int hint, const char *reason, const char *gate_run_id)
{
    struct db_host_event e = {t->job.host_id,
                              plan_host_events[ev].name,
                              hint >= 0 ? plan_host_state_names[hint] : NULL,
                              reason,
                              t->job.id,
                              actor(t),
                              gate_run_id};
    enum db_host_refusal refused;
    enum db_status s = db_host_event(c, &e, NULL, &refused);
    if (refused != DB_HOST_OK)
        log_msg(LOG_ERROR, "job %s: the host state machine refused %s (%s)", t->job.id,
                plan_host_events[ev].name,
                refused == DB_HOST_QUARANTINED ? "quarantined" : "not allowed");
    if (s >= 0 && plan_host_events[ev].audit_action != NULL &&
        !strcmp(plan_host_events[ev].audit_action, "host.quarantine"))
        s = audit_system(c, t, "host.quarantine", 409);
    return s == DB_NO_RESULTS ? DB_ONE_RESULT : s; /* a deleted host: nothing to move */
}

/* The event a job that ends without its own outcome (failure, cancellation) applies, and
 * its hint: a stop goes back where it was; the others per kind. */
static enum plan_host_event end_event(const struct task *t, int cancelled, int *hint)
{
    *hint = -1;
    if (t->is_stop) {
        *hint = (int)plan_host_stop_back(stop_str(t, "previous_state"), t->host.held);
        return cancelled ? HE_JOB_CANCELLED : HE_STOP_FAILED;
    }
    if (cancelled)
        return HE_JOB_CANCELLED;
    return !t->is_gate ? HE_PROVISION_FAILED
           : t->is_diag ? HE_DIAGNOSTICS_FINISHED
                        : HE_GATE_INVESTIGATE;
}

static enum db_status succeed_fn(struct db_conn *c, void *arg)
{
    struct finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = db_job_succeed(c, t->job.id, t->job.attempt);
    if (s == DB_NO_RESULTS) {
        a->fenced_out = 1;
        return DB_NO_RESULTS;
    }
    if (s < 0)
        return s;
    char *facts = t->prov.facts ? json_dumps(t->prov.facts, JSON_COMPACT) : NULL;
    if (t->prov.facts != NULL && facts == NULL)
        return DB_HARD_ERROR; /* out of memory: the job is not recorded as succeeded */
    s = db_host_provisioned(c, t->job.host_id, facts ? facts : "{}", t->job.stack_id);
    free(facts);
    if (s < 0)
        return s;
    return host_event(c, t, HE_PROVISION_SUCCEEDED, -1,
                      "provisioning succeeded; the host needs the acceptance gate", NULL);
}

static enum db_status fail_fn(struct db_conn *c, void *arg)
{
    struct finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s;
    int retry = a->transient && t->job.attempt < t->job.max_attempts;
    if (retry) {
        int backoff = 1 << (t->job.attempt < 6 ? t->job.attempt : 6); /* 2, 4, 8 … 64 s */
        s = db_job_requeue(c, t->job.id, t->job.attempt, backoff, a->error_class, a->error);
    } else {
        s = db_job_fail(c, t->job.id, t->job.attempt, a->error_class, a->error);
    }
    if (s == DB_NO_RESULTS) {
        a->fenced_out = 1;
        return DB_NO_RESULTS;
    }
    if (s < 0 || retry)
        return s;
    char reason[512];
    snprintf(reason, sizeof reason, "%s failed (%s): %s", job_what(t), a->error_class, a->error);
    if (!strcmp(a->error_class, "host_key_mismatch"))
        return host_event(c, t, HE_KEY_MISMATCH, -1, reason, NULL);
    if (!strcmp(a->error_class, "host_quarantined"))
        return s; /* the state machine refused to start: the host stays as it is */
    if (!strcmp(a->error_class, "stop_unconfirmed"))
        return host_event(c, t, HE_STOP_FAILED, t->host.held ? HS_QUARANTINED : HS_FAILED,
                          reason, NULL);
    int hint;
    enum plan_host_event ev = end_event(t, 0, &hint);
    return host_event(c, t, ev, hint, reason, NULL);
}

static enum db_status cancelled_fn(struct db_conn *c, void *arg)
{
    struct finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = db_job_cancelled(c, t->job.id, t->job.attempt);
    if (s <= 0)
        return s;
    char reason[64];
    snprintf(reason, sizeof reason, "%s cancelled", job_what(t));
    int hint;
    enum plan_host_event ev = end_event(t, 1, &hint);
    return host_event(c, t, ev, hint, reason, NULL);
}

/* ---- task lifecycle ---- */

static void task_close(struct task *t)
{
    t->finished = 1;
    if (t->conn != NULL) {
        struct prov_ssh_conn *c = t->conn;
        t->conn = NULL;
        prov_ssh_close(c);
    }
}

/* The lease is ours until the local deadline, less a margin for the write that records
 * what a command did. */
#define LEASE_MARGIN_US 2000000
static int lease_live(const struct task *t)
{
    return util_mono_us() + LEASE_MARGIN_US < t->lease_deadline_us;
}

/* The lease lapsed (or a newer attempt owns the job): stop without another write. */
static void task_lost(struct task *t, const char *why)
{
    if (t->finished)
        return;
    log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s, s:i, s:s}", "msg", "lease lost; stopping",
                                       "job_id", t->job.id, "host_id", t->job.host_id, "attempt",
                                       t->job.attempt, "why", why));
    task_close(t);
}

static void task_fail(struct task *t, const char *error_class, const char *error_raw,
                      int transient)
{
    if (t->finished)
        return;
    char error[1024]; /* may quote what the host printed: stored and logged only cleaned */
    utf8_clean(error_raw ? error_raw : "", strlen(error_raw ? error_raw : ""), error, sizeof error);
    struct finish_arg a = {t, error_class, error, transient, 0};
    enum db_status s = db_run_tx(fail_fn, &a);
    log_json_steal(LOG_WARN,
                   json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:b}", "msg", "job failed",
                             "job_id", t->job.id, "host_id", t->job.host_id, "attempt",
                             t->job.attempt, "error_class", error_class, "error", error,
                             "will_retry", transient && t->job.attempt < t->job.max_attempts));
    if (s < 0)
        log_msg(LOG_ERROR, "job %s: could not record the failure; its lease will expire",
                t->job.id);
    task_close(t);
}

static void task_succeed(struct task *t)
{
    struct finish_arg a = {t, NULL, NULL, 0, 0};
    enum db_status s = db_run_tx(succeed_fn, &a);
    if (s < 0)
        log_msg(LOG_ERROR, "job %s: could not record success; its lease will expire", t->job.id);
    else if (!a.fenced_out)
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:i}", "msg", "job succeeded",
                                           "job_id", t->job.id, "host_id", t->job.host_id,
                                           "attempt", t->job.attempt));
    task_close(t);
}

/* Seconds a command of class k may run: the class's setting, at most
 * GPUFLEET_SSH_COMMAND_TIMEOUT; the pool's workload timeout and the diagnostics level's
 * are their own. */
static int class_timeout(const struct task *t, enum prov_cmd_class k, int own_s)
{
    const struct prov_worker_config *cfg = t->w->cfg;
    int s;
    switch (k) {
    case PROV_CMD_PULL: s = cfg->pull_timeout_s; break;
    case PROV_CMD_WORKLOAD: s = own_s > 0 ? own_s : cfg->container_timeout_s; break;
    case PROV_CMD_DIAG: s = own_s; break;
    case PROV_CMD_STOP: s = cfg->stop_timeout_s; break;
    case PROV_CMD_QUERY:
    default: s = cfg->query_timeout_s; break;
    }
    if (s <= 0)
        s = cfg->query_timeout_s;
    /* the cap bounds the classes set here, not the pool's workload or a diagnostics level */
    int own = own_s > 0 && (k == PROV_CMD_WORKLOAD || k == PROV_CMD_DIAG);
    if (!own && cfg->command_timeout_s > 0 && s > cfg->command_timeout_s)
        s = cfg->command_timeout_s;
    return s;
}

/* Starts t->cmd (owned by the task) with the timeout of its class. Refuses once the lease
 * is no longer ours. Returns 0, or -1 after failing or dropping the task. */
static int task_exec(struct task *t, enum prov_cmd_class k, int own_s, prov_ssh_exec_cb cb)
{
    if (!lease_live(t)) {
        free(t->cmd);
        t->cmd = NULL;
        task_lost(t, "the lease deadline passed before the next command");
        return -1;
    }
    t->cmd_class = k;
    t->cmd_timeout_s = class_timeout(t, k, own_s);
    if (t->conn == NULL || prov_ssh_exec(t->conn, t->cmd, t->cmd_timeout_s * 1000, cb, t) != 0) {
        free(t->cmd);
        t->cmd = NULL;
        task_fail(t, "disconnected", "the SSH session closed", 1);
        return -1;
    }
    return 0;
}

static int exec_timed_out(const struct prov_ssh_exec_result *r)
{
    return r->timed_out || r->err == PROV_SSH_TIMEOUT;
}

/* A query that timed out for the first time runs once more (not recorded twice: the
 * retry's record says so). Returns 1 when it was restarted. */
static int retry_query(struct task *t, const struct prov_ssh_exec_result *r, prov_ssh_exec_cb cb)
{
    if (!exec_timed_out(r) || t->cmd_class != PROV_CMD_QUERY || t->cmd_retried)
        return 0;
    t->cmd_retried = 1;
    t->first_try_us = r->duration_us;
    log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s, s:i}", "msg",
                                       "a query timed out; running it once more", "job_id",
                                       t->job.id, "host_id", t->job.host_id, "timeout_s",
                                       t->cmd_timeout_s));
    task_exec(t, t->cmd_class, t->cmd_timeout_s, cb);
    return 1;
}

/* The part of a command that hung. A sectioned script (printf '@@name\n'; tool …; as the
 * facts are gathered) prints each marker before its part runs, so the last marker in the
 * output names the part that never finished; otherwise the whole command. */
static const char *hung_part(const char *cmd, const char *out, size_t outlen)
{
    const char *last = NULL;
    for (const char *p = out; (p = memmem(p, outlen - (size_t)(p - out), "@@", 2)) != NULL; p += 2)
        last = p;
    if (last == NULL)
        return cmd;
    size_t len = strcspn(last + 2, "\n");
    char marker[64];
    if (len == 0 || len > 32)
        return cmd;
    snprintf(marker, sizeof marker, "@@%.*s\\n'", (int)len, last + 2);
    const char *at = strstr(cmd, marker);
    if (at == NULL)
        return cmd;
    at += strlen(marker);
    return at + strspn(at, "; ");
}

/* The message for a command that timed out (twice, for a query). */
static void timeout_message(const struct task *t, const struct prov_ssh_exec_result *r,
                            char *buf, size_t n)
{
    char m[200];
    const char *cmd = t->cmd ? t->cmd : "";
    if (r != NULL)
        cmd = hung_part(cmd, r->out_tail, tail_len(r->out_total));
    prov_timeout_message(m, sizeof m, cmd, t->cmd_timeout_s);
    snprintf(buf, n, "%s%s", m, t->cmd_retried ? " (tried twice)" : "");
}

static void run_current(struct task *t);

static const char *const phase_names[] = {"check", "apply", "verify"};

static enum prov_verdict evaluate(struct task *t, const struct prov_ssh_exec_result *r,
                                  char *msg, size_t n)
{
    const struct prov_step_def *d = &prov_provision_steps[t->step];
    struct prov_cmd_result cr = {r->err == PROV_SSH_OK && r->exit_status >= 0, r->exit_status,
                                 r->out_tail, r->err_tail};
    return t->phase == 0   ? d->check_eval(&t->prov, &cr, msg, n)
           : t->phase == 1 ? d->apply_eval(&t->prov, &cr, msg, n)
                           : d->verify_eval(&t->prov, &cr, msg, n);
}

static void on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished) {
        free(t->cmd);
        t->cmd = NULL;
        return;
    }
    if (retry_query(t, r, on_exec))
        return;
    const struct prov_step_def *d = &prov_provision_steps[t->step];
    char msg[512] = "";
    enum prov_verdict v = PROV_FAIL;
    int ran = r->err == PROV_SSH_OK;
    int timed_out = exec_timed_out(r);
    if (ran)
        v = evaluate(t, r, msg, sizeof msg);
    else if (timed_out)
        timeout_message(t, r, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s: %s", prov_ssh_err_name(r->err), r->message);
    const char *outcome = !ran                ? "error"
                          : v == PROV_FAIL    ? "failed"
                          : t->phase == 1     ? "changed"
                          : v == PROV_APPLY   ? "needs_apply"
                                              : "ok";
    int64_t took = r->duration_us + (t->cmd_retried ? t->first_try_us : 0);
    enum db_status s = record_step(
        t,
        (struct db_job_step){t->step + 1, phase_names[t->phase], d->name, t->cmd, outcome,
                             r->out_tail, r->err_tail, msg, r->exit_status >= 0, r->exit_status,
                             (double)took / 1000.0},
        r, prov_provision_nsteps);
    if (s == DB_NO_RESULTS) { /* a newer attempt owns the job */
        free(t->cmd);
        t->cmd = NULL;
        task_lost(t, "recording a step found a newer attempt");
        return;
    }
    if (s < 0) { /* not recorded: nothing may follow a command whose result is unknown */
        free(t->cmd);
        t->cmd = NULL;
        task_fail(t, "disconnected", "could not record a step's result", 1);
        return;
    }
    if (timed_out) {
        free(t->cmd);
        t->cmd = NULL;
        task_fail(t, "timed_out", msg, 0);
        return;
    }
    free(t->cmd);
    t->cmd = NULL;
    t->cmd_retried = 0;
    if (!ran) {
        task_fail(t, prov_ssh_err_name(r->err), msg, prov_ssh_err_transient(r->err));
        return;
    }
    if (v == PROV_FAIL) {
        char err[600];
        snprintf(err, sizeof err, "step %s: %s", d->name, msg);
        task_fail(t, "step_failed", err, 0);
        return;
    }
    if (v == PROV_APPLY && t->phase == 0 && d->apply_cmd != NULL) {
        t->phase = 1;
    } else if (t->phase == 1 && d->verify_cmd != NULL) {
        t->phase = 2;
    } else {
        t->step++;
        t->phase = 0;
    }
    if (t->step == prov_provision_nsteps) {
        task_succeed(t);
        return;
    }
    run_current(t);
}

static void run_current(struct task *t)
{
    const struct prov_step_def *d = &prov_provision_steps[t->step];
    t->cmd = t->phase == 0   ? d->check_cmd(&t->prov)
             : t->phase == 1 ? d->apply_cmd(&t->prov)
                             : d->verify_cmd(&t->prov);
    if (t->cmd == NULL) {
        task_fail(t, "step_failed", "a value failed validation while building the command", 0);
        return;
    }
    enum prov_cmd_class k = t->phase == 0   ? d->check_class
                            : t->phase == 1 ? d->apply_class
                                            : d->verify_class;
    task_exec(t, k, 0, on_exec);
}

struct contact_arg {
    struct task *t;
    const char *sha256;
    int live;
};

static enum db_status contact_fn(struct db_conn *c, void *arg)
{
    struct contact_arg *a = arg;
    int pinned = 0;
    enum db_status s = db_host_contact(c, a->t->job.host_id, a->sha256, a->t->job.id,
                                       a->t->job.attempt, &pinned);
    a->live = s == DB_ONE_RESULT;
    if (s == DB_ONE_RESULT && pinned)
        s = audit_system(c, a->t, "host.key_recorded", 200);
    return s;
}

/* Common to every job kind once the session is up: the connect outcome, then the
 * contact record (first-contact pin, last_seen), fenced by the attempt. Returns 0 when
 * the job may run commands. */
static int connected(struct task *t, const struct prov_ssh_conn_status *st)
{
    if (t->finished)
        return -1;
    t->connect_ms = (double)(util_mono_us() - t->connect_started_us) / 1000.0;
    if (st->err != PROV_SSH_OK) {
        task_fail(t, prov_ssh_err_name(st->err), st->message, prov_ssh_err_transient(st->err));
        return -1;
    }
    if (!lease_live(t)) {
        task_lost(t, "the lease deadline passed while connecting");
        return -1;
    }
    /* First contact without a pin: record the key (with an audit event); otherwise the
     * engine has already compared it with the pin. */
    struct contact_arg a = {t, st->host_key_sha256, 0};
    enum db_status s = db_run_tx(contact_fn, &a);
    if (s < 0) {
        task_fail(t, "disconnected", "could not record contact with the host", 1);
        return -1;
    }
    if (!a.live) {
        task_lost(t, "recording contact found a newer attempt");
        return -1;
    }
    return 0;
}

static void on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (connected(t, st) == 0)
        run_current(t);
}

/* Applies a "started" event; a quarantined host refuses it (the job then fails
 * host_quarantined and the host stays as it is). */
struct start_arg {
    struct task *t;
    enum plan_host_event ev;
    const char *reason;
    int quarantined;
    char buf[720]; /* a reason built once the job is loaded */
};

static enum db_status start_event(struct db_conn *c, struct start_arg *a)
{
    struct task *t = a->t;
    struct db_host_event e = {t->job.host_id, plan_host_events[a->ev].name, NULL, a->reason,
                              t->job.id,      actor(t),                     NULL};
    enum db_host_refusal refused;
    enum db_status s = db_host_event(c, &e, NULL, &refused);
    if (refused != DB_HOST_OK) {
        a->quarantined = refused == DB_HOST_QUARANTINED;
        if (!a->quarantined)
            log_msg(LOG_ERROR, "job %s: the host state machine refused %s", t->job.id,
                    plan_host_events[a->ev].name);
    }
    return s;
}

struct load_arg {
    struct start_arg st;
    char *stack_doc;
};

static enum db_status load_fn(struct db_conn *c, void *arg)
{
    struct load_arg *a = arg;
    struct task *t = a->st.t;
    free(a->stack_doc);
    a->stack_doc = NULL;
    db_host_target_free(&t->host);
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    s = db_stack_get(c, t->job.stack_id, &a->stack_doc);
    if (s <= 0)
        return s;
    s = start_event(c, &a->st);
    return s < 0 ? s : DB_ONE_RESULT;
}

/* A start transaction's outcome: 0 to go on; otherwise the task has failed. */
static int started(struct task *t, enum db_status s, const struct start_arg *st,
                   const char *what)
{
    if (st->quarantined) {
        task_fail(t, "host_quarantined",
                  "the host is quarantined; an admin must release it first", 0);
        return -1;
    }
    if (s <= 0) {
        char err[200];
        snprintf(err, sizeof err, "%s %s", s == DB_NO_RESULTS ? "no longer exists:" : "could not load",
                 what);
        task_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed", err,
                  s == DB_UNAVAILABLE);
        return -1;
    }
    return 0;
}

/* Checks the address policy, decrypts the credential and opens the SSH session; cb runs
 * once the host key is verified and the login succeeded (or failed). Every job kind
 * connects through here. */
static void task_connect(struct task *t, prov_ssh_conn_cb cb)
{
    struct worker *w = t->w;
    if (prov_ssh_address_forbidden(t->host.address) ||
        prov_ssh_cidr_match(t->host.address, w->cfg->allow_cidrs ? w->cfg->allow_cidrs : "") != 1) {
        task_fail(t, "address_not_allowed",
                  "the host address is not in GPUFLEET_SSH_ALLOW_CIDRS (or is link-local or a "
                  "metadata address)",
                  0);
        return;
    }
    if (!lease_live(t)) {
        task_lost(t, "the lease deadline passed before connecting");
        return;
    }
    struct crypt_secret key = {NULL, 0};
    int decrypt_failed = 0;
    char err[256] = "";
    enum db_status s;
    struct db_conn *c = db_acquire(&s);
    if (c != NULL) {
        s = db_credential_load(c, t->host.credential_id, &key, &decrypt_failed, err, sizeof err);
        db_release(c);
    }
    if (s <= 0) {
        crypt_secret_free(&key);
        task_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed",
                  decrypt_failed         ? err
                  : s == DB_NO_RESULTS ? "the host's credential no longer exists"
                                       : "could not load the credential",
                  s == DB_UNAVAILABLE);
        return;
    }
    struct prov_ssh_target target = {
        .address = t->host.address,
        .port = t->host.port,
        .user = t->host.user,
        .private_key = (const char *)key.data,
        .private_key_len = key.len,
        .pinned_host_key_sha256 = t->host.host_key_sha256,
        .connect_timeout_ms = w->cfg->connect_timeout_s * 1000,
        .handshake_timeout_ms = w->cfg->connect_timeout_s * 2000,
        .auth_timeout_ms = w->cfg->connect_timeout_s * 2000,
    };
    t->connect_started_us = util_mono_us();
    t->conn = prov_ssh_connect(w->loop, &target, cb, t);
    crypt_secret_free(&key); /* the engine keeps its own copy, wiped on close */
    if (t->conn == NULL)
        task_fail(t, "disconnected", "out of memory opening the SSH session", 1);
}

static void gate_start(struct task *t);
static void stop_start(struct task *t);

static void task_start(struct worker *w, const struct db_job_claim *cl, int64_t claimed_us)
{
    struct task *t = calloc(1, sizeof *t);
    if (t == NULL)
        return; /* the lease will expire and another attempt will run */
    t->w = w;
    t->job = *cl;
    t->next = w->tasks;
    w->tasks = t;
    w->active++;
    t->next_heartbeat_us = util_mono_us() + (int64_t)w->cfg->lease_s * 1000000 / 3;
    t->lease_deadline_us = claimed_us + (int64_t)w->cfg->lease_s * 1000000;

    if (!strcmp(cl->kind, "gate") || !strcmp(cl->kind, "diagnostics")) {
        gate_start(t);
        return;
    }
    if (!strcmp(cl->kind, "stop")) {
        stop_start(t);
        return;
    }
    if (strcmp(cl->kind, "provision") != 0) {
        task_fail(t, "step_failed", "this worker does not run this kind of job", 0);
        return;
    }
    char reason[160];
    snprintf(reason, sizeof reason, "provisioning (job attempt %d)", t->job.attempt);
    struct load_arg a = {{t, HE_PROVISION_STARTED, reason, 0, ""}, NULL};
    enum db_status s = db_run_tx(load_fn, &a);
    if (started(t, s, &a.st, "the host or the stack") != 0) {
        free(a.stack_doc);
        return;
    }
    json_t *stack = json_loads(a.stack_doc, 0, NULL);
    free(a.stack_doc);
    char err[256];
    int bad = stack == NULL || prov_provision_init(&t->prov, stack, t->host.durable_path,
                                                   t->host.scratch_path, err, sizeof err) != 0;
    if (bad) {
        json_decref(stack);
        task_fail(t, "step_failed", stack ? err : "the stack document is unreadable", 0);
        return;
    }
    t->prov.stack_json = stack; /* prov points into it */
    task_connect(t, on_connect);
}

static void gate_free(struct task *t);

static void task_free(struct task *t)
{
    gate_free(t);
    json_decref(t->stop_params);
    free(t->cmd);
    json_decref(t->prov.stack_json);
    prov_provision_free(&t->prov);
    db_host_target_free(&t->host);
    free(t);
}

/* Heartbeats and cancellation; reaps finished tasks. A heartbeat that succeeds moves the
 * local lease deadline to (its start + lease); one that fails does not, and is retried
 * every second; once the deadline has passed the task stops without another write. */
static void tend(struct worker *w)
{
    int64_t now = util_mono_us();
    struct task **pp = &w->tasks;
    while (*pp != NULL) {
        struct task *t = *pp;
        if (!t->finished && now >= t->next_heartbeat_us) {
            int cancel = 0;
            struct db_conn *c;
            enum db_status s;
            int64_t sent = util_mono_us();
            c = db_acquire(&s);
            if (c != NULL) {
                s = db_job_heartbeat(c, t->job.id, t->job.attempt, w->cfg->lease_s, &cancel);
                db_release(c);
            }
            if (s == DB_ONE_RESULT) {
                t->lease_deadline_us = sent + (int64_t)w->cfg->lease_s * 1000000;
                t->next_heartbeat_us = now + (int64_t)w->cfg->lease_s * 1000000 / 3;
            } else {
                t->next_heartbeat_us = now + 1000000;
            }
            if (s == DB_NO_RESULTS) {
                task_lost(t, "the heartbeat found a newer attempt");
            } else if (s < 0 && !lease_live(t)) {
                task_lost(t, "heartbeats failed until the lease deadline passed");
            } else if (s < 0) {
                log_msg(LOG_WARN, "job %s attempt %d: heartbeat failed; retrying", t->job.id,
                        t->job.attempt);
            } else if (cancel) {
                struct finish_arg a = {t, NULL, NULL, 0, 0};
                db_run_tx(cancelled_fn, &a);
                task_close(t);
            }
        }
        if (!t->finished && !lease_live(t) && t->lease_deadline_us <= now)
            task_lost(t, "the lease deadline passed");
        if (t->finished && t->conn == NULL && t->cmd == NULL) {
            *pp = t->next;
            w->active--;
            task_free(t);
            continue;
        }
        pp = &t->next;
    }
}

/* Claims up to one batch; returns how many jobs it took. */
static int claim_batch(struct worker *w)
{
    int room = w->cfg->concurrency - w->active;
    if (room <= 0)
        return 0;
    if (room > CLAIM_BATCH)
        room = CLAIM_BATCH;
    struct db_job_claim claims[CLAIM_BATCH];
    int n = 0;
    struct db_conn *c;
    enum db_status s;
    int64_t claimed_us = util_mono_us(); /* the lease runs from before the claim */
    c = db_acquire(&s);
    if (c == NULL)
        return 0;
    s = db_job_claim(c, w->owner, w->cfg->lease_s, room, claims, &n);
    db_release(c);
    for (int i = 0; i < n; i++) {
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:i}", "msg", "job claimed", "job_id",
                                           claims[i].id, "worker", w->owner, "attempt",
                                           claims[i].attempt));
        task_start(w, &claims[i], claimed_us);
    }
    return n;
}

/* Claims while full batches come back and there is room, so a backlog starts at once
 * rather than one batch per wake-up. */
static void claim(struct worker *w)
{
    while (claim_batch(w) == CLAIM_BATCH && !atomic_load(&stopping))
        ;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int64_t last_claim = 0;
    while (!atomic_load(&stopping)) {
        int woken = db_listener_drain(w->listener) > 0;
        int64_t now = util_mono_us();
        if (woken || now - last_claim > 1000000) {
            claim(w);
            last_claim = now;
        }
        if (w->active > 0) {
            prov_ssh_loop_run_once(w->loop, 50);
            tend(w);
        } else {
            int fd = db_listener_fd(w->listener);
            struct pollfd pfd = {fd, POLLIN, 0};
            poll(&pfd, fd >= 0 ? 1 : 0, 250);
        }
    }
    /* Leave held jobs to their leases: another worker (or this one, restarted) resumes. */
    for (struct task *t = w->tasks; t != NULL; t = t->next)
        task_close(t);
    prov_ssh_loop_free(w->loop);
    while (w->tasks != NULL) {
        struct task *t = w->tasks;
        w->tasks = t->next;
        task_free(t);
    }
    db_listener_free(w->listener);
    return NULL;
}

int prov_workers_start(const struct prov_worker_config *cfg)
{
    config = *cfg;
    if (config.threads > MAX_WORKERS)
        config.threads = MAX_WORKERS;
    atomic_store(&stopping, 0);
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < config.threads; i++) {
        struct worker *w = &workers[i];
        memset(w, 0, sizeof *w);
        w->idx = i;
        w->cfg = &config;
        snprintf(w->owner, sizeof w->owner, "worker:%.40s:%d:%d", host, (int)getpid(), i);
        w->loop = prov_ssh_loop_new();
        w->listener = db_listen(config.database_url, "gpufleet_jobs");
        if (w->loop == NULL || w->listener == NULL ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            prov_ssh_loop_free(w->loop);
            db_listener_free(w->listener);
            break;
        }
        nworkers++;
    }
    if (nworkers != config.threads) {
        prov_workers_stop(); /* the started threads stop before anything is torn down */
        return -1;
    }
    return 0;
}

void prov_workers_stop(void)
{
    atomic_store(&stopping, 1);
    for (int i = 0; i < nworkers; i++)
        pthread_join(workers[i].thread, NULL);
    nworkers = 0;
}

/* ---- gate and diagnostics jobs ---- */

static void gate_free(struct task *t)
{
    for (int i = 0; i < GATE_MAX_CMDS; i++) {
        free(t->res_out[i]);
        free(t->res_err[i]);
        t->res_out[i] = t->res_err[i] = NULL;
    }
    json_decref(t->checks);
    json_decref(t->pool);
    json_decref(t->stack);
    free(t->image_ref);
    db_gate_context_free(&t->gctx);
    t->checks = t->pool = t->stack = NULL;
    t->image_ref = NULL;
}

static enum db_status gate_load_fn(struct db_conn *c, void *arg)
{
    struct start_arg *a = arg;
    struct task *t = a->t;
    db_gate_context_free(&t->gctx);
    db_host_target_free(&t->host);
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    s = db_gate_context(c, t->job.host_id, t->job.id, &t->gctx);
    if (s <= 0)
        return s;
    s = start_event(c, a);
    return s < 0 ? s : DB_ONE_RESULT;
}

static void gate_run_current(struct task *t);

static const int gate_order[] = {PROV_CHECK_GPU_INVENTORY, PROV_CHECK_CONTAINER_GPU,
                                 PROV_CHECK_WORKLOAD,      PROV_CHECK_TOPOLOGY,
                                 PROV_CHECK_STORAGE,       PROV_CHECK_OBSERVABILITY};
#define NGATE (int)(sizeof gate_order / sizeof gate_order[0])

static int gate_total(const struct task *t) { return t->is_diag ? 1 : NGATE; }
static int gate_check_at(const struct task *t, int i)
{
    return t->is_diag ? PROV_CHECK_DIAGNOSTICS : gate_order[i];
}

/* Records one check: the outcome in memory (what the verdict is computed from) and its
 * JSON entry (what is stored). An entry that cannot be built or kept leaves the outcome
 * marked unrecorded, and the verdict names it (investigate). */
static void gate_record_check(struct task *t, int check, const struct prov_check_out *o,
                              int ncmds, double parse_ms)
{
    if (t->nouts < PROV_CHECK__COUNT) {
        struct plan_check_outcome *out = &t->outs[t->nouts++];
        out->name = prov_check_names[check];
        out->status = o->status;
        out->hardware_evidence = o->hardware_evidence;
        out->recorded = 0;
        struct sbuf b;
        sbuf_init(&b, 1024);
        for (int i = 0; i < ncmds; i++) {
            if (t->res_out[i] && *t->res_out[i])
                sbuf_adds(&b, t->res_out[i]);
            if (t->res_err[i] && *t->res_err[i]) {
                sbuf_adds(&b, "[stderr] ");
                sbuf_adds(&b, t->res_err[i]);
            }
        }
        size_t len = 0;
        char *text = sbuf_take(&b, &len);
        json_t *entry = prov_check_entry(prov_check_names[check], o, text ? text : "",
                                         text ? len : 0, t->check_command_ms, parse_ms);
        free(text);
        out->recorded = entry != NULL && json_array_append_new(t->checks, entry) == 0;
        if (!out->recorded)
            log_msg(LOG_ERROR, "job %s: check %s ran but could not be recorded", t->job.id,
                    prov_check_names[check]);
    }
}

struct gate_finish_arg {
    struct task *t;
    const char *verdict;
    const char *reason;
    int fenced_out;
};

static enum db_status gate_finish_fn(struct db_conn *c, void *arg)
{
    struct gate_finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = t->timed_out_msg[0]
                           ? db_job_fail(c, t->job.id, t->job.attempt, "timed_out", t->timed_out_msg)
                           : db_job_succeed(c, t->job.id, t->job.attempt);
    if (s == DB_NO_RESULTS) {
        a->fenced_out = 1;
        return s;
    }
    if (s < 0)
        return s;
    char *checks = json_dumps(t->checks, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (checks == NULL)
        return DB_HARD_ERROR; /* not recorded: the lease expires and the gate runs again */
    struct db_gate_run_new run = {t->is_diag ? "diagnostics" : "gate",
                                  t->job.host_id,
                                  t->job.id,
                                  t->gctx.current_stack_id,
                                  t->gctx.pool_id,
                                  a->verdict,
                                  a->reason,
                                  checks,
                                  NULL,
                                  t->started_at,
                                  t->is_diag ? 0 : t->gctx.gate_version,
                                  t->is_diag ? t->gate.diag_level : 0,
                                  t->connect_ms};
    char run_id[37] = "";
    s = db_gate_run_insert(c, &run, run_id);
    free(checks);
    if (s < 0)
        return s;
    char reason[600];
    snprintf(reason, sizeof reason, "%s verdict %s: %s", t->is_diag ? "diagnostics" : "gate",
             a->verdict, a->reason);
    enum plan_host_event ev = plan_host_verdict_event(t->is_diag, a->verdict);
    if (ev == HE_GATE_ACCEPTED && !t->gctx.has_current_stack) {
        ev = HE_GATE_INVESTIGATE; /* gated against the desired stack: evidence only */
        snprintf(reason, sizeof reason,
                 "gate verdict accept on the desired stack, but provisioning has not succeeded: "
                 "provision the host, then gate it again");
    }
    s = host_event(c, t, ev, -1, reason, ev == HE_GATE_ACCEPTED ? run_id : NULL);
    if (s < 0)
        return s;
    return db_host_seen(c, t->job.host_id);
}

static void gate_finish(struct task *t)
{
    char reason[400];
    enum plan_verdict v = plan_gate_verdict(t->outs, t->nouts, reason, sizeof reason);
    if (t->timed_out_msg[0] && v == PLAN_ACCEPT)
        v = PLAN_INVESTIGATE; /* cannot happen (a timed-out check fails); fail closed anyway */
    struct gate_finish_arg a = {t, plan_verdict_names[v], reason, 0};
    enum db_status s = db_run_tx(gate_finish_fn, &a);
    if (s < 0)
        log_msg(LOG_ERROR, "job %s: could not record the verdict; its lease will expire", t->job.id);
    else if (!a.fenced_out)
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:s, s:s}", "msg", "gate verdict",
                                           "job_id", t->job.id, "host_id", t->job.host_id,
                                           "verdict", plan_verdict_names[v], "reason", reason));
    task_close(t);
}

static char *keep_output(const char *s)
{
    char *copy = strdup(s ? s : "");
    return copy;
}

static void gate_on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished) {
        free(t->cmd);
        t->cmd = NULL;
        return;
    }
    if (retry_query(t, r, gate_on_exec))
        return;
    int check = gate_check_at(t, t->check);
    int ran = r->err == PROV_SSH_OK;
    int i = t->cmd_i;
    free(t->res_out[i]);
    free(t->res_err[i]);
    t->res_out[i] = keep_output(r->out_tail);
    t->res_err[i] = keep_output(ran ? r->err_tail : r->message);
    int kept = t->res_out[i] != NULL && t->res_err[i] != NULL;
    t->res[i] = (struct prov_cmd_result){kept && ran && r->exit_status >= 0, r->exit_status,
                                         t->res_out[i] ? t->res_out[i] : "",
                                         t->res_err[i] ? t->res_err[i] : "out of memory"};
    t->check_command_ms += (double)(r->duration_us + (t->cmd_retried ? t->first_try_us : 0)) / 1000.0;
    int timed_out = exec_timed_out(r);
    if (timed_out)
        t->check_timed_out = 1;
    /* the command, for the job's step list */
    char msg[300];
    if (timed_out)
        timeout_message(t, r, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s command %d: %s", prov_check_names[check], i + 1,
                 ran ? "ran" : prov_ssh_err_name(r->err));
    int64_t took = r->duration_us + (t->cmd_retried ? t->first_try_us : 0);
    enum db_status s = record_step(
        t,
        (struct db_job_step){++t->cmd_no, "check", prov_check_names[check], t->cmd,
                             ran ? "ok" : "error", r->out_tail, r->err_tail, msg,
                             r->exit_status >= 0, r->exit_status, (double)took / 1000.0},
        r, prov_provision_nsteps);
    int was_query = t->cmd_class == PROV_CMD_QUERY;
    free(t->cmd);
    t->cmd = NULL;
    t->cmd_retried = 0;
    if (s == DB_NO_RESULTS) {
        task_lost(t, "recording a step found a newer attempt");
        return;
    }
    if (s < 0) {
        task_fail(t, "disconnected", "could not record a command's result", 1);
        return;
    }
    int ncmds = prov_check_ncmds(&t->gate, (enum prov_check)check);
    if (timed_out && was_query) {
        /* A query that timed out twice: the host does not answer. Record this check as
         * timed out and the rest as not run, then end with the evidence. */
        snprintf(t->timed_out_msg, sizeof t->timed_out_msg, "%s", msg);
        t->cmd_i = ncmds;
    } else if (!ran && !timed_out) {
        /* the session is gone: the remaining commands of this check cannot run */
        for (int k = i + 1; k < ncmds; k++)
            t->res[k] = (struct prov_cmd_result){0, -1, "", "not run"};
        t->cmd_i = ncmds;
    } else {
        t->cmd_i++;
    }
    if (t->cmd_i < ncmds) {
        gate_run_current(t);
        return;
    }
    struct prov_check_out o;
    int64_t p0 = util_mono_us();
    if (t->check_timed_out) {
        memset(&o, 0, sizeof o);
        o.status = PLAN_CHECK_TIMEOUT;
        if (t->timed_out_msg[0])
            snprintf(o.message, sizeof o.message, "%s", t->timed_out_msg);
        else
            snprintf(o.message, sizeof o.message, "a command exceeded its timeout (%d s)",
                     t->cmd_timeout_s);
    } else if (!kept) {
        memset(&o, 0, sizeof o);
        o.status = PLAN_CHECK_FAIL;
        snprintf(o.message, sizeof o.message, "out of memory keeping the command output");
    } else {
        prov_check_eval(&t->gate, (enum prov_check)check, t->res, ncmds, &o);
    }
    gate_record_check(t, check, &o, ncmds, (double)(util_mono_us() - p0) / 1000.0);
    json_decref(o.values);
    t->check++;
    t->cmd_i = 0;
    gate_run_current(t);
}

static void gate_run_current(struct task *t)
{
    while (t->check < gate_total(t)) {
        int check = gate_check_at(t, t->check);
        char why[160];
        if (t->cmd_i == 0) {
            t->check_command_ms = 0;
            t->check_timed_out = 0;
            for (int k = 0; k < GATE_MAX_CMDS; k++) {
                free(t->res_out[k]);
                free(t->res_err[k]);
                t->res_out[k] = t->res_err[k] = NULL;
            }
            int applies = prov_check_applies(&t->gate, (enum prov_check)check, why, sizeof why);
            if (!applies || t->timed_out_msg[0]) {
                struct prov_check_out o = {PLAN_CHECK_SKIP, 0, "", NULL};
                if (applies)
                    snprintf(o.message, sizeof o.message, "not run: an earlier query did not answer");
                else
                    snprintf(o.message, sizeof o.message, "%s", why);
                gate_record_check(t, check, &o, 0, 0);
                t->check++;
                continue;
            }
        }
        t->cmd = prov_check_cmd(&t->gate, (enum prov_check)check, t->cmd_i);
        if (t->cmd == NULL) {
            struct prov_check_out o = {PLAN_CHECK_FAIL, 0, "", NULL};
            snprintf(o.message, sizeof o.message, "a value failed validation while building the "
                                                  "command");
            gate_record_check(t, check, &o, 0, 0);
            t->check++;
            t->cmd_i = 0;
            continue;
        }
        enum prov_cmd_class k = prov_check_cmd_class(&t->gate, (enum prov_check)check, t->cmd_i);
        int own = check == PROV_CHECK_DIAGNOSTICS
                      ? t->w->cfg->diag_timeout_s[t->gate.diag_level - 1]
                      : prov_check_timeout(&t->gate, (enum prov_check)check, t->cmd_i);
        task_exec(t, k, own, gate_on_exec);
        return;
    }
    gate_finish(t);
}

static void gate_on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st,
                            void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (connected(t, st) == 0)
        gate_run_current(t);
}

static unsigned checks_mask(const json_t *arr)
{
    unsigned m = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        for (int k = 0; k < PROV_CHECK__COUNT; k++)
            if (json_string_value(v) && !strcmp(json_string_value(v), prov_check_names[k]))
                m |= 1u << k;
    }
    return m;
}

static void gate_start(struct task *t)
{
    t->is_gate = 1;
    t->is_diag = strcmp(t->job.kind, "diagnostics") == 0;
    t->checks = json_array();
    if (t->checks == NULL) {
        task_fail(t, "step_failed", "out of memory", 1);
        return;
    }
    util_rfc3339(util_now_us(), t->started_at, sizeof t->started_at);
    char reason[160];
    snprintf(reason, sizeof reason, "%s (job attempt %d)",
             t->is_diag ? "active diagnostics" : "acceptance gate", t->job.attempt);
    struct start_arg a = {t, t->is_diag ? HE_DIAGNOSTICS_STARTED : HE_GATE_STARTED, reason, 0, ""};
    enum db_status s = db_run_tx(gate_load_fn, &a);
    if (started(t, s, &a, "the host, its pool or its stack") != 0)
        return;
    if (t->gctx.current_stack_id == NULL || t->gctx.stack_doc == NULL) {
        task_fail(t, "step_failed", "the host has no current stack: provision it first", 0);
        return;
    }
    t->pool = json_loads(t->gctx.pool_spec ? t->gctx.pool_spec : "{}", 0, NULL);
    t->stack = json_loads(t->gctx.stack_doc, 0, NULL);
    char digest[80];
    t->image_ref = prov_image_ref(json_string_value(json_object_get(t->stack, "image")), digest,
                                  sizeof digest);
    if (t->pool == NULL || t->image_ref == NULL) {
        task_fail(t, "step_failed", "the pool or stack document does not pass validation", 0);
        return;
    }
    const json_t *gate = json_object_get(t->pool, "gate");
    const json_t *wl = json_object_get(gate, "workload");
    t->gate = (struct prov_gate){
        .image_ref = t->image_ref,
        .driver_version = json_string_value(json_object_get(t->stack, "driver_version")),
        .expected_gpus = (int)json_integer_value(json_object_get(t->pool, "gpu_count")),
        .expected_gpu_name = t->gctx.gpu_name,
        .expected_memory_mib = t->gctx.gpu_memory_mib,
        .na_fields = t->gctx.na_fields,
        .link_class = json_string_value(json_object_get(gate, "link_class")),
        .storage_min_mbps = json_number_value(json_object_get(gate, "storage_min_mbps")),
        .durable_path = t->host.durable_path,
        .scratch_path = t->host.scratch_path,
        .workload_command = json_object_get(wl, "command"),
        .workload_metric = json_string_value(json_object_get(wl, "metric")),
        .workload_min = json_number_value(json_object_get(wl, "min")),
        .workload_timeout_s = (int)json_integer_value(json_object_get(wl, "timeout_s")),
        .observability_url = json_string_value(json_object_get(gate, "observability_url")),
        .checks = checks_mask(json_object_get(gate, "checks")),
        .diag_level = t->gctx.diag_level >= 1 && t->gctx.diag_level <= 3 ? t->gctx.diag_level : 1,
    };
    task_connect(t, gate_on_connect);
}

/* ---- stop jobs ----
 * One remote command: the pool's stop_command as requested (kept in the job's params),
 * validated again here to [A-Za-z0-9 ._/=:-] and run as is — it is an operator-given
 * command line with its own arguments, not one value, so it is not quoted as one.
 * Before it is sent, step 1 (check) records the intent, so a later attempt knows the
 * command may have gone out; its result is step 1 (apply). The host is stopped when the
 * command exits 0, or when the session drops after the server accepted the exec request
 * (a host powering off closes it). A session that drops before that was no stop: the job
 * is retried. A retried stop whose earlier attempt may have sent the command checks first:
 * if the host still answers, it sends the command again; if it does not, the stop is
 * unconfirmed (the job fails stop_unconfirmed, the host becomes failed: still billed,
 * for a person to confirm). A non-zero exit fails the job (step_failed); a job that
 * finally fails or is cancelled returns the host to the state it had. */

static enum db_status stop_load_fn(struct db_conn *c, void *arg)
{
    struct start_arg *a = arg;
    struct task *t = a->t;
    db_host_target_free(&t->host);
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    char *doc = NULL;
    s = db_job_get(c, t->job.id, &doc);
    if (s <= 0)
        return s;
    json_t *job = json_loads(doc, 0, NULL);
    free(doc);
    if (job == NULL)
        return DB_HARD_ERROR;
    json_decref(t->stop_params);
    t->stop_params = json_incref(json_object_get(job, "params"));
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
    t->stop_maybe_sent = intent && !result;
    json_decref(job);
    snprintf(a->buf, sizeof a->buf, "stop requested by %s: %s (job attempt %d)",
             stop_str(t, "requested_by"), stop_str(t, "reason"), t->job.attempt);
    a->reason = a->buf;
    s = start_event(c, a);
    return s < 0 ? s : DB_ONE_RESULT;
}

static enum db_status stop_succeed_fn(struct db_conn *c, void *arg)
{
    struct finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = db_job_succeed(c, t->job.id, t->job.attempt);
    if (s == DB_NO_RESULTS) {
        a->fenced_out = 1;
        return s;
    }
    if (s < 0)
        return s;
    char reason[700];
    snprintf(reason, sizeof reason, "stopped by %s: %s", stop_str(t, "requested_by"),
             stop_str(t, "reason"));
    return host_event(c, t, HE_STOP_DONE, -1, reason, NULL);
}

static void stop_on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished) {
        free(t->cmd);
        t->cmd = NULL;
        return;
    }
    int ran = r->err == PROV_SSH_OK;
    int dropped = r->err == PROV_SSH_RESET || r->err == PROV_SSH_DISCONNECT;
    int ok = (ran && r->exit_status == 0) || (dropped && r->exec_sent);
    char msg[512];
    if (ran)
        snprintf(msg, sizeof msg, "the stop command exited %d", r->exit_status);
    else if (dropped && r->exec_sent)
        snprintf(msg, sizeof msg,
                 "the session dropped after the host accepted the stop command (%s: %s), as it "
                 "does when the host powers off",
                 prov_ssh_err_name(r->err), r->message);
    else if (dropped)
        snprintf(msg, sizeof msg,
                 "the session dropped before the stop command was sent (%s: %s); not stopped",
                 prov_ssh_err_name(r->err), r->message);
    else if (exec_timed_out(r))
        timeout_message(t, r, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s: %s", prov_ssh_err_name(r->err), r->message);
    enum db_status s = record_step(
        t,
        (struct db_job_step){1, "apply", "stop", t->cmd, ok ? "changed" : ran ? "failed" : "error",
                             r->out_tail, r->err_tail, msg, r->exit_status >= 0, r->exit_status,
                             (double)r->duration_us / 1000.0},
        r, 1);
    free(t->cmd);
    t->cmd = NULL;
    if (s == DB_NO_RESULTS) {
        task_lost(t, "recording the stop found a newer attempt");
        return;
    }
    if (s < 0) {
        task_fail(t, "disconnected", "could not record the stop command's result", 1);
        return;
    }
    if (!ok) {
        if (ran) {
            char err[600];
            snprintf(err, sizeof err, "step stop: %s", msg);
            task_fail(t, "step_failed", err, 0);
        } else if (dropped) {
            task_fail(t, "disconnected", msg, 1);
        } else {
            task_fail(t, prov_ssh_err_name(r->err), msg, prov_ssh_err_transient(r->err));
        }
        return;
    }
    struct finish_arg f = {t, NULL, NULL, 0, 0};
    s = db_run_tx(stop_succeed_fn, &f);
    if (s < 0)
        log_msg(LOG_ERROR, "job %s: could not record success; its lease will expire", t->job.id);
    else if (!f.fenced_out)
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:s}", "msg", "host stopped", "job_id",
                                           t->job.id, "host_id", t->job.host_id, "requested_by",
                                           stop_str(t, "requested_by")));
    task_close(t);
}

static void stop_on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st,
                            void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished)
        return;
    if (st->err != PROV_SSH_OK && t->stop_maybe_sent &&
        (st->err == PROV_SSH_REFUSED || st->err == PROV_SSH_TIMEOUT ||
         st->err == PROV_SSH_RESET || st->err == PROV_SSH_DISCONNECT)) {
        char err[600];
        snprintf(err, sizeof err,
                 "an earlier attempt may have sent the stop command and the host no longer "
                 "answers (%s: %.250s); whether it stopped is unconfirmed: check it with the "
                 "provider",
                 prov_ssh_err_name(st->err), st->message);
        task_fail(t, "stop_unconfirmed", err, 0);
        return;
    }
    if (connected(t, st) != 0)
        return;
    /* The intent first: a later attempt must know the command may have gone out. */
    char msg[200];
    snprintf(msg, sizeof msg, "%s",
             t->stop_maybe_sent ? "the host still answers after an earlier attempt; sending "
                                  "the stop command again"
                                : "sending the stop command");
    const char *cmd = stop_str(t, "command");
    enum db_status s =
        record_step(t, (struct db_job_step){1, "check", "stop", cmd, "ok", "", "", msg, 0, 0, 0.0},
                    NULL, 1);
    if (s == DB_NO_RESULTS) {
        task_lost(t, "recording the stop intent found a newer attempt");
        return;
    }
    if (s < 0) {
        task_fail(t, "disconnected", "could not record the stop intent", 1);
        return;
    }
    t->cmd = strdup(cmd);
    if (t->cmd == NULL) {
        task_fail(t, "disconnected", "out of memory", 1);
        return;
    }
    task_exec(t, PROV_CMD_STOP, 0, stop_on_exec);
}

static void stop_start(struct task *t)
{
    t->is_stop = 1;
    struct start_arg a = {t, HE_STOP_STARTED, "stop", 0, ""};
    enum db_status s = db_run_tx(stop_load_fn, &a);
    if (started(t, s, &a, "the host, its pool or the job") != 0)
        return;
    if (!prov_valid_stop_command(stop_str(t, "command"))) {
        task_fail(t, "step_failed", "the stop command is missing or does not pass validation", 0);
        return;
    }
    task_connect(t, stop_on_connect);
}
