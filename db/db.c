/* db.c — connection pool, statement registry, execution and transactions. Reading
 * results (columns, pages, documents) is in result.c, listeners in listener.c. See db.h,
 * db_pg.h. */
#include "db/db.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "db/db_pg.h"

#define DB_ACQUIRE_TIMEOUT_US   (5 * 1000000LL)
#define DB_RECONNECT_BACKOFF_US (250 * 1000LL)
#define DB_TX_ATTEMPTS          5

#define DB_MAX_STMTS  256
#define DB_STMT_SLOTS 512 /* hash slots: a power of two, at least twice DB_MAX_STMTS */

struct db_conn {
    PGconn *pg;
    unsigned char prepared[DB_MAX_STMTS]; /* statements are prepared lazily, once per conn */
    int in_use;
    int64_t last_connect_fail_us;
    char sqlstate[6];
};

/* ---- the statement registry ---- */

static const struct db_stmt ping_stmts[] = {
    {"db_ping", "SELECT 1"},
    /* db_local_work_mem: is_local, so the setting ends with the transaction */
    {"db_local_work_mem", "SELECT set_config('work_mem', $1::text, true)"},
};
static const size_t ping_nstmts = sizeof ping_stmts / sizeof ping_stmts[0];

/* Every registered statement: stmts[i] is statement i (its slot in a connection's
 * prepared[]); slots[] finds i by name (open addressing, linear probing; i + 1, 0 when
 * empty). Built once, before the first lookup, and read-only after. */
static struct {
    pthread_once_t once;
    int count;
    const struct db_stmt *stmts[DB_MAX_STMTS];
    short slots[DB_STMT_SLOTS];
} reg = {.once = PTHREAD_ONCE_INIT};

static uint32_t stmt_hash(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t stmt_slot(const char *name)
{
    size_t i = stmt_hash(name) & (DB_STMT_SLOTS - 1);
    while (reg.slots[i] != 0 && strcmp(reg.stmts[reg.slots[i] - 1]->name, name) != 0)
        i = (i + 1) & (DB_STMT_SLOTS - 1);
    return i;
}

static void stmt_register(void)
{
    static const struct {
        const struct db_stmt *stmts;
        const size_t *n;
    } groups[] = {
        {ping_stmts, &ping_nstmts},
#define DB_STMT_GROUP(m) {db_##m##_stmts, &db_##m##_nstmts},
#include "db/statements.def"
#undef DB_STMT_GROUP
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        for (size_t i = 0; i < *groups[g].n; i++) {
            const struct db_stmt *st = &groups[g].stmts[i];
            size_t slot = stmt_slot(st->name);
            assert(reg.count < DB_MAX_STMTS);
            assert(reg.slots[slot] == 0); /* two statements with one name */
            reg.stmts[reg.count] = st;
            reg.slots[slot] = (short)++reg.count;
        }
    }
}

/* Index of a registered statement, or -1. */
static int stmt_index(const char *name)
{
    pthread_once(&reg.once, stmt_register);
    int v = reg.slots[stmt_slot(name)];
    return v - 1;
}

const char *db_statement_sql(const char *name)
{
    int idx = stmt_index(name);
    return idx < 0 ? NULL : reg.stmts[idx]->sql;
}

/* ---- the pool ---- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *url;
    struct db_conn *conns;
    int size;
    int in_use;
    atomic_uint_fast64_t acquires, waits, timeouts, connect_failures, wait_us_total;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

const char *db_conn_sqlstate(const struct db_conn *c)
{
    return c->sqlstate;
}
int db_conn_unique_violation(const struct db_conn *c)
{
    return strcmp(c->sqlstate, "23505") == 0;
}
int db_conn_fk_violation(const struct db_conn *c)
{
    return strcmp(c->sqlstate, "23503") == 0;
}

int db_pool_init(const char *url, int size)
{
    assert(size > 0);
    pthread_mutex_lock(&pool.mu);
    int rc = -1;
    if (pool.conns != NULL)
        goto cleanup; /* initialized already: replacing it would lose its connections */
    pool.url = strdup(url);
    pool.conns = calloc((size_t)size, sizeof *pool.conns);
    if (pool.url == NULL || pool.conns == NULL) {
        free(pool.url);
        free(pool.conns);
        pool.url = NULL;
        pool.conns = NULL;
        goto cleanup;
    }
    pool.size = size;
    pool.in_use = 0;
    rc = 0;
cleanup:
    pthread_mutex_unlock(&pool.mu);
    return rc;
}

void db_pool_shutdown(void)
{
    pthread_mutex_lock(&pool.mu);
    for (int i = 0; i < pool.size; i++) {
        if (pool.conns[i].pg != NULL)
            PQfinish(pool.conns[i].pg);
        pool.conns[i].pg = NULL;
    }
    free(pool.conns);
    pool.conns = NULL;
    free(pool.url);
    pool.url = NULL;
    pool.size = 0;
    pthread_mutex_unlock(&pool.mu);
}

void db_pool_stats(struct db_pool_stats *out)
{
    pthread_mutex_lock(&pool.mu);
    out->size = pool.size;
    out->in_use = pool.in_use;
    out->connected = 0;
    for (int i = 0; i < pool.size; i++)
        if (pool.conns[i].pg != NULL && PQstatus(pool.conns[i].pg) == CONNECTION_OK)
            out->connected++;
    pthread_mutex_unlock(&pool.mu);
    out->acquires = atomic_load(&pool.acquires);
    out->waits = atomic_load(&pool.waits);
    out->timeouts = atomic_load(&pool.timeouts);
    out->connect_failures = atomic_load(&pool.connect_failures);
    out->wait_us_total = atomic_load(&pool.wait_us_total);
}

/* Quiet libpq's NOTICE output; our log is JSON. */
static void notice_sink(void *arg, const char *msg)
{
    (void)arg;
    log_msg(LOG_DEBUG, "postgres notice: %.200s", msg);
}

static int statement_timeout_ms = 15000;
static char ka_idle[16] = "10", ka_interval[16] = "5", ka_count[16] = "3",
            tcp_user_timeout[16] = "20000";

void db_set_statement_timeout(int ms)
{
    statement_timeout_ms = ms;
}

void db_set_keepalives(int idle_s, int interval_s, int count, int tcp_user_timeout_ms)
{
    snprintf(ka_idle, sizeof ka_idle, "%d", idle_s);
    snprintf(ka_interval, sizeof ka_interval, "%d", interval_s);
    snprintf(ka_count, sizeof ka_count, "%d", count);
    snprintf(tcp_user_timeout, sizeof tcp_user_timeout, "%d", tcp_user_timeout_ms);
}

/* Opens a connection with a bounded connect timeout and a statement timeout. The caller
 * owns the result (PQfinish). Returns NULL on failure. */
PGconn *db_connect_url(const char *url)
{
    /* TCP keepalives and tcp_user_timeout: a partitioned server is noticed within seconds,
     * not when the kernel gives up (minutes), so a worker cannot keep acting on a lease it
     * can no longer renew. (Ignored on Unix-domain sockets.) */
    const char *keys[] = {"dbname",
                          "connect_timeout",
                          "application_name",
                          "options",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          NULL};
    char options[96];
    snprintf(options, sizeof options, "-c statement_timeout=%d -c jit=off", statement_timeout_ms);
    const char *vals[] = {url,     "3",         "gpufleetd", options,          "1",
                          ka_idle, ka_interval, ka_count,    tcp_user_timeout, NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    if (pg == NULL || PQstatus(pg) != CONNECTION_OK) {
        /* The message may name the host; it never contains the password. */
        log_msg(LOG_WARN, "database connection failed: %.300s",
                pg ? PQerrorMessage(pg) : "out of memory");
        if (pg != NULL)
            PQfinish(pg);
        return NULL;
    }
    PQsetNoticeProcessor(pg, notice_sink, NULL);
    return pg;
}

/* Ensures c holds a healthy, prepared connection. Called without the pool lock. */
static int ensure_connected(struct db_conn *c)
{
    if (c->pg != NULL && PQstatus(c->pg) == CONNECTION_OK)
        return 0;
    if (c->pg != NULL) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    int64_t now = util_mono_us();
    if (c->last_connect_fail_us != 0 && now - c->last_connect_fail_us < DB_RECONNECT_BACKOFF_US)
        return -1;
    PGconn *pg = db_connect_url(pool.url);
    if (pg == NULL) {
        c->last_connect_fail_us = util_mono_us();
        atomic_fetch_add(&pool.connect_failures, 1);
        return -1;
    }
    c->pg = pg;
    memset(c->prepared, 0, sizeof c->prepared);
    c->last_connect_fail_us = 0;
    return 0;
}

/* The request transaction of this thread (db_request_begin), or NULL. */
static _Thread_local struct db_conn *request_conn;

/* A free slot of the pool, connected; wait: up to DB_ACQUIRE_TIMEOUT_US for one. */
static struct db_conn *acquire(enum db_status *status, int wait)
{
    struct db_conn *c = NULL;
    int64_t start = 0;
    atomic_fetch_add(&pool.acquires, 1);
    pthread_mutex_lock(&pool.mu);
    while (pool.in_use == pool.size) {
        if (!wait) {
            pthread_mutex_unlock(&pool.mu);
            *status = DB_UNAVAILABLE;
            return NULL;
        }
        if (start == 0) {
            start = util_mono_us();
            atomic_fetch_add(&pool.waits, 1);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&pool.cv, &pool.mu, &ts);
        if (pool.in_use == pool.size && util_mono_us() - start > DB_ACQUIRE_TIMEOUT_US) {
            pthread_mutex_unlock(&pool.mu);
            atomic_fetch_add(&pool.timeouts, 1);
            *status = DB_UNAVAILABLE;
            return NULL;
        }
    }
    /* Prefer a slot that is already connected. */
    for (int i = 0; i < pool.size; i++) {
        struct db_conn *cand = &pool.conns[i];
        if (cand->in_use)
            continue;
        if (c == NULL || (c->pg == NULL && cand->pg != NULL))
            c = cand;
        if (c->pg != NULL)
            break;
    }
    assert(c != NULL);
    c->in_use = 1;
    pool.in_use++;
    pthread_mutex_unlock(&pool.mu);
    if (start != 0)
        atomic_fetch_add(&pool.wait_us_total, (uint64_t)(util_mono_us() - start));

    if (ensure_connected(c) != 0) {
        db_release(c);
        *status = DB_UNAVAILABLE;
        return NULL;
    }
    c->sqlstate[0] = '\0';
    *status = DB_ONE_RESULT;
    return c;
}

struct db_conn *db_acquire(enum db_status *status)
{
    if (request_conn != NULL) { /* everything this thread does joins the request's */
        *status = request_conn->pg != NULL ? DB_ONE_RESULT : DB_UNAVAILABLE;
        return request_conn->pg != NULL ? request_conn : NULL;
    }
    return acquire(status, 1);
}

struct db_conn *db_try_acquire(void)
{
    enum db_status s;
    return request_conn != NULL ? NULL : acquire(&s, 0);
}

void db_release(struct db_conn *c)
{
    if (c == NULL || c == request_conn)
        return;     /* the request transaction's ends with db_request_end */
    PGresult *left; /* a statement sent (db_send) and never received */
    while (c->pg != NULL && (left = PQgetResult(c->pg)) != NULL)
        PQclear(left);
    /* A connection left inside a transaction (error path) must not be reused as is. */
    if (c->pg != NULL && PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
        PGresult *r = PQexec(c->pg, "ROLLBACK");
        PQclear(r);
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
            PQfinish(c->pg);
            c->pg = NULL;
        }
    }
    pthread_mutex_lock(&pool.mu);
    c->in_use = 0;
    pool.in_use--;
    pthread_cond_signal(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
}

/* Maps a failed result to a status, keeping the SQLSTATE. */
static enum db_status classify(struct db_conn *c, const PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "");
    if (PQstatus(c->pg) != CONNECTION_OK || state == NULL || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0) {
        log_msg(LOG_WARN, "database unavailable during %s: %.200s", what, PQerrorMessage(c->pg));
        PQfinish(c->pg);
        c->pg = NULL;
        return DB_UNAVAILABLE;
    }
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
        return DB_SOFT_ERROR;
    if (strcmp(state, "57014") == 0) {
        log_msg(LOG_WARN, "statement %s ran past the statement timeout", what);
        return DB_TIMEOUT;
    }
    if (strcmp(state, "23505") != 0 && strcmp(state, "23503") != 0)
        log_msg(LOG_ERROR, "statement %s failed (SQLSTATE %s): %.300s", what, state,
                PQresultErrorMessage(r));
    return DB_HARD_ERROR;
}

/* Prepares stmt on c the first time it runs there. */
static enum db_status prepare(struct db_conn *c, const char *stmt)
{
    int idx = stmt_index(stmt);
    assert(idx >= 0 && idx < DB_MAX_STMTS); /* an unregistered statement is a bug */
    if (!c->prepared[idx]) {
        PGresult *pr = PQprepare(c->pg, stmt, reg.stmts[idx]->sql, 0, NULL);
        if (PQresultStatus(pr) != PGRES_COMMAND_OK) {
            enum db_status s = classify(c, pr, stmt);
            PQclear(pr);
            return s;
        }
        PQclear(pr);
        c->prepared[idx] = 1;
    }
    return DB_NO_RESULTS;
}

/* The status of stmt's result r: *res = r on success; r cleared on failure. */
static enum db_status finish(struct db_conn *c, PGresult *r, const char *stmt, PGresult **res)
{
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        enum db_status s = classify(c, r, stmt);
        PQclear(r);
        return s;
    }
    long n;
    if (st == PGRES_TUPLES_OK) {
        n = PQntuples(r);
    } else {
        const char *t = PQcmdTuples(r);
        n = (t && *t) ? atol(t) : 0;
    }
    *res = r;
    return n == 0 ? DB_NO_RESULTS : n == 1 ? DB_ONE_RESULT : DB_MANY_RESULTS;
}

enum db_status db_exec(struct db_conn *c, const char *stmt, int nparams, const char *const *params,
                       PGresult **res)
{
    *res = NULL;
    enum db_status s = prepare(c, stmt);
    if (s < 0)
        return s;
    return finish(c, PQexecPrepared(c->pg, stmt, nparams, params, NULL, NULL, 0), stmt, res);
}

enum db_status db_send(struct db_conn *c, const char *stmt, int nparams, const char *const *params)
{
    enum db_status s = prepare(c, stmt);
    if (s < 0)
        return s;
    if (PQsendQueryPrepared(c->pg, stmt, nparams, params, NULL, NULL, 0) != 1)
        return classify(c, NULL, stmt);
    return DB_NO_RESULTS;
}

enum db_status db_receive(struct db_conn *c, const char *stmt, PGresult **res)
{
    PGresult *r, *first = NULL; /* one statement: one result, then NULL */
    *res = NULL;
    if (c->pg == NULL)
        return DB_UNAVAILABLE;
    while ((r = PQgetResult(c->pg)) != NULL) {
        if (first == NULL)
            first = r;
        else
            PQclear(r);
    }
    return finish(c, first, stmt, res);
}

enum db_status db_exec_noresult(struct db_conn *c, const char *stmt, int nparams,
                                const char *const *params)
{
    PGresult *r;
    enum db_status s = db_exec(c, stmt, nparams, params, &r);
    PQclear(r);
    return s;
}

enum db_status db_exec_count(struct db_conn *c, const char *stmt, int nparams,
                             const char *const *params, long *count)
{
    PGresult *r;
    *count = 0;
    enum db_status s = db_exec(c, stmt, nparams, params, &r);
    if (s >= 0) {
        const char *t = PQcmdTuples(r);
        *count = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : (t && *t) ? atol(t) : 0;
    }
    PQclear(r);
    return s;
}

static enum db_status simple(struct db_conn *c, const char *sql)
{
    PGresult *r = PQexec(c->pg, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        enum db_status s = classify(c, r, sql);
        PQclear(r);
        return s;
    }
    PQclear(r);
    return DB_NO_RESULTS;
}

/* fn inside the request transaction, under a savepoint: its writes are kept when it
 * succeeds and undone when it fails (retried on a serialization failure or deadlock when
 * retry), as its own transaction would be; the request's transaction commits them. */
static enum db_status run_nested(db_tx_fn fn, void *arg, int retry)
{
    enum db_status s = DB_HARD_ERROR;
    for (int attempt = 1; attempt <= DB_TX_ATTEMPTS; attempt++) {
        struct db_conn *c = request_conn;
        s = simple(c, "SAVEPOINT gf_nested");
        if (s < 0)
            return s;
        s = fn(c, arg);
        enum db_status e =
            simple(c, s >= 0 ? "RELEASE SAVEPOINT gf_nested" : "ROLLBACK TO SAVEPOINT gf_nested");
        if (e >= 0 && s < 0)
            e = simple(c, "RELEASE SAVEPOINT gf_nested");
        if (e < 0)
            return e;
        if (s != DB_SOFT_ERROR || !retry)
            return s;
        unsigned char j;
        util_random(&j, 1);
        usleep((useconds_t)(attempt * 2000 + j * 20));
    }
    return s;
}

enum db_status db_request_begin(void)
{
    assert(request_conn == NULL);
    enum db_status s;
    struct db_conn *c = db_acquire(&s);
    if (c == NULL)
        return s;
    s = simple(c, "BEGIN");
    if (s < 0) {
        db_release(c);
        return s;
    }
    request_conn = c;
    return DB_NO_RESULTS;
}

enum db_status db_request_end(int commit)
{
    struct db_conn *c = request_conn;
    if (c == NULL)
        return DB_HARD_ERROR;
    request_conn = NULL;
    enum db_status s = DB_NO_RESULTS;
    if (commit) {
        /* COMMIT of a failed transaction answers ROLLBACK: never take that for success */
        s = c->pg != NULL && PQtransactionStatus(c->pg) == PQTRANS_INTRANS ? simple(c, "COMMIT")
                                                                           : DB_HARD_ERROR;
    }
    db_release(c); /* rolls back what was not committed */
    return s;
}

int db_request_active(void)
{
    return request_conn != NULL;
}

enum db_status db_run_tx(db_tx_fn fn, void *arg)
{
    if (request_conn != NULL)
        return run_nested(fn, arg, 1);
    enum db_status s = DB_HARD_ERROR;
    for (int attempt = 1; attempt <= DB_TX_ATTEMPTS; attempt++) {
        struct db_conn *c = db_acquire(&s);
        if (c == NULL)
            return s;
        s = simple(c, "BEGIN");
        if (s >= 0) {
            s = fn(c, arg);
            if (s >= 0) {
                enum db_status cs = simple(c, "COMMIT");
                if (cs < 0)
                    s = cs;
            }
        }
        db_release(c); /* rolls back if still in a transaction */
        if (s != DB_SOFT_ERROR)
            return s;
        /* Jittered backoff before retrying a serialization failure or deadlock. */
        unsigned char j;
        util_random(&j, 1);
        usleep((useconds_t)(attempt * 2000 + j * 20));
    }
    return s;
}

enum db_status db_run(db_tx_fn fn, void *arg)
{
    if (request_conn != NULL)
        return run_nested(fn, arg, 0);
    enum db_status s;
    struct db_conn *c = db_acquire(&s);
    if (c == NULL)
        return s;
    s = fn(c, arg);
    db_release(c);
    return s;
}

enum db_status db_run_spare(db_tx_fn fn, void *arg, int *ran)
{
    enum db_status s;
    struct db_conn *c = acquire(&s, 0);
    if ((*ran = c != NULL) != 0) {
        s = simple(c, "BEGIN");
        if (s >= 0)
            s = fn(c, arg);
        if (s >= 0) {
            enum db_status cs = simple(c, "COMMIT");
            s = cs < 0 ? cs : s;
        }
        db_release(c); /* rolls back if still in a transaction */
    }
    return s;
}

enum db_status db_local_work_mem(struct db_conn *c, const char *size)
{
    const char *p[1] = {size};
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "db_local_work_mem", 1, p, &r);
    PQclear(r);
    return s;
}

static enum db_status ping_fn(struct db_conn *c, void *arg)
{
    (void)arg;
    return db_exec_noresult(c, "db_ping", 0, NULL);
}

enum db_status db_ping(void)
{
    return db_run(ping_fn, NULL);
}

struct schema_arg {
    int *applied;
    char *last;
    size_t lastlen;
};

/* Not a prepared statement: the table may not exist yet on an unmigrated database. */
static enum db_status schema_fn(struct db_conn *c, void *arg)
{
    struct schema_arg *a = arg;
    PGresult *r = PQexecParams(c->pg,
                               "SELECT count(*)::int AS applied, coalesce(max(name), '') AS last"
                               " FROM schema_migrations",
                               0, NULL, NULL, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (st != NULL && strcmp(st, "42P01") == 0) { /* undefined_table: fresh database */
            PQclear(r);
            *a->applied = 0;
            a->last[0] = '\0';
            return DB_ONE_RESULT;
        }
        enum db_status s = classify(c, r, "schema check");
        PQclear(r);
        return s;
    }
    /* by position, with libpq: result.c's readers run statements through db.c, so db.c
     * does not call them back */
    *a->applied = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(a->last, a->lastlen, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    return DB_ONE_RESULT;
}

enum db_status db_schema_applied(int *applied, char *last, size_t lastlen)
{
    struct schema_arg a = {applied, last, lastlen};
    return db_run(schema_fn, &a);
}
