/* recovery.h — automatic recoveries of isolated hosts (migrations/0016_recovery.sql,
 * planner/recovery.h). The isolation opens them (a trigger); the driver
 * (service/recovery.c) reads their facts and moves them on; GET /v1/hosts/{id}/recoveries
 * lists them. */
#ifndef GPUFLEET_DB_RECOVERY_H
#define GPUFLEET_DB_RECOVERY_H

#include "db/db.h"

/* Running recoveries not looked at in the last second, the oldest look first: up to max
 * ids into ids[]; *n how many. */
enum db_status db_recovery_due(struct db_conn *c, int max, char (*ids)[37], int *n);

/* One running recovery and what the planner needs of its host, locked for this
 * transaction (FOR UPDATE SKIP LOCKED): DB_NO_RESULTS when it ended, its host is gone, or
 * another driver holds it. Strings are owned by the struct (db_recovery_facts_free). */
struct db_recovery_facts {
    char id[37], host_id[37], step[16];
    int diag_level;
    int started, held, hold_is_ours, busy, gate_is_run;
    char *host_state, *hold_reason, *intervention, *foreign_job;
    char *job_state, *job_error, *verdict, *verdict_reason;
};
enum db_status db_recovery_facts(struct db_conn *c, const char *id, struct db_recovery_facts *f);
void db_recovery_facts_free(struct db_recovery_facts *f);

/* The drain began (recovery_started applied). */
enum db_status db_recovery_mark_started(struct db_conn *c, const char *id);
/* The next step; drained: the drain step ended now. */
enum db_status db_recovery_set_step(struct db_conn *c, const char *id, const char *step);
/* The job of the current step (diagnostics or gate). */
enum db_status db_recovery_set_job(struct db_conn *c, const char *id, const char *step,
                                   const char *job_id);
/* Ends it: state succeeded, failed or cancelled, with why (NULL for succeeded). */
enum db_status db_recovery_finish(struct db_conn *c, const char *id, const char *state,
                                  const char *why);
/* A driver looked at it (the due order). */
enum db_status db_recovery_checked(struct db_conn *c, const char *id);

/* The host's recoveries, newest first (keyset before_seq, limit rows): (doc, key) rows.
 * *host_found tells whether the host exists within scope (the projects that may be read:
 * a uuid[] literal, NULL for every project). */
enum db_status db_recovery_list(struct db_conn *c, const char *host_id, const char *scope,
                                const char *state, const char *before_seq, long limit,
                                struct db_page *page, int *host_found);
enum db_status db_recovery_get(struct db_conn *c, const char *id, char **doc);

#endif
