/* job_writer.h — a worker's database writer: a few threads that run its tasks' database
 * work (step records, heartbeats, loads, contact and finishing writes) on pooled
 * connections, so that a slow round trip never blocks the SSH event loop.
 *
 * The worker thread submits an op and goes on driving SSH; a writer thread runs it and
 * queues it as done and wakes the worker thread (job_writer_fd); the worker thread drains
 * the done ops once per loop iteration and runs each op's done callback there. Ops run in no
 * particular order across writer threads: whoever needs an order (a task's steps) submits the next
 * op only from the done callback of the previous one.
 *
 * Threading: job_writer_submit, job_writer_drain, job_writer_pending and job_writer_free
 * belong to the worker thread that created the writer. An op's fn runs on a writer thread
 * and may touch only its arg (and what its submitter leaves alone until done runs). */
#ifndef GPUFLEET_JOB_WRITER_H
#define GPUFLEET_JOB_WRITER_H

#include "db/db.h"

struct job_op;
typedef void (*job_op_done_fn)(struct job_op *op);

struct job_op {
    /* set by the submitter */
    db_tx_fn fn;
    void *arg;
    int tx;              /* 1: fn runs inside BEGIN … COMMIT (db_run_tx); 0: fn is one
                            statement, run in autocommit (one round trip less than twice) */
    int urgent;          /* runs before every op that is not (a heartbeat must not wait
                            behind a backlog of step records) */
    job_op_done_fn done; /* runs on the worker thread, from job_writer_drain */
    void *ctx;           /* the submitter's, for done */
    /* set by the writer */
    enum db_status status;
    int busy; /* submitted, done not yet run */
    struct job_op *next;
};

struct job_writer;

/* Starts threads writer threads (at least 1). NULL when out of memory or threads. */
struct job_writer *job_writer_new(int threads);
/* Queues op (borrowed: it must stay valid until its done callback has run). */
void job_writer_submit(struct job_writer *w, struct job_op *op);
/* Runs the done callback of every op finished so far, in the order they finished (a done
 * callback may submit again). Returns how many ran. */
int job_writer_drain(struct job_writer *w);
/* An fd that is readable while ops are done and not yet drained (an eventfd, read by
 * job_writer_drain): the worker thread's event loop waits on it. */
int job_writer_fd(const struct job_writer *w);
/* Ops submitted whose done callback has not run yet. */
int job_writer_pending(const struct job_writer *w);
/* Runs what is still queued, joins the threads, then drains (done callbacks run here),
 * and frees the writer. */
void job_writer_free(struct job_writer *w);

#endif
