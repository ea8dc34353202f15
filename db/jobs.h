/* jobs.h — the durable job queue (docs/product.md "Beyond one machine"):
 *   claim    FOR UPDATE SKIP LOCKED, attempt += 1, lease = now() + lease seconds
 *   renew    heartbeat, fenced by attempt
 *   record   one row per step phase per attempt (fenced)
 *   finish   succeeded / failed / requeued with backoff / cancelled (fenced)
 * Every write that completes or extends a job names (id, attempt) and changes nothing
 * when another worker holds a newer attempt. */
#ifndef GPUFLEET_DB_JOBS_H
#define GPUFLEET_DB_JOBS_H

#include "db/db.h"

/* Queues a job. A host that already has a queued or running job gives DB_HARD_ERROR
 * with a unique violation (→ 409 host_busy). */
enum db_status db_job_create(struct db_conn *c, const char *kind, const char *host_id,
                             const char *stack_id, const char *params_json, const char *created_by,
                             char **doc, char id[37]);
/* scope: the projects whose hosts' jobs may be read (a uuid[] literal, NULL: every
 * project); another project's job is DB_NO_RESULTS, as one that does not exist. */
enum db_status db_job_get(struct db_conn *c, const char *id, const char *scope, char **doc);

struct db_job_filter {
    const char *state, *kind, *host_id, *after_seq;
    long limit;
    const char *scope, *project_id; /* the read scope, the ?project= filter (NULL: none) */
};
enum db_status db_job_list(struct db_conn *c, const struct db_job_filter *f, struct db_page *page);
/* Queued → cancelled at once; running → cancel_requested, for a job of a host in scope
 * (the projects where the caller may write). *was_final: the job had already finished
 * (*doc is then its document); *hidden: the job exists, in another project (answered as
 * one that does not exist, and audited). */
enum db_status db_job_cancel(struct db_conn *c, const char *id, const char *scope, char **doc,
                             int *was_final, int *hidden);

struct db_job_claim {
    char id[37], kind[16], host_id[37], stack_id[37];
    int attempt, max_attempts;
};
/* Fails jobs whose lease lapsed with no attempts left, then claims up to max jobs.
 * claims[] receives them; *n how many. */
enum db_status db_job_claim(struct db_conn *c, const char *owner, int lease_s, int max,
                            struct db_job_claim *claims, int *n);
/* Renews the lease. DB_NO_RESULTS: the lease is lost (another attempt owns the job) or
 * a cancel was requested (*cancel set). */
enum db_status db_job_heartbeat(struct db_conn *c, const char *id, int attempt, int lease_s,
                                int *cancel);

struct db_job_step {
    int idx;
    const char *phase, *name, *command, *outcome, *stdout_tail, *stderr_tail, *message;
    int has_exit;
    int exit_status;
    double duration_ms;
};
/* Records a step and the progress (k of n). DB_NO_RESULTS when the attempt is stale. */
enum db_status db_job_step(struct db_conn *c, const char *id, int attempt,
                           const struct db_job_step *s, int progress_total);
/* Final transitions, fenced by attempt. DB_NO_RESULTS when the attempt is stale. */
enum db_status db_job_succeed(struct db_conn *c, const char *id, int attempt);
enum db_status db_job_fail(struct db_conn *c, const char *id, int attempt, const char *error_class,
                           const char *error);
/* Back to queued for another attempt after backoff_s. */
enum db_status db_job_requeue(struct db_conn *c, const char *id, int attempt, int backoff_s,
                              const char *error_class, const char *error);
enum db_status db_job_cancelled(struct db_conn *c, const char *id, int attempt);
/* Ends the host's queued or running job at once (state cancelled, cancel_requested,
 * error_class "superseded", error why) — for a forced stop. job_id gets its id ("" when
 * the host had none: DB_NO_RESULTS). A worker running it is fenced out. */
enum db_status db_job_supersede(struct db_conn *c, const char *host_id, const char *why,
                                char job_id[37]);

#endif
