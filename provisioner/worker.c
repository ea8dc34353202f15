/* worker.c — see worker.h. Per job, a small state machine:
 *   start → (load host, stack, credential; check address) → connect → host key pinned or
 *   recorded → step 1 check [→ apply] → … → step n → finish (fenced transaction).
 * Every command's result is recorded before the next one runs. A lost lease (the
 * heartbeat finds a newer attempt) stops the job here without another write. */
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
    int phase; /* 0 check, 1 apply */
    char *cmd; /* the command running now (recorded with its result) */
    int64_t next_heartbeat_us;
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
    json_t *checks;        /* results so far */
    char started_at[40];
    /* stop jobs */
    int is_stop;
    json_t *stop_params;   /* the job's params: reason, requested_by, command, previous_state */
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
};

static enum db_status step_fn(struct db_conn *c, void *arg)
{
    struct step_arg *a = arg;
    return db_job_step(c, a->t->job.id, a->t->job.attempt, &a->s, prov_provision_nsteps);
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

/* Where a host goes when its stop fails or is cancelled: back to the state it had when
 * the stop was requested, if that was a resting state; from a state that belonged to a
 * job a forced stop cut short (provisioning, gating, diagnosing, draining) to failed. */
static const char *stop_back_state(const struct task *t)
{
    static const char *const rest[] = {"registered",    "provisioned", "ready", "investigating",
                                       "quarantined",   "drained",     "failed"};
    const char *prev = stop_str(t, "previous_state");
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
        if (!strcmp(prev, rest[i]))
            return rest[i];
    return "failed";
}

static const char *job_what(const struct task *t)
{
    return t->is_stop ? "stop" : t->is_gate ? t->job.kind : "provisioning";
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
    s = db_host_provisioned(c, t->job.host_id, facts ? facts : "{}", t->job.stack_id);
    free(facts);
    if (s < 0)
        return s;
    return db_host_set_state(c, t->job.host_id, "provisioned",
                             "provisioning succeeded; the host needs the acceptance gate",
                             t->job.id, actor(t));
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
    int quarantine = strcmp(a->error_class, "host_key_mismatch") == 0;
    char reason[512];
    snprintf(reason, sizeof reason, "%s failed (%s): %s", job_what(t), a->error_class, a->error);
    const char *to = quarantine    ? "quarantined"
                     : t->is_stop  ? stop_back_state(t)
                     : !t->is_gate ? "failed"
                     : t->is_diag  ? "drained"
                                   : "investigating";
    s = db_host_set_state(c, t->job.host_id, to, reason, t->job.id, actor(t));
    if (s >= 0 && quarantine)
        s = audit_system(c, t, "host.quarantine", 409);
    return s;
}

static enum db_status cancelled_fn(struct db_conn *c, void *arg)
{
    struct finish_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = db_job_cancelled(c, t->job.id, t->job.attempt);
    if (s <= 0)
        return s;
    const char *to = t->is_stop    ? stop_back_state(t)
                     : !t->is_gate ? "failed"
                     : t->is_diag  ? "drained"
                                   : "investigating";
    char reason[64];
    snprintf(reason, sizeof reason, "%s cancelled", job_what(t));
    return db_host_set_state(c, t->job.host_id, to, reason, t->job.id, actor(t));
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

static void task_fail(struct task *t, const char *error_class, const char *error, int transient)
{
    if (t->finished)
        return;
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

static void run_current(struct task *t);

static enum prov_verdict evaluate(struct task *t, const struct prov_ssh_exec_result *r,
                                  char *msg, size_t n)
{
    const struct prov_step_def *d = &prov_provision_steps[t->step];
    struct prov_cmd_result cr = {r->err == PROV_SSH_OK && r->exit_status >= 0, r->exit_status,
                                 r->out_tail, r->err_tail};
    return t->phase == 0 ? d->check_eval(&t->prov, &cr, msg, n)
                         : d->apply_eval(&t->prov, &cr, msg, n);
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
    const struct prov_step_def *d = &prov_provision_steps[t->step];
    char msg[512] = "";
    enum prov_verdict v = PROV_FAIL;
    int ran = r->err == PROV_SSH_OK;
    if (ran)
        v = evaluate(t, r, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s: %s", prov_ssh_err_name(r->err), r->message);
    const char *outcome = !ran                ? "error"
                          : v == PROV_FAIL    ? "failed"
                          : t->phase == 1     ? "changed"
                          : v == PROV_APPLY   ? "needs_apply"
                                              : "ok";
    struct step_arg a = {t,
                         {t->step + 1, t->phase ? "apply" : "check", d->name, t->cmd, outcome,
                          r->out_tail, r->err_tail, msg, r->exit_status >= 0, r->exit_status,
                          (double)r->duration_us / 1000.0}};
    enum db_status s = db_run_tx(step_fn, &a);
    free(t->cmd);
    t->cmd = NULL;
    if (s == DB_NO_RESULTS) { /* a newer attempt owns the job */
        log_msg(LOG_WARN, "job %s attempt %d: lease lost; stopping", t->job.id, t->job.attempt);
        task_close(t);
        return;
    }
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
    t->cmd = t->phase == 0 ? d->check_cmd(&t->prov) : d->apply_cmd(&t->prov);
    if (t->cmd == NULL) {
        task_fail(t, "step_failed", "a value failed validation while building the command", 0);
        return;
    }
    if (t->conn == NULL ||
        prov_ssh_exec(t->conn, t->cmd, t->w->cfg->command_timeout_s * 1000, on_exec, t) != 0) {
        free(t->cmd);
        t->cmd = NULL;
        task_fail(t, "disconnected", "the SSH session closed", 1);
    }
}

struct pin_arg {
    struct task *t;
    const char *sha256;
};

static enum db_status pin_fn(struct db_conn *c, void *arg)
{
    struct pin_arg *a = arg;
    enum db_status s = db_host_pin_key(c, a->t->job.host_id, a->sha256);
    if (s == DB_ONE_RESULT)
        s = audit_system(c, a->t, "host.key_recorded", 200);
    if (s >= 0)
        s = db_host_seen(c, a->t->job.host_id);
    return s;
}

static void on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished)
        return;
    if (st->err != PROV_SSH_OK) {
        task_fail(t, prov_ssh_err_name(st->err), st->message, prov_ssh_err_transient(st->err));
        return;
    }
    /* First contact without a pin: record the key (with an audit event); otherwise the
     * engine has already compared it with the pin. */
    struct pin_arg a = {t, st->host_key_sha256};
    if (db_run_tx(pin_fn, &a) < 0) {
        task_fail(t, "disconnected", "could not record contact with the host", 1);
        return;
    }
    run_current(t);
}

struct load_arg {
    struct task *t;
    char *stack_doc;
};

static enum db_status load_fn(struct db_conn *c, void *arg)
{
    struct load_arg *a = arg;
    struct task *t = a->t;
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    s = db_stack_get(c, t->job.stack_id, &a->stack_doc);
    if (s <= 0)
        return s;
    char reason[160];
    snprintf(reason, sizeof reason, "provisioning (job attempt %d)", t->job.attempt);
    s = db_host_set_state(c, t->job.host_id, "provisioning", reason, t->job.id, actor(t));
    return s < 0 ? s : DB_ONE_RESULT; /* unchanged state (a retry) is fine */
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

static void task_start(struct worker *w, const struct db_job_claim *cl)
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
    struct load_arg a = {t, NULL};
    enum db_status s = db_run_tx(load_fn, &a);
    if (s <= 0) {
        free(a.stack_doc);
        task_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed",
                  s == DB_NO_RESULTS ? "the host or stack no longer exists"
                                     : "could not load the host or stack",
                  s == DB_UNAVAILABLE);
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

/* Heartbeats and cancellation; reaps finished tasks. */
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
            c = db_acquire(&s);
            if (c != NULL) {
                s = db_job_heartbeat(c, t->job.id, t->job.attempt, w->cfg->lease_s, &cancel);
                db_release(c);
            }
            t->next_heartbeat_us = now + (int64_t)w->cfg->lease_s * 1000000 / 3;
            if (s == DB_NO_RESULTS) {
                log_msg(LOG_WARN, "job %s attempt %d: lease lost", t->job.id, t->job.attempt);
                task_close(t);
            } else if (cancel) {
                struct finish_arg a = {t, NULL, NULL, 0, 0};
                db_run_tx(cancelled_fn, &a);
                task_close(t);
            }
        }
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
    c = db_acquire(&s);
    if (c == NULL)
        return 0;
    s = db_job_claim(c, w->owner, w->cfg->lease_s, room, claims, &n);
    db_release(c);
    for (int i = 0; i < n; i++) {
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:i}", "msg", "job claimed", "job_id",
                                           claims[i].id, "worker", w->owner, "attempt",
                                           claims[i].attempt));
        task_start(w, &claims[i]);
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
    return nworkers == config.threads ? 0 : -1;
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
    struct task *t = arg;
    db_gate_context_free(&t->gctx);
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    s = db_gate_context(c, t->job.host_id, t->job.id, &t->gctx);
    if (s <= 0)
        return s;
    char reason[160];
    snprintf(reason, sizeof reason, "%s (job attempt %d)",
             t->is_diag ? "active diagnostics" : "acceptance gate", t->job.attempt);
    s = db_host_set_state(c, t->job.host_id, t->is_diag ? "diagnosing" : "gating", reason,
                          t->job.id, actor(t));
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

/* Evidence: the check's command outputs, capped at GATE_EVIDENCE_MAX. */
static json_t *evidence(const struct task *t, int n)
{
    struct sbuf b;
    sbuf_init(&b, 1024);
    for (int i = 0; i < n; i++) {
        if (t->res_out[i] && *t->res_out[i])
            sbuf_adds(&b, t->res_out[i]);
        if (t->res_err[i] && *t->res_err[i]) {
            sbuf_adds(&b, "[stderr] ");
            sbuf_adds(&b, t->res_err[i]);
        }
    }
    size_t len = 0;
    char *text = sbuf_take(&b, &len);
    json_t *e;
    if (text == NULL)
        return json_string("");
    if (len > GATE_EVIDENCE_MAX) /* keep the tail, at a UTF-8 boundary */ {
        const char *p = text + len - GATE_EVIDENCE_MAX;
        while ((*p & 0xC0) == 0x80)
            p++;
        e = json_string(p);
    } else {
        e = json_string(text);
    }
    free(text);
    return e ? e : json_string("(evidence is not valid UTF-8)");
}

static void gate_record_check(struct task *t, int check, const struct prov_check_out *o,
                              int ncmds, double parse_ms)
{
    double command_ms = t->check_command_ms;
    json_t *entry = json_pack(
        "{s:s, s:s, s:b, s:s, s:o, s:o, s:f, s:{s:f, s:f}}", "name", prov_check_names[check],
        "status", plan_check_status_names[o->status], "hardware_evidence", o->hardware_evidence,
        "message", o->message, "evidence", evidence(t, ncmds), "values",
        o->values ? json_incref(o->values) : json_null(), "duration_ms",
        command_ms + parse_ms, "phases", "command_ms", command_ms, "parse_ms", parse_ms);
    if (entry != NULL)
        json_array_append_new(t->checks, entry);
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
    enum db_status s = db_job_succeed(c, t->job.id, t->job.attempt);
    if (s == DB_NO_RESULTS) {
        a->fenced_out = 1;
        return s;
    }
    if (s < 0)
        return s;
    char *checks = json_dumps(t->checks, JSON_COMPACT | JSON_REAL_PRECISION(10));
    struct db_gate_run_new run = {t->is_diag ? "diagnostics" : "gate",
                                  t->job.host_id,
                                  t->job.id,
                                  t->gctx.current_stack_id,
                                  t->gctx.pool_id,
                                  a->verdict,
                                  a->reason,
                                  checks ? checks : "[]",
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
    s = db_host_gate_result(c, t->job.host_id, t->is_diag ? "diagnostics" : "gate", a->verdict,
                            run_id, t->job.id, reason, actor(t));
    if (s >= 0 && strcmp(a->verdict, "isolate") == 0)
        s = audit_system(c, t, "host.quarantine", 200);
    return s;
}

static void gate_finish(struct task *t)
{
    struct plan_check_outcome outs[PROV_CHECK__COUNT];
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(t->checks, i, e)
    {
        if (n == PROV_CHECK__COUNT)
            break;
        const char *st = json_string_value(json_object_get(e, "status"));
        outs[n].name = json_string_value(json_object_get(e, "name"));
        outs[n].status = PLAN_CHECK_PASS;
        for (int k = 0; k < 5; k++)
            if (st && !strcmp(st, plan_check_status_names[k]))
                outs[n].status = (enum plan_check_status)k;
        outs[n].hardware_evidence = json_is_true(json_object_get(e, "hardware_evidence"));
        n++;
    }
    char reason[400];
    enum plan_verdict v = plan_gate_verdict(outs, n, reason, sizeof reason);
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

static void gate_on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished) {
        free(t->cmd);
        t->cmd = NULL;
        return;
    }
    int check = gate_check_at(t, t->check);
    int ran = r->err == PROV_SSH_OK;
    int i = t->cmd_i;
    free(t->res_out[i]);
    free(t->res_err[i]);
    t->res_out[i] = strdup(r->out_tail);
    t->res_err[i] = strdup(ran ? r->err_tail : r->message);
    t->res[i] = (struct prov_cmd_result){ran && r->exit_status >= 0, r->exit_status, t->res_out[i],
                                         t->res_err[i]};
    t->check_command_ms += (double)r->duration_us / 1000.0;
    if (r->timed_out || r->err == PROV_SSH_TIMEOUT)
        t->check_timed_out = 1;
    /* the command, for the job's step list */
    char msg[300];
    snprintf(msg, sizeof msg, "%s command %d: %s", prov_check_names[check], i + 1,
             ran ? "ran" : prov_ssh_err_name(r->err));
    struct step_arg sa = {t,
                          {++t->cmd_no, "check", prov_check_names[check], t->cmd,
                           ran ? "ok" : "error", r->out_tail, r->err_tail, msg,
                           r->exit_status >= 0, r->exit_status, (double)r->duration_us / 1000.0}};
    enum db_status s = db_run_tx(step_fn, &sa);
    free(t->cmd);
    t->cmd = NULL;
    if (s == DB_NO_RESULTS) {
        log_msg(LOG_WARN, "job %s attempt %d: lease lost; stopping", t->job.id, t->job.attempt);
        task_close(t);
        return;
    }
    int ncmds = prov_check_ncmds(&t->gate, (enum prov_check)check);
    if (!ran && !t->check_timed_out && r->err != PROV_SSH_OK) {
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
        snprintf(o.message, sizeof o.message, "a command exceeded its timeout");
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
            if (!prov_check_applies(&t->gate, (enum prov_check)check, why, sizeof why)) {
                struct prov_check_out o = {PLAN_CHECK_SKIP, 0, "", NULL};
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
        int timeout = prov_check_timeout(&t->gate, (enum prov_check)check, t->cmd_i);
        if (check == PROV_CHECK_DIAGNOSTICS)
            timeout = t->w->cfg->diag_timeout_s[t->gate.diag_level - 1];
        if (timeout <= 0)
            timeout = t->w->cfg->command_timeout_s;
        if (t->conn == NULL || prov_ssh_exec(t->conn, t->cmd, timeout * 1000, gate_on_exec, t) != 0) {
            free(t->cmd);
            t->cmd = NULL;
            task_fail(t, "disconnected", "the SSH session closed", 1);
        }
        return;
    }
    gate_finish(t);
}

static void gate_on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st,
                            void *ctx)
{
    (void)c;
    struct task *t = ctx;
    if (t->finished)
        return;
    t->connect_ms = (double)(util_mono_us() - t->connect_started_us) / 1000.0;
    if (st->err != PROV_SSH_OK) {
        task_fail(t, prov_ssh_err_name(st->err), st->message, prov_ssh_err_transient(st->err));
        return;
    }
    struct pin_arg a = {t, st->host_key_sha256};
    if (db_run_tx(pin_fn, &a) < 0) {
        task_fail(t, "disconnected", "could not record contact with the host", 1);
        return;
    }
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
    util_rfc3339(util_now_us(), t->started_at, sizeof t->started_at);
    enum db_status s = db_run_tx(gate_load_fn, t);
    if (s <= 0) {
        task_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed",
                  "could not load the host, its pool or its stack", s == DB_UNAVAILABLE);
        return;
    }
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
 * command line with its own arguments, not one value, so it is not quoted as one. It is
 * recorded as step 1 (name stop, phase apply). Exit 0 → the host is stopped; so is a
 * session that drops while the command runs (a host powering off closes it). A non-zero
 * exit fails the job (step_failed); connection errors retry as usual; a job that finally
 * fails or is cancelled returns the host to stop_back_state(). */

static enum db_status stop_load_fn(struct db_conn *c, void *arg)
{
    struct task *t = arg;
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
    json_decref(t->stop_params);
    t->stop_params = json_incref(json_object_get(job, "params"));
    json_decref(job);
    char reason[700];
    snprintf(reason, sizeof reason, "stop requested by %s: %s (job attempt %d)",
             stop_str(t, "requested_by"), stop_str(t, "reason"), t->job.attempt);
    s = db_host_set_state(c, t->job.host_id, "stopping", reason, t->job.id, actor(t));
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
    return db_host_set_state(c, t->job.host_id, "stopped", reason, t->job.id, actor(t));
}

static enum db_status stop_step_fn(struct db_conn *c, void *arg)
{
    struct step_arg *a = arg;
    return db_job_step(c, a->t->job.id, a->t->job.attempt, &a->s, 1);
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
    int ok = (ran && r->exit_status == 0) || dropped;
    char msg[512];
    if (ran)
        snprintf(msg, sizeof msg, "the stop command exited %d", r->exit_status);
    else if (dropped)
        snprintf(msg, sizeof msg,
                 "the session dropped while the stop command ran (%s: %s), as it does when the "
                 "host powers off",
                 prov_ssh_err_name(r->err), r->message);
    else
        snprintf(msg, sizeof msg, "%s: %s", prov_ssh_err_name(r->err), r->message);
    struct step_arg a = {t,
                         {1, "apply", "stop", t->cmd, ok ? "changed" : ran ? "failed" : "error",
                          r->out_tail, r->err_tail, msg, r->exit_status >= 0, r->exit_status,
                          (double)r->duration_us / 1000.0}};
    enum db_status s = db_run_tx(stop_step_fn, &a);
    free(t->cmd);
    t->cmd = NULL;
    if (s == DB_NO_RESULTS) {
        log_msg(LOG_WARN, "job %s attempt %d: lease lost; stopping", t->job.id, t->job.attempt);
        task_close(t);
        return;
    }
    if (!ok) {
        if (ran) {
            char err[600];
            snprintf(err, sizeof err, "step stop: %s", msg);
            task_fail(t, "step_failed", err, 0);
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
    if (st->err != PROV_SSH_OK) {
        task_fail(t, prov_ssh_err_name(st->err), st->message, prov_ssh_err_transient(st->err));
        return;
    }
    struct pin_arg a = {t, st->host_key_sha256};
    if (db_run_tx(pin_fn, &a) < 0) {
        task_fail(t, "disconnected", "could not record contact with the host", 1);
        return;
    }
    t->cmd = strdup(stop_str(t, "command"));
    if (t->cmd == NULL || t->conn == NULL ||
        prov_ssh_exec(t->conn, t->cmd, t->w->cfg->command_timeout_s * 1000, stop_on_exec, t) != 0) {
        free(t->cmd);
        t->cmd = NULL;
        task_fail(t, "disconnected", "the SSH session closed", 1);
    }
}

static void stop_start(struct task *t)
{
    t->is_stop = 1;
    enum db_status s = db_run_tx(stop_load_fn, t);
    if (s <= 0) {
        task_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed",
                  "could not load the host, its pool or the job", s == DB_UNAVAILABLE);
        return;
    }
    if (!prov_valid_stop_command(stop_str(t, "command"))) {
        task_fail(t, "step_failed", "the stop command is missing or does not pass validation", 0);
        return;
    }
    task_connect(t, stop_on_connect);
}
