/* job_writer.c — see job_writer.h. One mutex guards three FIFO lists: urgent ops and
 * other ops to run, and ops done. Writer threads sleep on a condition variable; the
 * worker thread never waits on them (it polls the done list once per loop iteration). */
#include "provisioner/jobs/job_writer.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define JOB_WRITER_MAX_THREADS 32
#define SOFT_RETRIES           5 /* as db_run_tx: serialization failures and deadlocks */

struct op_list {
    struct job_op *head, *tail;
};

struct job_writer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op_list urgent, todo, done;
    int stopping;
    int nthreads;
    pthread_t threads[JOB_WRITER_MAX_THREADS];
    int submitted, drained; /* worker thread only */
    int efd;                /* readable while ops are done and not drained */
};

static void list_push(struct op_list *l, struct job_op *op)
{
    op->next = NULL;
    if (l->tail != NULL)
        l->tail->next = op;
    else
        l->head = op;
    l->tail = op;
}

static struct job_op *list_pop(struct op_list *l)
{
    struct job_op *op = l->head;
    if (op != NULL) {
        l->head = op->next;
        if (l->head == NULL)
            l->tail = NULL;
        op->next = NULL;
    }
    return op;
}

/* One statement in autocommit is atomic by itself; it is retried like a transaction. */
static enum db_status run_op(struct job_op *op)
{
    if (op->tx)
        return db_run_tx(op->fn, op->arg);
    enum db_status s = DB_HARD_ERROR;
    for (int attempt = 1; attempt <= SOFT_RETRIES; attempt++) {
        s = db_run(op->fn, op->arg);
        if (s != DB_SOFT_ERROR)
            break;
        usleep((useconds_t)(attempt * 2000));
    }
    return s;
}

static void *writer_main(void *arg)
{
    struct job_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct job_op *op = list_pop(&w->urgent);
        if (op == NULL)
            op = list_pop(&w->todo);
        if (op == NULL) {
            if (w->stopping)
                break;
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        pthread_mutex_unlock(&w->mu);
        enum db_status s = run_op(op);
        pthread_mutex_lock(&w->mu);
        op->status = s;
        /* the first op done since the last drain wakes the worker thread; the drain reads
         * the eventfd before it takes the list, so no op is left without a wake-up */
        int first = w->done.head == NULL;
        list_push(&w->done, op);
        if (first) {
            uint64_t one = 1;
            ssize_t r = write(w->efd, &one, sizeof one);
            (void)r; /* only EAGAIN at a counter near 2^64: it is readable anyway */
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct job_writer *job_writer_new(int threads)
{
    struct job_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    if (threads < 1)
        threads = 1;
    if (threads > JOB_WRITER_MAX_THREADS)
        threads = JOB_WRITER_MAX_THREADS;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->efd < 0) {
        job_writer_free(w);
        return NULL;
    }
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&w->threads[i], NULL, writer_main, w) != 0)
            break;
        w->nthreads++;
    }
    if (w->nthreads != threads) {
        job_writer_free(w);
        return NULL;
    }
    return w;
}

void job_writer_submit(struct job_writer *w, struct job_op *op)
{
    assert(!op->busy);
    op->busy = 1;
    w->submitted++;
    pthread_mutex_lock(&w->mu);
    list_push(op->urgent ? &w->urgent : &w->todo, op);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int job_writer_fd(const struct job_writer *w)
{
    return w->efd;
}

int job_writer_drain(struct job_writer *w)
{
    uint64_t n_done;
    ssize_t r = read(w->efd, &n_done, sizeof n_done);
    (void)r; /* EAGAIN: nothing signalled; the list is taken either way */
    pthread_mutex_lock(&w->mu);
    struct op_list done = w->done;
    w->done.head = w->done.tail = NULL;
    pthread_mutex_unlock(&w->mu);
    int n = 0;
    struct job_op *op;
    while ((op = list_pop(&done)) != NULL) {
        op->busy = 0;
        w->drained++;
        n++;
        op->done(op); /* may submit op again */
    }
    return n;
}

int job_writer_pending(const struct job_writer *w)
{
    return w->submitted - w->drained;
}

void job_writer_free(struct job_writer *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    /* A done callback may still submit (a task ending); nothing runs it once the
     * threads are gone, so those are run here, on this thread. */
    while (job_writer_drain(w) > 0 || w->todo.head != NULL || w->urgent.head != NULL) {
        struct job_op *op;
        while ((op = list_pop(&w->urgent)) != NULL || (op = list_pop(&w->todo)) != NULL) {
            op->status = run_op(op);
            list_push(&w->done, op);
        }
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    if (w->efd >= 0)
        close(w->efd);
    free(w);
}
