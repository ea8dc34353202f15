/* events.h — the event log behind GET /v1/events, and the tickets that open a stream.
 * Most events are written by triggers (migrations/0009_events.sql); db_events_emit is
 * for events computed in C (recommendations). */
#ifndef GPUFLEET_DB_EVENTS_H
#define GPUFLEET_DB_EVENTS_H

#include <stdint.h>

#include "db/db.h"

/* Appends one event inside the caller's transaction; it is delivered once that commits.
 * type: e.g. "recommendation.opened" (lowercase words joined by dots); pool_id, host_id:
 * UUIDs or NULL; data_json: a JSON object's text (NULL for {}) whose members are merged
 * into the event's data (id, type, at, pool_id and host_id always come from the event).
 * Returns DB_ONE_RESULT, or DB_HARD_ERROR for a bad type, id or non-object data. */
enum db_status db_events_emit(struct db_conn *c, const char *type, const char *pool_id,
                              const char *host_id, const char *data_json);

/* Every known event type (db/event_types.def), NULL-terminated, and their number. */
extern const char *const db_event_types[];
extern const int db_event_ntypes;
/* 1 when name is a known event type, else 0. */
int db_event_type_known(const char *name);

/* The highest event id, 0 when there is none. */
enum db_status db_events_max_id(struct db_conn *c, int64_t *max);

/* One event as read back: the full data document (one line of JSON). pool_id, host_id
 * and project_id are "" when null (an event of no project is the platform's own). */
struct db_event_row {
    int64_t id;
    const char *type, *pool_id, *host_id, *project_id, *doc;
};
/* Events read, in id order. The strings borrow from the result, which the struct owns:
 * start it zeroed; each read frees what it held first; db_event_rows_free frees it and
 * leaves it zeroed. On failure it is left empty. */
struct db_event_rows {
    int n;
    struct db_event_row *rows;
    void *res; /* opaque outside db/ */
};
void db_event_rows_free(struct db_event_rows *rows);
/* Events with id > after, in id order, at most limit rows. */
enum db_status db_events_after(struct db_conn *c, int64_t after, int limit,
                               struct db_event_rows *out);
/* Events with after < id <= upto matching the filters (types: a text[] literal such as
 * "{host.state,job.state}", or NULL for all; pool_id, host_id: NULL for any; projects: a
 * uuid[] literal of the projects whose events are read, or NULL for every event, the
 * platform's own included), in id order, at most limit rows. */
enum db_status db_events_backlog(struct db_conn *c, int64_t after, int64_t upto, const char *types,
                                 const char *pool_id, const char *host_id, const char *projects,
                                 int limit, struct db_event_rows *out);

/* Deletes up to batch events older than retention_s seconds; *deleted receives how many. */
enum db_status db_events_prune(struct db_conn *c, long retention_s, int batch, long *deleted);
/* Turns the per-pool counts of stored work reports into work_reports.ingested events, for
 * each pool whose last event is at least throttle_s seconds old. *emitted: events written. */
enum db_status db_events_ingest_flush(struct db_conn *c, long throttle_s, long *emitted);

/* Stores a ticket's hash for sub, its role claim (viewer, operator, admin, reporter or
 * none) and principal (a JSON object's text: the claims its grants are resolved from on
 * redeem), valid ttl_s seconds. expires_at receives the RFC 3339 expiry (at least 40
 * bytes). */
enum db_status db_event_ticket_insert(struct db_conn *c, const char *hash_hex, const char *sub,
                                      const char *role, const char *principal, int ttl_s,
                                      char *expires_at, size_t len);
/* Redeems a ticket at most once, atomically: DB_ONE_RESULT with its sub, role and
 * principal (*principal: malloc'd JSON text, caller frees), or DB_NO_RESULTS when it is
 * unknown, expired or already used. */
enum db_status db_event_ticket_redeem(struct db_conn *c, const char *hash_hex, char *sub,
                                      size_t sublen, char *role, size_t rolelen, char **principal);
/* Deletes tickets that expired more than a minute ago. */
enum db_status db_event_tickets_prune(struct db_conn *c, long *deleted);

#endif
