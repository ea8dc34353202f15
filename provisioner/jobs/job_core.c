/* job_core.c — see job.h. What every job kind shares: the task's lifecycle and local lease
 * deadline, the one write chain (loads, contact, step records) and the write that ends a
 * task, the one connect path, commands with class timeouts and the query retry, and the
 * host state machine events of a job. (Claims and heartbeats: worker.c.)
 *
 * Leases: each task keeps a local lease deadline (claim or last successful heartbeat +
 * lease); no remote command starts after it, a failed heartbeat does not extend it, and
 * contact, step and finish writes are fenced by the attempt. A task whose lease lapsed
 * stops without another write; another worker takes the job over.
 *
 * Timeouts: every command has the timeout of its class (query, pull, workload, diag,
 * stop). A query that times out is retried once; a second timeout fails the job
 * timed_out, naming the command and the seconds.
 *
 * Writes: every database write of a task runs on the worker's writer threads. Its
 * continuation runs on the worker thread when the write has completed, so a task never
 * runs a command whose predecessor is not recorded, while the other tasks' sessions go on
 * meanwhile. The write that ends a task (success, verdict, failure, cancellation) is
 * written the same way: the task has closed its session and runs nothing after it, so
 * nothing waits on it but the log line and the task's memory. */
#include "common/netpolicy.h"
#include "provisioner/jobs/job.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "db/audit.h"
#include "db/credentials.h"
#include "provisioner/host_port.h"
#include "provisioner/jobs/gate_checks.h" /* prov_timeout_message */

/* ---- lifecycle and lease ---- */

void job_close(struct job_task *t)
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
int job_lease_live(const struct job_task *t)
{
    return util_mono_us() + LEASE_MARGIN_US < t->lease_deadline_us;
}

void job_lost(struct job_task *t, const char *why)
{
    if (t->finished)
        return;
    log_json_steal(LOG_WARN, json_pack("{s:s, s:s, s:s, s:i, s:s}", "msg", "lease lost; stopping",
                                       "job_id", t->job.id, "host_id", t->job.host_id, "attempt",
                                       t->job.attempt, "why", why));
    job_close(t);
}

static const char *actor(const struct job_task *t)
{
    return t->w->owner;
}

/* ---- the write chain ---- */

/* Frees what the chain's last write carried: a step's copies, a decrypted key. */
static void chain_clear(struct job_task *t)
{
    struct job_rec *k = &t->rec;
    free(k->command);
    free(k->out);
    free(k->err);
    free(k->msg);
    k->command = k->out = k->err = k->msg = NULL;
    crypt_secret_free(&t->cred.key);
}

static void chain_done(struct job_op *op)
{
    struct job_task *t = op->ctx;
    if (!t->finished) {
        t->then(t, op->status);
        return;
    }
    chain_clear(t);
    if (t->fin.deferred) { /* the write that ends the task waited for this one */
        t->fin.deferred = 0;
        job_writer_submit(t->w->writer, &t->end);
    }
}

void job_db(struct job_task *t, db_tx_fn fn, void *arg, int tx, job_then_fn then)
{
    assert(!t->op.busy); /* one chain write at a time */
    t->then = then;
    t->op = (struct job_op){.fn = fn, .arg = arg, .tx = tx, .done = chain_done, .ctx = t};
    job_writer_submit(t->w->writer, &t->op);
}

/* What a host printed is untrusted bytes: cut anywhere, NULs, invalid UTF-8. A step keeps
 * a cleaned copy of each tail (at most 8 KiB) and of the message (PostgreSQL, JSON and the
 * logs take valid UTF-8 only). The tails may hold NULs: their lengths come from the
 * engine's totals. */
static size_t tail_len(size_t total)
{
    return total < 8192 ? total : 8192;
}

static enum db_status rec_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    return db_job_step(c, t->job.id, t->job.attempt, &t->rec.st, t->rec.total);
}

static void rec_done(struct job_task *t, enum db_status s)
{
    const char *what = t->rec.what;
    chain_clear(t);
    char why[160];
    if (s == DB_NO_RESULTS) { /* a newer attempt owns the job */
        snprintf(why, sizeof why, "recording %s found a newer attempt", what);
        job_lost(t, why);
        return;
    }
    if (s < 0) { /* not recorded: nothing may follow a command whose result is unknown */
        snprintf(why, sizeof why, "could not record %s", what);
        job_fail(t, "disconnected", why, 1);
        return;
    }
    t->rec.next(t);
}

void job_record(struct job_task *t, const struct db_job_step *st,
                const struct prov_ssh_exec_result *r, int total, const char *what, job_next_fn next)
{
    struct job_rec *k = &t->rec;
    const char *out = st->stdout_tail ? st->stdout_tail : "";
    const char *err = st->stderr_tail ? st->stderr_tail : "";
    const char *msg = st->message ? st->message : "";
    size_t ol = r ? tail_len(r->out_total) : strlen(out);
    size_t el = r ? tail_len(r->err_total) : strlen(err);
    k->st = *st;
    k->total = total;
    k->what = what;
    k->next = next;
    k->out = utf8_dup_tail(out, st->stdout_tail ? ol : 0, 8192);
    k->err = utf8_dup_tail(err, st->stderr_tail ? el : 0, 8192);
    k->msg = utf8_dup(msg, strlen(msg), 1024);
    k->command = st->command ? strdup(st->command) : NULL;
    if (k->out == NULL || k->err == NULL || k->msg == NULL ||
        (st->command != NULL && k->command == NULL)) {
        rec_done(t, DB_HARD_ERROR); /* out of memory: not recorded */
        return;
    }
    k->st.command = k->command;
    k->st.stdout_tail = k->out;
    k->st.stderr_tail = k->err;
    k->st.message = k->msg;
    job_db(t, rec_fn, t, 0, rec_done); /* one statement: no BEGIN/COMMIT round trips */
}

/* ---- host events ---- */

/* The audit row of the worker's own act on the host (the pin recorded on first contact). */
static enum db_status audit_system(struct db_conn *c, const struct job_task *t, const char *action,
                                   int status, const char *after)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", t->job.id);
    struct db_audit_event ev = {.principal = actor(t),
                                .role = "system",
                                .action = action,
                                .resource_type = "host",
                                .resource_id = t->job.host_id,
                                .method = "WORKER",
                                .path = path,
                                .request_id = t->job.id,
                                .status = status,
                                .after = after};
    return db_audit_insert(c, &ev);
}

/* Applies ev through the service's one path (provisioner/host_port.h), as this worker, for
 * this job: the history names the job, the audit row (an isolating event's) its path. */
static enum db_status apply_event(struct db_conn *c, const struct job_task *t,
                                  enum plan_host_event ev, int hint, const char *reason,
                                  const char *gate_run_id, enum db_host_refusal *refused)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", t->job.id);
    struct actor who = actor_system(actor(t), path, t->job.id);
    struct host_change ch = {t->job.host_id, ev, hint, reason, t->job.id, gate_run_id, 0, NULL};
    return prov_host_apply(c, &who, &ch, refused, NULL);
}

enum db_status job_host_event(struct db_conn *c, const struct job_task *t, enum plan_host_event ev,
                              int hint, const char *reason, const char *gate_run_id)
{
    enum db_host_refusal refused;
    enum db_status s = apply_event(c, t, ev, hint, reason, gate_run_id, &refused);
    if (refused != DB_HOST_OK)
        log_msg(LOG_ERROR, "job %s: the host state machine refused %s (%s)", t->job.id,
                plan_host_events[ev].name,
                refused == DB_HOST_QUARANTINED ? "quarantined" : "not allowed");
    return s == DB_NO_RESULTS ? DB_ONE_RESULT : s; /* a deleted host: nothing to move */
}

/* The start transaction: the host, the kind's reads, then the "started" event; a
 * quarantined host refuses it (the job then fails host_quarantined and the host stays as
 * it is). */
static enum db_status load_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    t->load.quarantined = 0;
    db_host_target_free(&t->host);
    enum db_status s = db_host_target(c, t->job.host_id, &t->host);
    if (s <= 0)
        return s;
    s = t->load.reads(c, t);
    if (s <= 0)
        return s;
    enum db_host_refusal refused;
    s = apply_event(c, t, t->load.ev, -1, t->load.reason, NULL, &refused);
    if (refused != DB_HOST_OK) {
        t->load.quarantined = refused == DB_HOST_QUARANTINED;
        if (!t->load.quarantined)
            log_msg(LOG_ERROR, "job %s: the host state machine refused %s", t->job.id,
                    plan_host_events[t->load.ev].name);
    }
    return s < 0 ? s : DB_ONE_RESULT;
}

static void load_done(struct job_task *t, enum db_status s)
{
    if (t->load.quarantined) {
        job_fail(t, "host_quarantined", "the host is quarantined; an admin must release it first",
                 0);
        return;
    }
    if (s <= 0) {
        char err[200];
        snprintf(err, sizeof err, "%s %s",
                 s == DB_NO_RESULTS ? "no longer exists:" : "could not load", t->load.what);
        job_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed", err, s == DB_UNAVAILABLE);
        return;
    }
    t->load.next(t);
}

void job_load(struct job_task *t, enum plan_host_event ev, job_reads_fn reads, const char *what,
              job_next_fn next)
{
    t->load.ev = ev;
    t->load.reads = reads;
    t->load.what = what;
    t->load.next = next;
    job_db(t, load_fn, t, 1, load_done);
}

/* ---- the write that ends a task ---- */

static void end_done(struct job_op *op)
{
    struct job_task *t = op->ctx;
    if (op->status < 0)
        log_msg(LOG_ERROR, "job %s: could not record %s; its lease will expire", t->job.id,
                t->fin.unrecorded);
    else if (!t->fin.fenced_out && t->fin.logged != NULL)
        t->fin.logged(t);
}

static void submit_end(struct job_task *t, db_tx_fn fn, const char *unrecorded, job_next_fn logged)
{
    t->fin.unrecorded = unrecorded;
    t->fin.logged = logged;
    t->fin.fenced_out = 0;
    t->end = (struct job_op){.fn = fn, .arg = t, .tx = 1, .done = end_done, .ctx = t};
    /* Never beside a chain write of the same task (a load still filling t->host, say):
     * it goes once that one is done. */
    t->fin.deferred = t->op.busy;
    if (!t->fin.deferred)
        job_writer_submit(t->w->writer, &t->end);
}

void job_end(struct job_task *t, db_tx_fn fn, const char *unrecorded, job_next_fn logged)
{
    if (t->finished)
        return;
    job_close(t);
    submit_end(t, fn, unrecorded, logged);
}

enum db_status job_mark_done(struct db_conn *c, struct job_task *t, const char *error_class,
                             const char *error)
{
    enum db_status s = error_class != NULL
                           ? db_job_fail(c, t->job.id, t->job.attempt, error_class, error)
                           : db_job_succeed(c, t->job.id, t->job.attempt);
    t->fin.fenced_out = s == DB_NO_RESULTS;
    return s;
}

void job_finish(struct job_task *t)
{
    if (!t->finished)
        t->kind->finish(t);
}

static enum db_status fail_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    const char *error_class = t->fin.error_class;
    enum db_status s;
    int retry = t->fin.transient && t->job.attempt < t->job.max_attempts;
    if (retry) {
        int backoff = 1 << (t->job.attempt < 6 ? t->job.attempt : 6); /* 2, 4, 8 … 64 s */
        s = db_job_requeue(c, t->job.id, t->job.attempt, backoff, error_class, t->fin.error);
        t->fin.fenced_out = s == DB_NO_RESULTS;
        return s;
    }
    s = job_mark_done(c, t, error_class, t->fin.error);
    if (s <= 0)
        return s;
    char reason[512];
    snprintf(reason, sizeof reason, "%s failed (%s): %s", t->kind->what, error_class, t->fin.error);
    if (!strcmp(error_class, "host_key_mismatch"))
        return job_host_event(c, t, HE_KEY_MISMATCH, -1, reason, NULL);
    if (!strcmp(error_class, "host_quarantined"))
        return s; /* the state machine refused to start: the host stays as it is */
    int hint;
    enum plan_host_event ev = t->kind->end_event(t, error_class, &hint);
    return job_host_event(c, t, ev, hint, reason, NULL);
}

void job_fail(struct job_task *t, const char *error_class, const char *error_raw, int transient)
{
    if (t->finished)
        return;
    /* may quote what the host printed: stored and logged only cleaned */
    char error[1024];
    utf8_clean(error_raw ? error_raw : "", strlen(error_raw ? error_raw : ""), error, sizeof error);
    free(t->fin.error);
    t->fin.error = strdup(error);
    if (t->fin.error == NULL) { /* out of memory: the lease will expire, another attempt runs */
        job_close(t);
        return;
    }
    t->fin.error_class = error_class;
    t->fin.transient = transient;
    log_json_steal(LOG_WARN,
                   json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:b}", "msg", "job failed", "job_id",
                             t->job.id, "host_id", t->job.host_id, "attempt", t->job.attempt,
                             "error_class", error_class, "error", t->fin.error, "will_retry",
                             transient && t->job.attempt < t->job.max_attempts));
    job_end(t, fail_fn, "the failure", NULL);
}

static enum db_status cancelled_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    enum db_status s = db_job_cancelled(c, t->job.id, t->job.attempt);
    if (s <= 0)
        return s;
    char reason[64];
    snprintf(reason, sizeof reason, "%s cancelled", t->kind->what);
    int hint;
    enum plan_host_event ev = t->kind->end_event(t, NULL, &hint);
    return job_host_event(c, t, ev, hint, reason, NULL);
}

void job_cancel(struct job_task *t)
{
    job_end(t, cancelled_fn, "the cancellation", NULL);
}

/* ---- commands ---- */

/* Seconds a command of class k may run: the class's setting, at most
 * GPUFLEET_SSH_COMMAND_TIMEOUT; the pool's workload timeout and the diagnostics level's
 * are their own. */
static int class_timeout(const struct job_task *t, enum prov_cmd_class k, int own_s)
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

int job_timed_out(const struct prov_ssh_exec_result *r)
{
    return r->timed_out || r->err == PROV_SSH_TIMEOUT;
}

/* A query that timed out for the first time runs once more (not recorded twice: the
 * retry's record says so). Returns 1 when it was restarted (or the task ended trying). */
static int retry_query(struct job_task *t, const struct prov_ssh_exec_result *r)
{
    if (!job_timed_out(r) || t->cmd_class != PROV_CMD_QUERY || t->cmd_retried)
        return 0;
    t->cmd_retried = 1;
    t->first_try_us = r->duration_us;
    log_json_steal(LOG_WARN,
                   json_pack("{s:s, s:s, s:s, s:i}", "msg",
                             "a query timed out; running it once more", "job_id", t->job.id,
                             "host_id", t->job.host_id, "timeout_s", t->cmd_timeout_s));
    job_exec(t, t->cmd_class, t->cmd_timeout_s);
    return 1;
}

static void core_on_exec(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r, void *ctx)
{
    (void)c;
    struct job_task *t = ctx;
    if (!t->finished && retry_query(t, r))
        return;
    if (!t->finished)
        t->kind->on_exec(t, r);
    free(t->cmd);
    t->cmd = NULL;
    t->cmd_retried = 0;
}

int job_exec(struct job_task *t, enum prov_cmd_class k, int own_s)
{
    if (!job_lease_live(t)) {
        free(t->cmd);
        t->cmd = NULL;
        job_lost(t, "the lease deadline passed before the next command");
        return -1;
    }
    t->cmd_class = k;
    t->cmd_timeout_s = class_timeout(t, k, own_s);
    if (t->conn == NULL ||
        prov_ssh_exec(t->conn, t->cmd, t->cmd_timeout_s * 1000, core_on_exec, t) != 0) {
        free(t->cmd);
        t->cmd = NULL;
        job_fail(t, "disconnected", "the SSH session closed", 1);
        return -1;
    }
    return 0;
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

void job_timeout_message(const struct job_task *t, const struct prov_ssh_exec_result *r, char *buf,
                         size_t n)
{
    char m[200];
    const char *cmd = t->cmd ? t->cmd : "";
    if (r != NULL)
        cmd = hung_part(cmd, r->out_tail, tail_len(r->out_total));
    prov_timeout_message(m, sizeof m, cmd, t->cmd_timeout_s);
    snprintf(buf, n, "%s%s", m, t->cmd_retried ? " (tried twice)" : "");
}

/* ---- connecting ---- */

static void core_on_connect(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st,
                            void *ctx)
{
    (void)c;
    struct job_task *t = ctx;
    if (!t->finished)
        t->kind->on_connect(t, st);
}

static enum db_status cred_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    crypt_secret_free(&t->cred.key);
    t->cred.decrypt_failed = 0;
    t->cred.err[0] = '\0';
    return db_credential_load(c, t->host.credential_id, &t->cred.key, &t->cred.decrypt_failed,
                              t->cred.err, sizeof t->cred.err);
}

static void cred_done(struct job_task *t, enum db_status s)
{
    const struct prov_worker_config *cfg = t->w->cfg;
    if (s <= 0) {
        job_fail(t, s == DB_UNAVAILABLE ? "disconnected" : "step_failed",
                 t->cred.decrypt_failed ? t->cred.err
                 : s == DB_NO_RESULTS   ? "the host's credential no longer exists"
                                        : "could not load the credential",
                 s == DB_UNAVAILABLE);
        chain_clear(t);
        return;
    }
    struct prov_ssh_target target = {
        .address = t->host.address,
        .port = t->host.port,
        .user = t->host.user,
        .private_key = (const char *)t->cred.key.data,
        .private_key_len = t->cred.key.len,
        .pinned_host_key_sha256 = t->host.host_key_sha256,
        .connect_timeout_ms = cfg->connect_timeout_s * 1000,
        .handshake_timeout_ms = cfg->connect_timeout_s * 2000,
        .auth_timeout_ms = cfg->connect_timeout_s * 2000,
    };
    t->connect_started_us = util_mono_us();
    t->conn = prov_ssh_connect(t->w->loop, &target, core_on_connect, t);
    chain_clear(t); /* the engine keeps its own copy of the key, wiped on close */
    if (t->conn == NULL)
        job_fail(t, "disconnected", "out of memory opening the SSH session", 1);
}

void job_connect(struct job_task *t)
{
    enum net_target_verdict v = net_ssh_target(t->host.address, t->w->cfg->allow_cidrs);
    if (v != NET_TARGET_OK) {
        job_fail(t, "address_not_allowed", net_target_why(v), 0);
        return;
    }
    if (!job_lease_live(t)) {
        job_lost(t, "the lease deadline passed before connecting");
        return;
    }
    job_db(t, cred_fn, t, 0, cred_done);
}

static enum db_status contact_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    int pinned = 0;
    enum db_status s = db_host_contact(c, t->job.host_id, t->contact.host_key_sha256, t->job.id,
                                       t->job.attempt, &pinned);
    t->contact.live = s == DB_ONE_RESULT;
    if (s == DB_ONE_RESULT && pinned) {
        /* the row names the key learned (SHA256:<43 base64>, from the SSH engine: nothing
         * to escape) */
        char after[128];
        snprintf(after, sizeof after, "{\"host_key_sha256\": \"%s\", \"trust_on_first_use\": true}",
                 t->contact.host_key_sha256);
        s = audit_system(c, t, "host.key_recorded", 200, after);
    }
    return s;
}

static void contact_done(struct job_task *t, enum db_status s)
{
    if (s < 0) {
        job_fail(t, "disconnected", "could not record contact with the host", 1);
        return;
    }
    if (!t->contact.live) {
        job_lost(t, "recording contact found a newer attempt");
        return;
    }
    t->contact.next(t);
}

void job_contact(struct job_task *t, const struct prov_ssh_conn_status *st, job_next_fn next)
{
    t->connect_ms = (double)(util_mono_us() - t->connect_started_us) / 1000.0;
    if (st->err != PROV_SSH_OK) {
        job_fail(t, prov_ssh_err_name(st->err), st->message, prov_ssh_err_transient(st->err));
        return;
    }
    if (!job_lease_live(t)) {
        job_lost(t, "the lease deadline passed while connecting");
        return;
    }
    /* First contact without a pin: record the key (with an audit event); otherwise the
     * engine has already compared it with the pin. */
    snprintf(t->contact.host_key_sha256, sizeof t->contact.host_key_sha256, "%s",
             st->host_key_sha256);
    t->contact.live = 0;
    t->contact.next = next;
    job_db(t, contact_fn, t, 1, contact_done);
}

/* ---- tasks ---- */

static const struct job_kind *const job_kinds[] = {
    &job_kind_provision, &job_kind_gate, &job_kind_diagnostics, &job_kind_stop, &job_kind_drill};

struct job_task *job_task_new(struct job_worker *w, const struct db_job_claim *cl,
                              int64_t claimed_us)
{
    /* A kind this worker does not run fails at once; its host is moved as for a
     * provisioning. */
    const struct job_kind *k = &job_kind_provision;
    int unknown = 1;
    for (size_t i = 0; i < sizeof job_kinds / sizeof job_kinds[0]; i++) {
        if (!strcmp(cl->kind, job_kinds[i]->kind)) {
            k = job_kinds[i];
            unknown = 0;
        }
    }
    struct job_task *t = calloc(1, k->size);
    if (t == NULL)
        return NULL; /* the lease will expire and another attempt will run */
    t->unknown = unknown;
    int64_t lease_us = (int64_t)w->cfg->lease_s * 1000000;
    t->w = w;
    t->kind = k;
    t->job = *cl;
    t->next_heartbeat_us = util_mono_us() + lease_us / 3;
    t->lease_deadline_us = claimed_us + lease_us;
    return t;
}

void job_task_start(struct job_task *t)
{
    if (t->unknown)
        job_fail(t, "step_failed", "this worker does not run this kind of job", 0);
    else
        t->kind->start(t);
}

int job_task_reapable(const struct job_task *t)
{
    return t->finished && t->conn == NULL && t->cmd == NULL && !t->op.busy && !t->hb.busy &&
           !t->end.busy && !t->fin.deferred;
}

void job_task_free(struct job_task *t)
{
    chain_clear(t);
    t->kind->release(t);
    free(t->fin.error);
    free(t->cmd);
    db_host_target_free(&t->host);
    free(t);
}
