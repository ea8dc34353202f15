/* db.h — libpq access: connection pool, status codes, prepared statements, transactions.
 * The only place (with migrations/) where SQL lives. */
#ifndef GPUFLEET_DB_H
#define GPUFLEET_DB_H

#include <libpq-fe.h>
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

/* A prepared statement. Each module exports its table (listed in db.c); a statement is
 * prepared on a connection the first time it runs there. */
struct db_stmt {
    const char *name;
    const char *sql;
};

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
 * Returns 0 on success (even if PostgreSQL is down right now). */
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
void db_release(struct db_conn *c);

/* Executes a prepared statement. params may contain NULLs (SQL NULL). On success *res holds
 * the result (caller PQclear()s) and the status is NO/ONE/MANY_RESULTS by row count (for
 * commands without rows: affected rows). */
enum db_status db_exec(struct db_conn *c, const char *stmt, int nparams,
                       const char *const *params, PGresult **res);
/* Same, discarding the result; returns the status only. */
enum db_status db_exec_noresult(struct db_conn *c, const char *stmt, int nparams,
                                const char *const *params);

/* Runs fn inside BEGIN … COMMIT on a pooled connection, retrying on serialization
 * failures and deadlocks (up to 5 attempts). fn returns a db_status; a negative one rolls
 * back. The final status is returned. */
typedef enum db_status (*db_tx_fn)(struct db_conn *c, void *arg);
enum db_status db_run_tx(db_tx_fn fn, void *arg);
/* Runs fn on a pooled connection without an explicit transaction (single reads). */
enum db_status db_run(db_tx_fn fn, void *arg);

/* Cheap liveness probe for /readyz: SELECT 1 on a pooled connection. */
enum db_status db_ping(void);

/* Number of applied migrations and the last one's name (readiness). */
enum db_status db_schema_applied(int *applied, char *last, size_t lastlen);

/* A page of rows that PostgreSQL rendered as JSON: each row has a "doc" column (one JSON
 * object, ready to send) and a "key" column (its keyset value). */
struct db_page {
    PGresult *res; /* owned; db_page_clear frees it */
};
int db_page_count(const struct db_page *p);
const char *db_page_doc(const struct db_page *p, int i);
const char *db_page_key(const struct db_page *p, int i);
void db_page_clear(struct db_page *p);
/* Runs a prepared statement that returns (doc, key) rows into *page. */
enum db_status db_exec_page(struct db_conn *c, const char *stmt, int nparams,
                            const char *const *params, struct db_page *page);
/* Runs a prepared statement returning one "doc" column; *doc receives a malloc'd copy
 * (caller frees) on DB_ONE_RESULT, else NULL. */
enum db_status db_exec_doc(struct db_conn *c, const char *stmt, int nparams,
                           const char *const *params, char **doc);

/* A dedicated connection that LISTENs on a channel (notifications arrive only on the
 * session that listens). */
struct db_listener;
struct db_listener *db_listen(const char *url, const char *channel);
/* The socket to poll for readability, or -1 while disconnected. */
int db_listener_fd(struct db_listener *l);
/* Consumes input; returns how many notifications arrived (reconnects when the
 * connection was lost, then reports 1 so the caller re-checks for work). */
int db_listener_drain(struct db_listener *l);
void db_listener_free(struct db_listener *l);

/* Column helpers for results. */
const char *db_str(const PGresult *r, int row, const char *col);  /* NULL for SQL NULL */
int db_isnull(const PGresult *r, int row, const char *col);

#endif
