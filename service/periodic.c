/* periodic.c — see periodic.h. */
#include "service/periodic.h"

#include <errno.h>
#include <time.h>

#include "common/log.h"

static void *periodic_main(void *arg)
{
    struct svc_periodic *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += p->interval_ms / 1000;
        until.tv_nsec += (long)(p->interval_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        while (!p->stopping && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT)
            ;
        if (p->stopping)
            break;
        pthread_mutex_unlock(&p->mu);
        p->pass(p->arg);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int svc_periodic_start(struct svc_periodic *p, int interval_ms, void (*pass)(void *arg), void *arg)
{
    if (interval_ms <= 0 || pass == NULL)
        return -1;
    if (p->running)
        return 0;
    p->interval_ms = interval_ms;
    p->pass = pass;
    p->arg = arg;
    p->stopping = 0;
    if (pthread_create(&p->thread, NULL, periodic_main, p) != 0)
        return -1;
    p->running = 1;
    return 0;
}

void svc_periodic_stop(struct svc_periodic *p)
{
    if (!p->running)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->running = 0;
}

struct due {
    struct svc_driver *d;
    char ids[SVC_DRIVER_BATCH_MAX][37];
    int n;
};

static enum db_status due_fn(struct db_conn *c, void *arg)
{
    struct due *u = arg;
    int max = u->d->batch;
    if (max < 1 || max > SVC_DRIVER_BATCH_MAX)
        max = SVC_DRIVER_BATCH_MAX;
    return u->d->due(c, max, u->ids, &u->n);
}

int svc_driver_run_once(struct svc_driver *d)
{
    struct due u = {.d = d, .n = 0};
    if (db_run(due_fn, &u) < 0)
        return -1;
    int driven = 0;
    for (int i = 0; i < u.n; i++) {
        enum db_status s = d->item(u.ids[i]);
        if (s < 0) {
            log_msg(LOG_WARN, "%s %s: database error %d; retrying next pass", d->what, u.ids[i],
                    (int)s);
            continue;
        }
        driven++;
    }
    return driven;
}

static void driver_pass(void *arg)
{
    svc_driver_run_once(arg);
}

int svc_driver_start(struct svc_driver *d, int ms)
{
    return svc_periodic_start(&d->loop, ms, driver_pass, d);
}

void svc_driver_stop(struct svc_driver *d)
{
    svc_periodic_stop(&d->loop);
}
