/* periodic.h — a background thread that runs one pass every interval until stopped: the
 * loop the idle policy, the recovery engine and the rollout driver share. The first pass
 * runs one interval after the start; a stop wakes the thread at once (it waits for a pass
 * under way to end).
 *
 *   static struct svc_periodic loop = SVC_PERIODIC_INIT;
 *   svc_periodic_start(&loop, 30000, pass, NULL);   ...   svc_periodic_stop(&loop);
 *
 * A driver is such a loop for an engine that moves durable rows forward (recoveries,
 * rollouts): each pass reads the ids that are due in one statement and hands each to
 * item(), which runs its own transactions. An item that ends in a database error is
 * logged and retried next pass; the others are not held up by it.
 *
 *   static struct svc_driver drv = SVC_DRIVER_INIT("rollout", 16, db_rollout_due, drive);
 *   svc_driver_start(&drv, 1000);   ...   svc_driver_stop(&drv);
 */
#ifndef GPUFLEET_SERVICE_PERIODIC_H
#define GPUFLEET_SERVICE_PERIODIC_H

#include <pthread.h>

#include "db/db.h"

struct svc_periodic {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, stopping, interval_ms;
    void (*pass)(void *arg);
    void *arg;
};

#define SVC_PERIODIC_INIT                                               \
    {                                                                   \
        .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER \
    }

/* Starts the thread calling pass(arg) every interval_ms. Returns 0 (also when it runs
 * already: nothing changes), -1 when interval_ms <= 0 or the thread cannot start. */
int svc_periodic_start(struct svc_periodic *p, int interval_ms, void (*pass)(void *arg), void *arg);

/* Stops the thread and waits for it (a no-op when not running). */
void svc_periodic_stop(struct svc_periodic *p);

#define SVC_DRIVER_BATCH_MAX 32

struct svc_driver {
    const char *what; /* the log's word: "recovery", "rollout" */
    int batch;        /* ids read a pass, 1..SVC_DRIVER_BATCH_MAX */
    enum db_status (*due)(struct db_conn *c, int max, char (*ids)[37], int *n);
    enum db_status (*item)(const char *id); /* < 0: a database error, retried next pass */
    struct svc_periodic loop;
};

#define SVC_DRIVER_INIT(what_, batch_, due_, item_)                         \
    {                                                                       \
        .what = (what_), .batch = (batch_), .due = (due_), .item = (item_), \
        .loop = SVC_PERIODIC_INIT                                           \
    }

/* One pass now, in the caller's thread: the items driven without a database error, or
 * -1 when the due ids could not be read. */
int svc_driver_run_once(struct svc_driver *d);

/* svc_periodic_start/stop of the driver's own loop, one pass every ms. */
int svc_driver_start(struct svc_driver *d, int ms);
void svc_driver_stop(struct svc_driver *d);

#endif
