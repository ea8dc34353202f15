/* periodic.h — a background thread that runs one pass every interval until stopped: the
 * loop the idle policy and the recovery engine share. The first pass runs one interval
 * after the start; a stop wakes the thread at once (it waits for a pass under way to end).
 *
 *   static struct svc_periodic loop = SVC_PERIODIC_INIT;
 *   svc_periodic_start(&loop, 30000, pass, NULL);   ...   svc_periodic_stop(&loop);
 */
#ifndef GPUFLEET_SERVICE_PERIODIC_H
#define GPUFLEET_SERVICE_PERIODIC_H

#include <pthread.h>

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

#endif
