/* audit.h — the audit trail. */
#ifndef GPUFLEET_DB_AUDIT_H
#define GPUFLEET_DB_AUDIT_H

#include <jansson.h>

#include "db/db.h"

struct db_audit_event {
    const char *principal, *role, *action, *resource_type, *resource_id;
    const char *method, *path, *request_id;
    int status;
    const char *reason; /* or NULL */
    /* The project the act concerns (NULL: from the resource, audit_project()); for a
     * change of settings, the values before and after as JSON texts (or NULL). */
    const char *project_id, *before, *after;
};

/* Inserts one event (call inside the transaction of the change it records). */
enum db_status db_audit_insert(struct db_conn *c, const struct db_audit_event *ev);

struct db_audit_filter {
    const char *principal, *action, *resource_type, *resource_id;
    const char *since, *until; /* RFC 3339, already validated */
    const char *before_seq;    /* keyset: events older than this seq, or NULL */
    long limit;                /* rows to fetch (the caller asks for one more than a page) */
    /* The projects whose rows may be read (a uuid[] literal; NULL: every row, the
     * platform's own included), and the ?project= filter (a project id, or NULL). */
    const char *scope, *project_id;
};

/* Appends events, newest first, to items. Each item carries a hidden "_key" (its seq). */
enum db_status db_audit_list(struct db_conn *c, const struct db_audit_filter *f, json_t *items);
/* *out receives the event (new reference) or stays NULL on DB_NO_RESULTS (no such row, or
 * one outside scope: a uuid[] literal, NULL for every row). */
enum db_status db_audit_get(struct db_conn *c, const char *id, const char *scope, json_t **out);

#endif
