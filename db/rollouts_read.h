/* rollouts_read.h — the read side of stack rollouts (docs/rollouts.md §Document): the
 * rollout document rendered by PostgreSQL from rollouts, rollout_hosts and
 * rollout_skipped (migrations/0021_rollouts.sql), the list, and the windows the
 * document's cost view compares (priced by service/rollout_cost.h). The engine's writes
 * are in db/rollouts.h. */
#ifndef GPUFLEET_DB_ROLLOUTS_READ_H
#define GPUFLEET_DB_ROLLOUTS_READ_H

#include "db/db.h"

/* The rollout document without its cost view (*doc, caller frees); DB_NO_RESULTS when no
 * rollout has this id, or its pool is outside scope (the projects that may be read: a
 * uuid[] literal, NULL for every project). */
enum db_status db_rollout_get(struct db_conn *c, const char *id, const char *scope, char **doc);

/* Rollouts newest first: pool (a UUID) and state (a state, or "active" for running,
 * paused and rolling_back) filter when not NULL; keyset before_seq; up to limit rows of
 * (doc, key). The documents have no cost view. */
struct db_rollout_filter {
    const char *pool_id, *state, *before_seq;
    long limit;
    const char *scope, *project_id; /* the read scope, the ?project= filter (NULL: none) */
};
enum db_status db_rollout_list(struct db_conn *c, const struct db_rollout_filter *f,
                               struct db_page *page);

/* The times the cost view compares (RFC 3339, UTC), read from the rollout's row:
 * before = [before_from, start), after = [after_from, now) — docs/rollouts.md §Document.
 * DB_NO_RESULTS when no rollout has this id. */
struct db_rollout_window {
    char pool_id[37];
    char before_from[40], start[40], after_from[40], now[40];
};
enum db_status db_rollout_window(struct db_conn *c, const char *id, struct db_rollout_window *w);

#endif
