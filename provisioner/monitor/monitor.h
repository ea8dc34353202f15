/* monitor.h — passive health monitoring, run by every worker thread beside its jobs, on
 * the same SSH event loop and database writer (provisioner/jobs/worker.c).
 *
 * Each worker claims a fair share of the watched hosts (db/monitor_lease.h), keeps one
 * persistent SSH connection per host (host key checked on every connect, reconnected with
 * backoff), and at the pool's monitor.interval_seconds runs one sample command on it
 * (provisioner/monitor/monitor_sample.h): a channel, not a handshake. A sample is stored and acted
 * on in one transaction fenced by the host's lease: isolating evidence quarantines the
 * host, a reachable host that was unreachable goes back to where it was. A sample that
 * cannot be taken counts as missed; monitor.unreachable_after misses in a row make a
 * serving host unreachable. */
#ifndef GPUFLEET_MONITOR_H
#define GPUFLEET_MONITOR_H

#include "provisioner/jobs/job.h"

#define MON_CLAIM_PERIOD_S 2 /* claims and lease renewals; a lease lasts three of them */
#define MON_MAX_HOSTS      2048
#define MON_CONNECT_LEAD_S 10 /* a host new to a worker connects this long before sampling */

struct monitor;

/* NULL when out of memory. */
struct monitor *mon_new(struct job_worker *w);
/* Claims, connects, samples: call once per loop iteration (never blocks). */
void mon_tick(struct monitor *m);
/* When mon_tick next has something to do (CLOCK_MONOTONIC µs; 0 or past: now). The
 * worker waits no longer than this; callbacks that need a tick sooner make it 0. */
int64_t mon_next_due_us(const struct monitor *m);
/* Connections open or opening (the loop must run SSH while there are any). */
int mon_active(const struct monitor *m);
/* Closes every connection and submits nothing more (before the loop is freed). */
void mon_close(struct monitor *m);
/* Frees the monitor: after job_writer_free, which completes its writes. */
void mon_free(struct monitor *m);

#endif
