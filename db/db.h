/* db.h — database access: connection pool, status codes, transactions, pages of documents.
 * db/ is the only place (with migrations/) where SQL lives, and the only one that sees
 * libpq: the modules (db/hosts.h, db/costs.h, …) return typed structs and documents that
 * PostgreSQL rendered; their statements and the libpq level are in db/db_pg.h. */
#ifndef GPUFLEET_DB_H
#define GPUFLEET_DB_H

#include <stddef.h>
#include <stdint.h>

/* Result of a database call, after Taler's convention. */
enum db_status {
    DB_TIMEOUT = -4,     /* the statement timeout cancelled the query (57014) */
    DB_UNAVAILABLE = -3, /* cannot reach PostgreSQL (connection class 08, shutdown) */
    DB_HARD_ERROR = -2,  /* a bug or constraint the caller did not expect */
    DB_SOFT_ERROR = -1,  /* serialization failure / deadlock: retry the transaction */
    DB_NO_RESULTS = 0,
    DB_ONE_RESULT = 1,
    DB_MANY_RESULTS = 2,
};

/* A pooled connection. Opaque except for the SQLSTATE of the last failure. */
struct db_conn;
const char *db_conn_sqlstate(const struct db_conn *c); /* "" when none */
/* True when the last failure was a unique violation (23505). */
int db_conn_unique_violation(const struct db_conn *c);
/* True when the last failure was a foreign-key violation (23503). */
int db_conn_fk_violation(const struct db_conn *c);

struct db_pool_stats {
    int size;
    int in_use;
    int connected;
    uint64_t acquires;
    uint64_t waits;
    uint64_t timeouts;
    uint64_t connect_failures;
    uint64_t wait_us_total;
};

/* Creates the pool. Connections open lazily; a failed connection is retried with backoff.
 * Returns 0 on success (even if PostgreSQL is down right now); -1 when out of memory or
 * when the pool exists already (db_pool_shutdown it first). */
int db_pool_init(const char *url, int size);
/* The SQL text of a registered statement, or NULL (gpufleetd sql, for EXPLAIN). */
const char *db_statement_sql(const char *name);
/* The statement timeout of connections opened from now on (default 15000 ms). */
void db_set_statement_timeout(int ms);
/* TCP keepalives and tcp_user_timeout of connections opened from now on. */
void db_set_keepalives(int idle_s, int interval_s, int count, int tcp_user_timeout_ms);
void db_pool_shutdown(void);
void db_pool_stats(struct db_pool_stats *out);

/* Borrows a live connection (waits up to 5 s for a free slot). NULL when the database is
 * unavailable or the pool is exhausted; *status tells which. */
struct db_conn *db_acquire(enum db_status *status);
/* Borrows a free connection without waiting, for a read run beside the caller's own
 * (db_send): NULL when none is free now, when the database is unavailable, or inside the
 * request transaction (everything then runs on its connection). */
struct db_conn *db_try_acquire(void);
void db_release(struct db_conn *c);

/* Runs fn inside BEGIN … COMMIT on a pooled connection, retrying on serialization
 * failures and deadlocks (up to 5 attempts). fn returns a db_status; a negative one rolls
 * back. The final status is returned. */
typedef enum db_status (*db_tx_fn)(struct db_conn *c, void *arg);
enum db_status db_run_tx(db_tx_fn fn, void *arg);
/* Runs fn on a pooled connection without an explicit transaction (single reads). */
enum db_status db_run(db_tx_fn fn, void *arg);
/* Runs fn on a free pooled connection of its own (never the request transaction's),
 * inside BEGIN … COMMIT (no retry: for reads) and without waiting for a slot: *ran is 0
 * when no slot was free or its connection failed (fn did not run: the caller does the
 * work itself). For a read beside the caller's own on another thread (service/recommend.c);
 * the transaction lets fn raise a setting for its statements only (db_local_work_mem). */
enum db_status db_run_spare(db_tx_fn fn, void *arg, int *ran);
/* Sets work_mem (a PostgreSQL size, e.g. "32MB") for the rest of c's transaction: for a
 * read whose sort or materialized CTE would otherwise spill to disk. Outside a transaction
 * it changes nothing. */
enum db_status db_local_work_mem(struct db_conn *c, const char *size);

/* The request transaction: one transaction around everything this thread does until
 * db_request_end, so that a request's effect and its record (an Idempotency-Key's stored
 * answer) commit together or not at all. While it is open, db_acquire answers its
 * connection (db_release leaves it), and db_run_tx / db_run run fn under a savepoint
 * (kept when fn succeeds, undone when it fails; db_run_tx retries a serialization failure
 * or deadlock). db_request_end commits (commit = 1) or rolls back; a commit of a failed
 * transaction is an error. One per thread, not nested. */
enum db_status db_request_begin(void);
enum db_status db_request_end(int commit);
int db_request_active(void);

/* Cheap liveness probe for /readyz: SELECT 1 on a pooled connection. */
enum db_status db_ping(void);

/* Number of applied migrations and the last one's name (readiness). */
enum db_status db_schema_applied(int *applied, char *last, size_t lastlen);

/* A page of rows that PostgreSQL rendered as JSON: each row has a doc (one JSON object,
 * ready to send) and a key (its keyset value). Start it empty ({NULL}); a module's list
 * function frees what it held before filling it; db_page_clear frees it. */
struct db_page {
    void *res; /* the result (owned; opaque outside db/) */
};
int db_page_count(const struct db_page *p);
const char *db_page_doc(const struct db_page *p, int i);
const char *db_page_key(const struct db_page *p, int i);
void db_page_clear(struct db_page *p);

/* A dedicated connection that LISTENs on a channel (notifications arrive only on the
 * session that listens). NULL when out of memory; otherwise it connects now or later. */
struct db_listener;
struct db_listener *db_listen(const char *url, const char *channel);
/* The socket to poll for readability, or -1 while disconnected. */
int db_listener_fd(struct db_listener *l);
/* Consumes input; returns how many notifications arrived (reconnects when the
 * connection was lost, then reports 1 so the caller re-checks for work). */
int db_listener_drain(struct db_listener *l);
void db_listener_free(struct db_listener *l);

#endif
