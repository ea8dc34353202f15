/* periodic.c — see periodic.h. */
#include "service/periodic.h"

#include <errno.h>
#include <time.h>

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
