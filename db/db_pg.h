/* db_pg.h — the libpq level of db/: prepared statements, their execution, and reading a
 * result's columns by name. For the modules under db/ only (and the unit tests of their
 * decoders): everything outside db/ sees db/db.h and the modules' typed structs, never a
 * PGresult. */
#ifndef GPUFLEET_DB_PG_H
#define GPUFLEET_DB_PG_H

#include <libpq-fe.h>
#include <stddef.h>

#include "db/db.h"

/* A prepared statement. Each module defines its table db_<m>_stmts[] (the modules are
 * listed in db/statements.def); db.c registers them once, by name, and a statement is
 * prepared on a connection the first time it runs there. */
struct db_stmt {
    const char *name;
    const char *sql;
};
#define DB_STMT_GROUP(m)                          \
    extern const struct db_stmt db_##m##_stmts[]; \
    extern const size_t db_##m##_nstmts;
#include "db/statements.def"
#undef DB_STMT_GROUP

/* SQL text of a timestamptz column as RFC 3339 in UTC with microseconds, the form of every
 * time in a document: DB_TS("h.created_at"). */
#define DB_TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* A CTE that makes a statement's plan serial (issue 28 item 5): it names set_config, which
 * is PARALLEL UNSAFE, and PostgreSQL plans no parallel query for a statement that names a
 * parallel-unsafe function anywhere; the CTE is never referenced, so it never runs. For
 * the reads that run side by side on their own connections (the recommendations' pass):
 * there each lane already holds a core, and a Gather's workers only add their start
 * (~100 ms a statement measured under load) and their share of the same two cores.
 * Usage: "WITH " DB_SERIAL_CTE ", x AS (...) SELECT ..." or "WITH " DB_SERIAL_CTE " SELECT". */
#define DB_SERIAL_CTE "serial AS (SELECT set_config('max_parallel_workers_per_gather', '0', true))"

/* Executes a registered statement. params may contain NULLs (SQL NULL). On success *res
 * holds the result (caller PQclear()s) and the status is NO/ONE/MANY_RESULTS by row count
 * (for commands without rows: affected rows); on failure *res is NULL. */
enum db_status db_exec(struct db_conn *c, const char *stmt, int nparams, const char *const *params,
                       PGresult **res);
/* The same in two halves, so that a statement runs on a second connection while the
 * caller reads on its own: db_send sends it without waiting (preparing it first where it
 * has not run), db_receive waits for its result (*res and the status as db_exec's). One
 * statement in flight per connection; db_release discards a result never received. */
enum db_status db_send(struct db_conn *c, const char *stmt, int nparams, const char *const *params);
enum db_status db_receive(struct db_conn *c, const char *stmt, PGresult **res);
/* A new connection to url with the pool's settings (statement timeout, keepalives), or
 * NULL; the caller PQfinish()es it (db/listener.c). */
PGconn *db_connect_url(const char *url);
/* Same, discarding the result; returns the status only. */
enum db_status db_exec_noresult(struct db_conn *c, const char *stmt, int nparams,
                                const char *const *params);
/* Same; *count receives the rows returned, or for a command without rows the rows
 * affected (0 on failure). */
enum db_status db_exec_count(struct db_conn *c, const char *stmt, int nparams,
                             const char *const *params, long *count);
/* Runs a statement returning (doc, key) rows into *page (what it held is freed first). */
enum db_status db_exec_page(struct db_conn *c, const char *stmt, int nparams,
                            const char *const *params, struct db_page *page);
/* Runs a statement returning a "doc" column; on DB_ONE_RESULT *doc receives a malloc'd
 * copy (caller frees), else NULL. */
enum db_status db_exec_doc(struct db_conn *c, const char *stmt, int nparams,
                           const char *const *params, char **doc);
/* The same, for a statement returning "doc" and "id": on DB_ONE_RESULT also copies the
 * id into id (else ""). Out of memory gives DB_HARD_ERROR. */
enum db_status db_exec_doc_id(struct db_conn *c, const char *stmt, int nparams,
                              const char *const *params, char **doc, char id[37]);
/* Runs a statement returning at most one row whose first column is a uuid (or NULL): on
 * DB_ONE_RESULT copies it into id ("" for NULL), else id is "". For DELETE … RETURNING
 * project_id and the like. */
/* A statement that answers one row: DB_ONE_RESULT with *r (the caller clears it), or the
 * status with *r cleared and NULL (no row: DB_NO_RESULTS; several: DB_MANY_RESULTS). */
enum db_status db_exec_row(struct db_conn *c, const char *stmt, int nparams,
                           const char *const *params, PGresult **r);
enum db_status db_exec_returning_id(struct db_conn *c, const char *stmt, int nparams,
                                    const char *const *params, char id[37]);
/* Runs a statement taking one parameter, a row limit (max), and returning an "id"
 * column: copies up to max ids into ids and their number into *n (0 on failure). */
enum db_status db_exec_ids(struct db_conn *c, const char *stmt, int max, char (*ids)[37], int *n);

/* ---- reading results: columns by name ----
 * A decoder names the columns it reads; a name the result lacks is a bug (the statement
 * and its decoder disagree) and asserts. Multi-row decoders resolve their columns once
 * (db_col, db_cols) and then read by index; single rows read by name. */

/* The index of column name in r. */
int db_col(const PGresult *r, const char *name);
/* Resolves names[0..n) into cols[0..n). */
void db_cols(const PGresult *r, const char *const *names, int n, int *cols);

/* The value at (row, col): its text, NULL for SQL NULL. */
const char *db_val(const PGresult *r, int row, int col);
/* A number (strtod; 0 for SQL NULL). */
double db_val_num(const PGresult *r, int row, int col);
/* An integer (strtol; 0 for SQL NULL). */
long db_val_long(const PGresult *r, int row, int col);
/* A boolean: 1 for true ("t"), 0 for false or SQL NULL. */
int db_val_bool(const PGresult *r, int row, int col);
int db_val_isnull(const PGresult *r, int row, int col);

/* The same by column name. */
const char *db_str(const PGresult *r, int row, const char *col);
int db_isnull(const PGresult *r, int row, const char *col);
double db_num(const PGresult *r, int row, const char *col);
long db_long(const PGresult *r, int row, const char *col);
int db_bool(const PGresult *r, int row, const char *col);
/* A malloc'd copy of the text (caller frees), NULL for SQL NULL. When the copy fails
 * *oom is set, so that out of memory never reads as NULL. */
char *db_dup(const PGresult *r, int row, const char *col, int *oom);
/* Copies the text into out (len bytes, truncated; "" for SQL NULL). */
void db_copy(const PGresult *r, int row, const char *col, char *out, size_t len);

/* A char * member of a struct (its offsetof) and the column it is copied from. */
struct db_str_field {
    const char *col;
    size_t offset;
};
/* Copies each column of row into its member of *out (malloc'd; NULL for SQL NULL).
 * Returns 0, or -1 when out of memory: then every member of the list is freed and
 * NULL, so that a failed copy never reads as SQL NULL. */
int db_dup_fields(const PGresult *r, int row, const struct db_str_field *f, size_t n, void *out);
/* Frees the members of the list in *out and sets them NULL. */
void db_free_fields(const struct db_str_field *f, size_t n, void *out);

#endif
