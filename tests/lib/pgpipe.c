/*
 * tests/lib/pgpipe.c - `psql -X -q -At -v ON_ERROR_STOP=1 -d URL -c SQL` over kept connections,
 * for the test harness (psql() in tests/api/lib/server.js). A psql process a call cost ~7 ms to
 * start, ~19 ms of its own CPU and a new PostgreSQL backend (fork, authentication, catalog
 * caches); the suites make about 2,200 calls a run. One pgpipe per test process keeps one
 * connection per URL (at most MAX_CONNS, least recently used closed first) and answers one
 * request at a time, synchronously: the caller writes a request on stdin and reads the reply
 * on stdout (two FIFOs, blocking, see server.js).
 *
 * Request:  u8 'Q', u8 flags, u32 timeout (ms), u32 url length, u32 sql length, url, sql
 * Reply:    i32 status, u32 stdout length, u32 stderr length, stdout, stderr
 * (integers little-endian). status is psql's exit status (0, 1 error, 2 connection failed or
 * lost), or -1 when the timeout passed (psql killed: spawnSync's status null). stdout and
 * stderr are what psql would have printed: the rows of every result set (fields joined by
 * '|', NULL empty, each row ends in '\n'), COPY TO STDOUT's data; notices and errors as libpq
 * formats them. At end of input: the reply is one line, "cpu <microseconds>\n", this
 * process's CPU (the harness counts it with the test file's), and pgpipe exits.
 *
 * What psql's own process gave for free, kept here: the whole SQL string goes as one simple
 * query (PQsendQuery: several statements run as one implicit transaction); after each call,
 * an open transaction is rolled back and DISCARD ALL resets the session (settings, temporary
 * tables, prepared statements, advisory locks, LISTEN), as a new session would start. A kept
 * connection that the server closed meanwhile (restart, pg_terminate_backend, DROP DATABASE
 * ... WITH (FORCE)) has input waiting or is hung up: it is closed and connected again, and
 * a connection that cannot be made fails as psql does ("psql: error: ...", status 2).
 * flags & FLAG_CLOSE_OTHERS: before the call, every other kept connection is closed
 * (DROP/ALTER/CREATE DATABASE fail while another session is connected to the database).
 * flags & FLAG_VERBOSE: errors and notices as `psql -v VERBOSITY=verbose` prints them (libpq's
 * PQERRORS_VERBOSE: the SQLSTATE after the severity, and LOCATION); otherwise the default.
 */
#include <libpq-fe.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS         8
#define FLAG_CLOSE_OTHERS 1
#define FLAG_VERBOSE      2
#define STATUS_TIMEOUT    (-1)

struct buf {
    char *p;
    size_t n, cap;
};

struct conn {
    char *url;
    PGconn *pg;
    unsigned long used;
};

static struct conn conns[MAX_CONNS];
static unsigned long clock_uses;
static struct buf *notice_sink; /* where notices go while a call runs; NULL: dropped */

static void die(const char *what)
{
    fprintf(stderr, "pgpipe: %s\n", what);
    exit(3);
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            die("out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

/* s with exactly one trailing newline (psql's pg_log_* strip one and add one) */
static void buf_line(struct buf *b, const char *s)
{
    size_t n = strlen(s);
    while (n && s[n - 1] == '\n')
        n--;
    buf_add(b, s, n);
    buf_add(b, "\n", 1);
}

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r == 0)
            return 0;
        if (r < 0)
            die("read failed");
        c += r;
        n -= (size_t)r;
    }
    return 1;
}

static void write_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t r = write(fd, c, n);
        if (r <= 0)
            exit(0); /* the harness went away */
        c += r;
        n -= (size_t)r;
    }
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_notice(void *arg, const char *message)
{
    (void)arg;
    if (notice_sink)
        buf_str(notice_sink, message);
}

static void conn_close(struct conn *c)
{
    PQfinish(c->pg);
    free(c->url);
    memset(c, 0, sizeof *c);
}

/* A kept connection that has input or a hang-up while no query runs was closed by the server
 * (an idle session is sent nothing else: DISCARD ALL ended any LISTEN). */
static int conn_alive(PGconn *pg)
{
    if (PQstatus(pg) != CONNECTION_OK || PQtransactionStatus(pg) != PQTRANS_IDLE)
        return 0;
    struct pollfd p = {.fd = PQsocket(pg), .events = POLLIN};
    if (p.fd < 0)
        return 0;
    return poll(&p, 1, 0) == 0;
}

/* As psql connects (startup.c): the URL as dbname, client_encoding from the locale unless
 * PGCLIENTENCODING says, no password prompt (stdin is no terminal: psql fails the same way). */
static PGconn *pg_connect(const char *url, int timeout_ms)
{
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", (timeout_ms + 999) / 1000);
    const char *keys[] = {"connect_timeout", "dbname", "fallback_application_name",
                          "client_encoding", NULL};
    const char *vals[] = {timeout, url, "pgpipe", getenv("PGCLIENTENCODING") ? NULL : "auto", NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    if (!pg)
        die("out of memory");
    PQsetNoticeProcessor(pg, on_notice, NULL);
    return pg;
}

/* The kept connection for url, made when there is none (NULL, and psql's message in err, when
 * it cannot be made). *fresh: it was made just now. */
static struct conn *conn_get(const char *url, int timeout_ms, int *fresh, struct buf *err)
{
    struct conn *slot = NULL;
    *fresh = 0;
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (c->url && strcmp(c->url, url) == 0) {
            if (conn_alive(c->pg)) {
                c->used = ++clock_uses;
                return c;
            }
            conn_close(c);
        }
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (!conns[i].url) {
            slot = &conns[i];
            break;
        }
        if (!slot || conns[i].used < slot->used)
            slot = &conns[i];
    }
    if (slot->url)
        conn_close(slot);
    PGconn *pg = pg_connect(url, timeout_ms);
    if (PQstatus(pg) != CONNECTION_OK) {
        buf_str(err, "psql: error: ");
        buf_line(err, PQerrorMessage(pg));
        PQfinish(pg);
        return NULL;
    }
    slot->url = strdup(url);
    if (!slot->url)
        die("out of memory");
    slot->pg = pg;
    slot->used = ++clock_uses;
    *fresh = 1;
    return slot;
}

/* psql -At: each row its fields joined by '|', NULL as nothing, and a newline; a result of
 * no columns prints nothing */
static void print_rows(const PGresult *res, struct buf *out)
{
    int rows = PQntuples(res), cols = PQnfields(res);
    if (cols == 0)
        return;
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            if (c)
                buf_add(out, "|", 1);
            buf_add(out, PQgetvalue(res, r, c), (size_t)PQgetlength(res, r, c));
        }
        buf_add(out, "\n", 1);
    }
}

#define WAIT_READY   1
#define WAIT_TIMEOUT 0
#define WAIT_LOST    (-1)

/* Waits for a result until the deadline. WAIT_LOST: the connection is gone (PQgetResult would
 * now wait on no socket and add "invalid socket" to the message psql prints). */
static int wait_input(PGconn *pg, int64_t deadline)
{
    while (PQisBusy(pg)) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return WAIT_TIMEOUT;
        struct pollfd p = {.fd = PQsocket(pg), .events = POLLIN};
        int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (r > 0 && !PQconsumeInput(pg))
            return WAIT_LOST;
    }
    return WAIT_READY;
}

/* COPY ... TO STDOUT's data goes to stdout as psql writes it; 0 when the deadline passed */
static int copy_out(PGconn *pg, struct buf *out, int64_t deadline)
{
    for (;;) {
        char *data = NULL;
        int n = PQgetCopyData(pg, &data, 1);
        if (n > 0) {
            buf_add(out, data, (size_t)n);
            PQfreemem(data);
            continue;
        }
        if (n < 0)
            return 1;
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = PQsocket(pg), .events = POLLIN};
        if (poll(&p, 1, left > 1000 ? 1000 : (int)left) > 0 && !PQconsumeInput(pg))
            return 1;
    }
}

/* Runs sql on pg as psql -c does. Returns psql's status; *answered: the query got an answer
 * (rows, a command done, an ERROR), not only the end of the session (FATAL, or a lost
 * connection: the transaction, if any had begun, was rolled back). */
static int run_query(PGconn *pg, const char *sql, int64_t deadline, struct buf *out,
                     struct buf *err, int *answered)
{
    int status = 0;
    size_t shown = 0; /* of PQerrorMessage, which collects the query's errors */
    *answered = 0;
    if (!PQsendQuery(pg, sql)) {
        buf_line(err, PQerrorMessage(pg));
        return PQstatus(pg) == CONNECTION_BAD ? 2 : 1;
    }
    for (;;) {
        int w = wait_input(pg, deadline);
        if (w == WAIT_TIMEOUT)
            return STATUS_TIMEOUT;
        if (w == WAIT_LOST)
            break;
        PGresult *res = PQgetResult(pg);
        if (!res)
            break;
        switch (PQresultStatus(res)) {
        case PGRES_TUPLES_OK:
        case PGRES_SINGLE_TUPLE: print_rows(res, out); break;
        case PGRES_COPY_OUT:
            if (!copy_out(pg, out, deadline)) {
                PQclear(res);
                return STATUS_TIMEOUT;
            }
            break;
        case PGRES_COPY_IN: PQputCopyEnd(pg, NULL); break; /* psql's stdin: empty */
        case PGRES_FATAL_ERROR:
        case PGRES_BAD_RESPONSE:
        case PGRES_NONFATAL_ERROR: {
            /* psql prints PQerrorMessage: the result's, after what was printed before */
            const char *e = PQerrorMessage(pg);
            if (strlen(e) <= shown)
                e = PQresultErrorMessage(res);
            else
                e += shown;
            buf_line(err, e);
            shown = strlen(PQerrorMessage(pg));
            status = 1;
            break;
        }
        default: break;
        }
        const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
        if (PQresultStatus(res) != PGRES_FATAL_ERROR || (sev && strcmp(sev, "ERROR") == 0))
            *answered = 1;
        PQclear(res);
    }
    if (PQstatus(pg) == CONNECTION_BAD) {
        const char *e = PQerrorMessage(pg);
        if (strlen(e) > shown)
            buf_line(err, e + shown);
        buf_str(err, "connection to server was lost\n");
        return 2;
    }
    return status;
}

/* A session as new: psql's would have ended here. 0 when that failed (the connection goes). */
static int reset_session(PGconn *pg)
{
    notice_sink = NULL;
    if (PQtransactionStatus(pg) != PQTRANS_IDLE) {
        PGresult *r = PQexec(pg, "ROLLBACK");
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
            return 0;
    }
    PGresult *r = PQexec(pg, "DISCARD ALL");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok && PQtransactionStatus(pg) == PQTRANS_IDLE;
}

static void cancel_query(PGconn *pg)
{
    PGcancel *c = PQgetCancel(pg);
    char msg[256];
    if (c) {
        PQcancel(c, msg, sizeof msg);
        PQfreeCancel(c);
    }
}

/* One call. A kept connection that turns out dead before the server answered anything (closed
 * between the check and the query) is made again once: the query never ran there. */
static int call(const char *url, const char *sql, int flags, int timeout_ms, struct buf *out,
                struct buf *err)
{
    int64_t deadline = now_ms() + timeout_ms;
    if (flags & FLAG_CLOSE_OTHERS) {
        for (int i = 0; i < MAX_CONNS; i++)
            if (conns[i].url && strcmp(conns[i].url, url) != 0)
                conn_close(&conns[i]);
    }
    for (int attempt = 0;; attempt++) {
        int fresh, answered;
        struct conn *c = conn_get(url, timeout_ms, &fresh, err);
        if (!c)
            return 2;
        size_t out0 = out->n, err0 = err->n;
        PQsetErrorVerbosity(c->pg, (flags & FLAG_VERBOSE) ? PQERRORS_VERBOSE : PQERRORS_DEFAULT);
        notice_sink = err;
        int status = run_query(c->pg, sql, deadline, out, err, &answered);
        notice_sink = NULL;
        if (status == STATUS_TIMEOUT) {
            cancel_query(c->pg);
            conn_close(c);
            return status;
        }
        if (status == 2 || !reset_session(c->pg)) {
            conn_close(c);
            if (status == 2 && !fresh && !answered && attempt == 0) {
                out->n = out0;
                err->n = err0;
                continue;
            }
        }
        return status;
    }
}

static void reply_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long long us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
    char line[64];
    int n = snprintf(line, sizeof line, "cpu %lld\n", us);
    write_full(1, line, (size_t)n);
}

int main(void)
{
    setlocale(LC_ALL, "");
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        unsigned char h[14];
        if (!read_full(0, h, sizeof h))
            break;
        if (h[0] != 'Q')
            die("bad request");
        uint32_t timeout_ms = get_u32(h + 2), url_n = get_u32(h + 6), sql_n = get_u32(h + 10);
        char *url = malloc((size_t)url_n + 1), *sql = malloc((size_t)sql_n + 1);
        if (!url || !sql)
            die("out of memory");
        if (!read_full(0, url, url_n) || !read_full(0, sql, sql_n))
            die("short request");
        url[url_n] = sql[sql_n] = '\0';
        struct buf out = {0}, err = {0};
        int status = call(url, sql, h[1], (int)timeout_ms, &out, &err);
        unsigned char r[12];
        put_u32(r, (uint32_t)status);
        put_u32(r + 4, (uint32_t)out.n);
        put_u32(r + 8, (uint32_t)err.n);
        write_full(1, r, sizeof r);
        write_full(1, out.p ? out.p : "", out.n);
        write_full(1, err.p ? err.p : "", err.n);
        free(out.p);
        free(err.p);
        free(url);
        free(sql);
    }
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].url)
            conn_close(&conns[i]);
    reply_cpu();
    return 0;
}
