/* stop.h — stopping a host (service/stop.c). */
#ifndef GPUFLEET_SERVICE_STOP_H
#define GPUFLEET_SERVICE_STOP_H

#include "db/db.h"

enum svc_stop_refusal {
    SVC_STOP_OK = 0,
    SVC_STOP_NO_HOST,
    SVC_STOP_NO_COMMAND,
    SVC_STOP_STOPPED,
    SVC_STOP_BUSY
};

struct svc_stop {
    const char *principal; /* who asks: the caller's sub, or the system's name */
    const char *id, *reason;
    int dry_run, force;
    enum svc_stop_refusal refused;
    char *doc; /* the queued job, or on a dry run the plan (owned by the caller) */
    char job_id[37];
    char busy_job[37];
    char busy_state[16];
};

/* Checks and queues (or plans, on a dry run) the stop inside the caller's transaction;
 * the caller audits. A refusal sets a->refused (the transaction then changes nothing). */
enum db_status svc_stop_queue(struct db_conn *c, struct svc_stop *a);

/* The idle policy's stop: queued and audited (principal, role system) in the caller's
 * transaction. DB_NO_RESULTS when refused (busy, stopped, no command). job_id may be
 * NULL. */
enum db_status svc_stop_queue_system(struct db_conn *c, const char *host_id, const char *principal,
                                     const char *reason, char job_id[37]);

#endif
