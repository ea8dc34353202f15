/* stop.h — POST /v1/hosts/{id}/stop (see stop.c). */
#ifndef GPUFLEET_API_STOP_H
#define GPUFLEET_API_STOP_H

#include "api/http.h"

enum MHD_Result api_hosts_stop(struct api_req *r);

/* Queues a stop of the host on the system's behalf (the idle policy), in the caller's
 * transaction, with the same checks as the API (no force): the job's params and the
 * audit event host.stop (role system, method POLICY) carry principal and reason.
 * DB_ONE_RESULT when queued (job_id, 37 bytes, may be NULL), DB_NO_RESULTS when refused
 * (no such host, no stop_command, already stopped, a job queued or running). */
enum db_status api_stop_queue_system(struct db_conn *c, const char *host_id, const char *principal,
                                     const char *reason, char job_id[37]);

#endif
