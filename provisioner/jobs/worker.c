/* worker.c — see worker.h. Each worker thread owns one SSH event loop, one LISTEN
 * connection and one writer (job_writer.h), and holds up to cfg->concurrency tasks
 * (job.h); the job kinds live in job_provision.c, job_gate.c and job_stop.c.
 *
 * One loop iteration: drain job notifications; claim when woken or every second; drive
 * the SSH sessions that have something to do, waiting up to 250 ms (less when the monitor
 * is due sooner); run the continuations of the database writes that completed meanwhile;
 * heartbeat, time out and reap the tasks. The thread never waits on PostgreSQL: claims,
 * heartbeats and every task's writes run on the writer's threads, and a write that
 * completes wakes the loop's wait (the writer's eventfd is in the SSH loop's epoll set),
 * so it is acted on at once, without polling. */
#include "provisioner/jobs/worker.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "db/db.h"
#include "db/jobs.h"
#include "provisioner/jobs/job.h"
#include "provisioner/monitor/monitor.h"

#define MAX_WORKERS 64
#define CLAIM_BATCH 32
/* longest wait of an iteration: tasks' heartbeats and lease deadlines, claims
 * (notifications and completed writes wake it sooner) */
#define WAIT_MS 250

struct worker {
    struct job_worker jw; /* what the tasks see */
    int idx;
    struct db_listener *listener;
    int listener_fd;     /* the LISTEN socket as registered with the SSH loop; -1: none */
    struct monitor *mon; /* passive health (monitor.h), or NULL when turned off */
    struct job_task *tasks;
    int active;
    pthread_t thread;
    /* the claim in flight */
    struct job_op claim;
    struct db_job_claim claims[CLAIM_BATCH];
    int room, nclaimed;
    int64_t claimed_us;
    int claim_again; /* woken while a claim ran */
};

static struct prov_worker_config config;
static struct worker workers[MAX_WORKERS];
static int nworkers;
static atomic_int stopping;

/* ---- claims ---- */

static enum db_status claim_fn(struct db_conn *c, void *arg)
{
    struct worker *w = arg;
    w->nclaimed = 0;
    return db_job_claim(c, w->jw.owner, w->jw.cfg->lease_s, w->room, w->claims, &w->nclaimed);
}

static void claim(struct worker *w);

/* Starts the claimed jobs; claims again at once while full batches come back and there
 * is room, so a backlog starts at once rather than one batch per wake-up. */
static void claim_done(struct job_op *op)
{
    struct worker *w = op->ctx;
    if (atomic_load(&stopping))
        return; /* left to their leases */
    int n = op->status >= 0 ? w->nclaimed : 0;
    for (int i = 0; i < n; i++) {
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:i}", "msg", "job claimed", "job_id",
                                           w->claims[i].id, "worker", w->jw.owner, "attempt",
                                           w->claims[i].attempt));
        struct job_task *t = job_task_new(&w->jw, &w->claims[i], w->claimed_us);
        if (t == NULL)
            continue; /* the lease will expire and another attempt will run */
        t->next = w->tasks;
        w->tasks = t;
        w->active++;
        job_task_start(t);
    }
    if (n == CLAIM_BATCH || w->claim_again)
        claim(w);
}

/* Claims up to one batch, unless a claim is running or there is no room. */
static void claim(struct worker *w)
{
    if (w->claim.busy) {
        w->claim_again = 1;
        return;
    }
    w->claim_again = 0;
    w->room = w->jw.cfg->concurrency - w->active;
    if (w->room <= 0)
        return;
    if (w->room > CLAIM_BATCH)
        w->room = CLAIM_BATCH;
    w->claimed_us = util_mono_us(); /* the lease runs from before the claim */
    w->claim = (struct job_op){.fn = claim_fn, .arg = w, .tx = 0, .done = claim_done, .ctx = w};
    job_writer_submit(w->jw.writer, &w->claim);
}

/* ---- heartbeats ---- */

static enum db_status hb_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    t->hb_cancel = 0;
    return db_job_heartbeat(c, t->job.id, t->job.attempt, t->w->cfg->lease_s, &t->hb_cancel);
}

/* A heartbeat that succeeds moves the local lease deadline to (its start + lease); one
 * that fails does not, and is retried a second after it was sent. */
static void hb_done(struct job_op *op)
{
    struct job_task *t = op->ctx;
    int64_t lease_us = (int64_t)t->w->cfg->lease_s * 1000000;
    enum db_status s = op->status;
    if (t->finished)
        return;
    if (s == DB_ONE_RESULT) {
        t->lease_deadline_us = t->hb_sent_us + lease_us;
        t->next_heartbeat_us = t->hb_sent_us + lease_us / 3;
    } else {
        t->next_heartbeat_us = t->hb_sent_us + 1000000;
    }
    if (s == DB_NO_RESULTS)
        job_lost(t, "the heartbeat found a newer attempt");
    else if (s < 0 && !job_lease_live(t))
        job_lost(t, "heartbeats failed until the lease deadline passed");
    else if (s < 0)
        log_msg(LOG_WARN, "job %s attempt %d: heartbeat failed; retrying", t->job.id,
                t->job.attempt);
    else if (t->hb_cancel)
        job_cancel(t);
}

/* Heartbeats when one is due (one at a time), and stops the task once its local lease
 * deadline has passed. */
static void tend_task(struct job_task *t, int64_t now)
{
    if (!t->finished && !t->hb.busy && now >= t->next_heartbeat_us) {
        t->hb_sent_us = now;
        t->hb =
            (struct job_op){.fn = hb_fn, .arg = t, .tx = 0, .urgent = 1, .done = hb_done, .ctx = t};
        job_writer_submit(t->w->writer, &t->hb);
    }
    if (!t->finished && !job_lease_live(t) && t->lease_deadline_us <= now)
        job_lost(t, "the lease deadline passed");
}

/* ---- the loop ---- */

/* Heartbeats and lease deadlines; reaps finished tasks. */
static void tend(struct worker *w)
{
    int64_t now = util_mono_us();
    struct job_task **pp = &w->tasks;
    while (*pp != NULL) {
        struct job_task *t = *pp;
        tend_task(t, now);
        if (job_task_reapable(t)) {
            *pp = t->next;
            w->active--;
            job_task_free(t);
            continue;
        }
        pp = &t->next;
    }
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
        int wait_ms = WAIT_MS; /* less when the monitor is due sooner */
        if (w->mon != NULL) {
            mon_tick(w->mon);
            int64_t due = mon_next_due_us(w->mon), now2 = util_mono_us();
            if (due - now2 < (int64_t)WAIT_MS * 1000)
                wait_ms = due <= now2 ? 0 : (int)((due - now2 + 999) / 1000);
        }
        /* a write completing or a job notification ends either wait (the writer's
         * eventfd and the LISTEN socket are in both) */
        if (w->active > 0 || (w->mon != NULL && mon_active(w->mon) > 0)) {
            int lfd = db_listener_fd(w->listener);
            if (lfd >= 0 && lfd != w->listener_fd && prov_ssh_loop_wake_on(w->jw.loop, lfd) == 0)
                w->listener_fd = lfd; /* a new connection: the old socket left the set closed */
            prov_ssh_loop_run_once(w->jw.loop, wait_ms);
        } else {
            struct pollfd pfd[2] = {{db_listener_fd(w->listener), POLLIN, 0},
                                    {job_writer_fd(w->jw.writer), POLLIN, 0}};
            poll(pfd, 2, wait_ms);
        }
        job_writer_drain(w->jw.writer);
        tend(w);
    }
    /* Leave held jobs to their leases: another worker (or this one, restarted) resumes.
     * Writes already queued still complete (they are fenced). */
    for (struct job_task *t = w->tasks; t != NULL; t = t->next)
        job_close(t);
    mon_close(w->mon);
    prov_ssh_loop_free(w->jw.loop);
    job_writer_free(w->jw.writer);
    mon_free(w->mon); /* its hosts' leases lapse: another worker takes them over */
    while (w->tasks != NULL) {
        struct job_task *t = w->tasks;
        w->tasks = t->next;
        job_task_free(t);
    }
    db_listener_free(w->listener);
    return NULL;
}

int prov_workers_start(const struct prov_worker_config *cfg)
{
    config = *cfg;
    if (config.threads > MAX_WORKERS)
        config.threads = MAX_WORKERS;
    if (config.db_writers <= 0)
        config.db_writers = PROV_DB_WRITERS;
    atomic_store(&stopping, 0);
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < config.threads; i++) {
        struct worker *w = &workers[i];
        memset(w, 0, sizeof *w);
        w->idx = i;
        w->listener_fd = -1;
        w->jw.cfg = &config;
        snprintf(w->jw.owner, sizeof w->jw.owner, "worker:%.40s:%d:%d", host, (int)getpid(), i);
        w->jw.loop = prov_ssh_loop_new();
        w->jw.writer = job_writer_new(config.db_writers);
        w->listener = db_listen(config.database_url, "gpufleet_jobs");
        w->mon = config.monitor ? mon_new(&w->jw) : NULL;
        if (w->jw.loop == NULL || w->jw.writer == NULL || w->listener == NULL ||
            (config.monitor && w->mon == NULL) ||
            prov_ssh_loop_wake_on(w->jw.loop, job_writer_fd(w->jw.writer)) != 0 ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            prov_ssh_loop_free(w->jw.loop);
            job_writer_free(w->jw.writer);
            mon_free(w->mon);
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
