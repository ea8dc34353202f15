/* job.h — the job worker's core, shared by the job kinds (job_provision.c, job_gate.c,
 * job_stop.c) and the worker threads (worker.c). Internal to provisioner/.
 *
 * A job kind is one small table of functions (struct job_kind). Its state is its own
 * struct, whose first member is the core's struct job_task; the core allocates
 * kind->size bytes per claimed job and hands the kind a struct job_task *.
 *
 * Per job: kind->start loads what the job needs and applies its "started" event
 * (job_load), then connects (job_connect); kind->on_connect gets the session's outcome
 * and records the contact (job_contact); then the kind runs one command at a time
 * (job_exec), and kind->on_exec gets each result, records it (job_record) and goes on
 * from there; kind->finish writes the outcome (job_end). A job that ends otherwise fails
 * (job_fail), is cancelled, or stops without another write when its lease is lost.
 *
 * Every database write of a task runs on the worker's writer threads (job_writer.h),
 * never on the event-loop thread; a task has at most one such write in its chain at a
 * time (plus a heartbeat), and its next command starts only after the write before it
 * completed. All of these functions run on the worker thread. A write's fn runs on a
 * writer thread and may read and fill the task (t->host, what a kind loads); meanwhile
 * the worker thread touches only the task's lifecycle (finished, conn, lease and
 * heartbeat times), and the write that ends a task waits until the chain's is done. */
#ifndef GPUFLEET_JOB_H
#define GPUFLEET_JOB_H

#include <stdint.h>

#include "common/crypt.h"
#include "db/db.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"
#include "provisioner/jobs/job_writer.h"
#include "provisioner/jobs/steps.h"
#include "provisioner/jobs/worker.h"
#include "provisioner/ssh/ssh.h"

struct job_task;

/* A worker thread as the core sees it. */
struct job_worker {
    const struct prov_worker_config *cfg;
    char owner[80]; /* lease owner, and the actor of host events and audit rows */
    struct prov_ssh_loop *loop;
    struct job_writer *writer;
};

/* One job kind. */
struct job_kind {
    const char *kind; /* jobs.kind it runs */
    const char *what; /* how reasons and errors name it: "provisioning", "gate", … */
    size_t size;      /* of the kind's struct; its first member is struct job_task */
    /* Loads what the job needs, then connects (or fails the task). */
    void (*start)(struct job_task *t);
    /* The session's outcome (st is borrowed); normally job_contact(t, st, next). */
    void (*on_connect)(struct job_task *t, const struct prov_ssh_conn_status *st);
    /* A command's result (r is borrowed; t->cmd is freed after this returns). A query
     * that timed out the first time has already been run again by the core. */
    void (*on_exec)(struct job_task *t, const struct prov_ssh_exec_result *r);
    /* The work is done: the outcome's fenced transaction (job_end). */
    void (*finish)(struct job_task *t);
    /* The host event of a job that ends without its own outcome: error_class, or NULL
     * when cancelled; *hint: the state to return to, or -1. */
    enum plan_host_event (*end_event)(const struct job_task *t, const char *error_class, int *hint);
    /* Frees what the kind's struct owns (not the struct). */
    void (*release)(struct job_task *t);
};

extern const struct job_kind job_kind_provision, job_kind_gate, job_kind_diagnostics, job_kind_stop,
    job_kind_drill;

/* A kind's table, from the functions every kind file names the same way. */
#define JOB_KIND(kind_, what_, type_)                                                           \
    {                                                                                           \
        .kind = kind_, .what = what_, .size = sizeof(type_), .start = start,                    \
        .on_connect = on_connect, .on_exec = on_exec, .finish = finish, .end_event = end_event, \
        .release = release,                                                                     \
    }

typedef void (*job_next_fn)(struct job_task *t);
/* The continuation of a chain write: s is its status. Not called once the task has
 * finished meanwhile. */
typedef void (*job_then_fn)(struct job_task *t, enum db_status s);
/* Extra reads of a kind's start transaction, after the host was loaded into t->host. */
typedef enum db_status (*job_reads_fn)(struct db_conn *c, struct job_task *t);

/* The write a chain op carries: a step record (owned copies of its strings). */
struct job_rec {
    struct db_job_step st;
    char *command, *out, *err, *msg;
    int total;
    const char *what; /* "a step's result", … (for the failure) */
    job_next_fn next;
};

struct job_task {
    struct job_worker *w;
    const struct job_kind *kind;
    struct db_job_claim job;
    struct db_host_target host; /* loaded by the start transaction */
    struct prov_ssh_conn *conn;
    char *cmd;                     /* the command running now (recorded with its result) */
    enum prov_cmd_class cmd_class; /* of cmd */
    int cmd_timeout_s;             /* of cmd */
    int cmd_retried;               /* cmd is the retry of a query that timed out */
    int64_t first_try_us;          /* how long the timed-out first try ran */
    int64_t next_heartbeat_us;
    int64_t lease_deadline_us; /* no remote command starts after this */
    int64_t connect_started_us;
    double connect_ms;
    int finished; /* no more commands, and no more writes but the one ending it */
    int unknown;  /* a kind this worker does not run: fails when started */
    struct job_task *next;

    /* The chain: one write at a time, then its continuation. */
    struct job_op op;
    job_then_fn then;
    struct job_rec rec;
    struct {
        enum plan_host_event ev;
        int quarantined;
        job_reads_fn reads;
        const char *what;
        job_next_fn next;
        char reason[720];
    } load;
    struct {
        char host_key_sha256[64];
        int live;
        job_next_fn next;
    } contact;
    struct {
        struct crypt_secret key; /* wiped once the engine has its copy */
        int decrypt_failed;
        char err[256];
    } cred;

    /* The heartbeat. */
    struct job_op hb;
    int64_t hb_sent_us;
    int hb_cancel;

    /* The write that ends the task (outcome, failure, cancellation). */
    struct job_op end;
    struct {
        const char *error_class;
        char *error; /* cleaned copy */
        int transient;
        int fenced_out; /* the job's attempt moved on: nothing was written */
        int deferred;   /* waits for the chain's write to complete */
        const char *unrecorded;
        job_next_fn logged;
    } fin;
};

/* ---- lifecycle (job_core.c) ---- */

/* A new task for a claimed job (a kind this worker does not run fails when started), or
 * NULL when out of memory. */
struct job_task *job_task_new(struct job_worker *w, const struct db_job_claim *cl,
                              int64_t claimed_us);
/* Starts a new task's kind. */
void job_task_start(struct job_task *t);
/* 1 when the task may be freed (finished, nothing outstanding). */
int job_task_reapable(const struct job_task *t);
void job_task_free(struct job_task *t);
/* Closes the session; no more commands, no more writes but the one ending it. */
void job_close(struct job_task *t);
/* The lease lapsed (or a newer attempt owns the job): stops without another write. */
void job_lost(struct job_task *t, const char *why);
/* 1 while the lease is ours, less a margin for the write that records a command. */
int job_lease_live(const struct job_task *t);

/* ---- writes ---- */

/* Runs fn(c, arg) off the event loop (in a transaction when tx); then(t, status) runs on
 * this thread once it completed, unless the task finished meanwhile. */
void job_db(struct job_task *t, db_tx_fn fn, void *arg, int tx, job_then_fn then);
/* Records a step (its strings cleaned to valid UTF-8; r: the command's result, whose
 * tails it keeps, or NULL), then checks that the attempt still holds the job: next(t)
 * runs only once it is recorded. A newer attempt: the task is lost; a failed write: it
 * fails disconnected, "could not record <what>". */
void job_record(struct job_task *t, const struct db_job_step *st,
                const struct prov_ssh_exec_result *r, int total, const char *what,
                job_next_fn next);
/* The start transaction: the host (t->host), reads(c, t), then the started event with
 * t->load.reason (reads may rewrite it). A quarantined host fails host_quarantined; a
 * missing row fails step_failed naming what. next(t) runs when it went through. */
void job_load(struct job_task *t, enum plan_host_event ev, job_reads_fn reads, const char *what,
              job_next_fn next);
/* Ends the task with fn (a fenced transaction over t, which starts with job_mark_done).
 * When it is written, logged(t) runs (unless fenced out); when it could not be, an error
 * names unrecorded ("success", "the verdict"). */
void job_end(struct job_task *t, db_tx_fn fn, const char *unrecorded, job_next_fn logged);
/* Inside an ending write: the job succeeded (error_class NULL) or failed, fenced by the
 * attempt; DB_NO_RESULTS, with t->fin.fenced_out set, when the attempt moved on. */
enum db_status job_mark_done(struct db_conn *c, struct job_task *t, const char *error_class,
                             const char *error);
/* Fails the job (requeued when transient and attempts are left); the error may quote what
 * the host printed: it is stored and logged cleaned. */
void job_fail(struct job_task *t, const char *error_class, const char *error, int transient);
/* The job was cancelled: the session closes, the job and the host are moved. */
void job_cancel(struct job_task *t);
/* The kind's finish, unless the task has already finished. */
void job_finish(struct job_task *t);
/* Applies a host state machine event for this job, inside the caller's fenced write
 * (hint: the state to return to, or -1). A deleted host: nothing to move. */
enum db_status job_host_event(struct db_conn *c, const struct job_task *t, enum plan_host_event ev,
                              int hint, const char *reason, const char *gate_run_id);

/* ---- SSH ---- */

/* Checks the address policy, loads and decrypts the credential and opens the session;
 * kind->on_connect runs once the host key was verified and the login succeeded (or
 * failed). */
void job_connect(struct job_task *t);
/* The connect outcome, then the contact record (first-contact pin, last_seen), fenced by
 * the attempt; next(t) runs when the job may run commands. */
void job_contact(struct job_task *t, const struct prov_ssh_conn_status *st, job_next_fn next);
/* Starts t->cmd (owned by the task) with the timeout of class k (own_s: the pool's
 * workload or a diagnostics level's own timeout, or 0). Refuses once the lease is no
 * longer ours. Returns 0, or -1 after failing or dropping the task. */
int job_exec(struct job_task *t, enum prov_cmd_class k, int own_s);
/* The command timed out (r->timed_out or a TIMEOUT error). */
int job_timed_out(const struct prov_ssh_exec_result *r);
/* The message for a command that timed out (twice, for a query), naming the part of a
 * sectioned script that hung. */
void job_timeout_message(const struct job_task *t, const struct prov_ssh_exec_result *r, char *buf,
                         size_t n);

#endif
