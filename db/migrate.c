/* migrate.c — migration runner. The migration SQL is our own embedded text; the only
 * values sent with it (names, checksums) go through PQexecParams. */
#include "db/migrate.h"

#include <assert.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* Arbitrary, fixed key for pg_advisory_lock: "gpufleet" in ASCII. */
#define DB_MIGRATIONS_MAX 1024
#define MIGRATE_LOCK_KEY  "7451033547071243636"

static const char create_table_sql[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                       " name text PRIMARY KEY,"
                                       " sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

static PGconn *open_conn(const char *url, char *msg, size_t msglen)
{
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {url, "5", "gpufleetd-migrate", NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(pg) != CONNECTION_OK) {
        snprintf(msg, msglen, "cannot connect to the database: %s", PQerrorMessage(pg));
        msg[strcspn(msg, "\n")] = '\0';
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

static int exec_ok(PGconn *pg, const char *sql, char *msg, size_t msglen, const char *what)
{
    PGresult *r = PQexec(pg, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        snprintf(msg, msglen, "%s failed: %s", what, PQresultErrorMessage(r));
        msg[strcspn(msg, "\n")] = '\0';
    }
    PQclear(r);
    return ok ? 0 : -1;
}

static const struct db_migration *find_embedded(const char *name, size_t *idx)
{
    for (size_t i = 0; i < db_migrations_count; i++) {
        if (strcmp(db_migrations[i].name, name) == 0) {
            *idx = i;
            return &db_migrations[i];
        }
    }
    return NULL;
}

/* Core comparison on an open connection. applied_mask[i] is set for applied files. */
static enum db_schema_state compare(PGconn *pg, unsigned char *applied_mask, int *applied,
                                    char *msg, size_t msglen)
{
    *applied = 0;
    PGresult *r = PQexec(pg, "SELECT to_regclass('schema_migrations') IS NOT NULL");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(msg, msglen, "cannot read the schema: %s", PQresultErrorMessage(r));
        msg[strcspn(msg, "\n")] = '\0';
        PQclear(r);
        return DB_SCHEMA_UNREACHABLE;
    }
    int exists = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!exists) {
        snprintf(msg, msglen, "the database is not migrated (%zu pending migrations)",
                 db_migrations_count);
        return db_migrations_count ? DB_SCHEMA_PENDING : DB_SCHEMA_CURRENT;
    }
    r = PQexec(pg, "SELECT name, sha256 FROM schema_migrations ORDER BY name");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(msg, msglen, "cannot read schema_migrations: %s", PQresultErrorMessage(r));
        msg[strcspn(msg, "\n")] = '\0';
        PQclear(r);
        return DB_SCHEMA_UNREACHABLE;
    }
    enum db_schema_state st = DB_SCHEMA_CURRENT;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        const char *sum = PQgetvalue(r, i, 1);
        size_t idx;
        const struct db_migration *m = find_embedded(name, &idx);
        if (m == NULL) {
            snprintf(msg, msglen,
                     "the database schema is newer than this binary: migration %s is applied "
                     "but unknown here; upgrade gpufleetd",
                     name);
            st = DB_SCHEMA_NEWER;
            break;
        }
        char hex[65];
        util_sha256_hex(m->sql, m->len, hex);
        if (strcmp(hex, sum) != 0) {
            snprintf(msg, msglen,
                     "checksum mismatch for migration %s: applied %.12s…, file %.12s…; an "
                     "applied migration must never be edited, add a new one instead",
                     name, sum, hex);
            st = DB_SCHEMA_MISMATCH;
            break;
        }
        applied_mask[idx] = 1;
        (*applied)++;
    }
    PQclear(r);
    if (st != DB_SCHEMA_CURRENT)
        return st;
    /* Applied files must be a prefix of the embedded order. */
    int seen_gap = 0;
    for (size_t i = 0; i < db_migrations_count; i++) {
        if (!applied_mask[i]) {
            seen_gap = 1;
        } else if (seen_gap) {
            snprintf(msg, msglen,
                     "migration order is broken: %s is applied but an earlier file is not",
                     db_migrations[i].name);
            return DB_SCHEMA_MISMATCH;
        }
    }
    if ((size_t)*applied < db_migrations_count) {
        snprintf(msg, msglen, "%zu pending migrations (first: %s); run gpufleetd migrate",
                 db_migrations_count - (size_t)*applied, db_migrations[*applied].name);
        return DB_SCHEMA_PENDING;
    }
    return DB_SCHEMA_CURRENT;
}

enum db_schema_state db_schema_check(const char *url, int *applied, char *msg, size_t msglen)
{
    *applied = 0;
    PGconn *pg = open_conn(url, msg, msglen);
    if (pg == NULL)
        return DB_SCHEMA_UNREACHABLE;
    unsigned char mask[DB_MIGRATIONS_MAX] = {0};
    assert(db_migrations_count <= DB_MIGRATIONS_MAX);
    enum db_schema_state st = compare(pg, mask, applied, msg, msglen);
    PQfinish(pg);
    return st;
}

int db_migrate(const char *url, int *napplied, char *msg, size_t msglen)
{
    *napplied = 0;
    PGconn *pg = open_conn(url, msg, msglen);
    if (pg == NULL)
        return -1;
    int rc = -1;
    int locked = 0;
    unsigned char mask[DB_MIGRATIONS_MAX] = {0};
    assert(db_migrations_count <= DB_MIGRATIONS_MAX);

    if (exec_ok(pg, "SET client_min_messages = warning", msg, msglen, "set") != 0 ||
        exec_ok(pg, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", msg, msglen,
                "advisory lock") != 0)
        goto cleanup;
    locked = 1;
    if (exec_ok(pg, create_table_sql, msg, msglen, "create schema_migrations") != 0)
        goto cleanup;
    int applied;
    enum db_schema_state st = compare(pg, mask, &applied, msg, msglen);
    if (st != DB_SCHEMA_CURRENT && st != DB_SCHEMA_PENDING)
        goto cleanup;
    for (size_t i = 0; i < db_migrations_count; i++) {
        if (mask[i])
            continue;
        const struct db_migration *m = &db_migrations[i];
        char hex[65];
        util_sha256_hex(m->sql, m->len, hex);
        int64_t t0 = util_mono_us();
        if (exec_ok(pg, "BEGIN", msg, msglen, "BEGIN") != 0)
            goto cleanup;
        char what[160];
        snprintf(what, sizeof what, "migration %s", m->name);
        if (exec_ok(pg, m->sql, msg, msglen, what) != 0) {
            PQclear(PQexec(pg, "ROLLBACK"));
            goto cleanup;
        }
        const char *params[2] = {m->name, hex};
        PGresult *r =
            PQexecParams(pg, "INSERT INTO schema_migrations (name, sha256) VALUES ($1, $2)", 2,
                         NULL, params, NULL, NULL, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) {
            snprintf(msg, msglen, "recording %s failed: %s", m->name, PQresultErrorMessage(r));
            msg[strcspn(msg, "\n")] = '\0';
        }
        PQclear(r);
        if (!ok || exec_ok(pg, "COMMIT", msg, msglen, "COMMIT") != 0) {
            PQclear(PQexec(pg, "ROLLBACK"));
            goto cleanup;
        }
        log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:f}", "msg", "migration applied",
                                           "migration", m->name, "sha256", hex, "duration_ms",
                                           (double)(util_mono_us() - t0) / 1000.0));
        (*napplied)++;
    }
    rc = 0;
cleanup:
    if (locked)
        PQclear(PQexec(pg, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
    PQfinish(pg);
    return rc;
}

/* The role app_url logs in as (caller's buffer). */
static int app_role(const char *app_url, char *role, size_t n, char *msg, size_t msglen)
{
    PGconn *pg = open_conn(app_url, msg, msglen);
    if (pg == NULL)
        return -1;
    PGresult *r = PQexec(pg, "SELECT current_user");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok)
        snprintf(role, n, "%s", PQgetvalue(r, 0, 0));
    else
        snprintf(msg, msglen, "reading the application's role failed: %s", PQresultErrorMessage(r));
    msg[strcspn(msg, "\n")] = '\0';
    PQclear(r);
    PQfinish(pg);
    return ok ? 0 : -1;
}

int db_migrate_roles(const char *owner_url, const char *app_url, int *napplied, char *msg,
                     size_t msglen)
{
    if (owner_url == NULL || owner_url[0] == '\0')
        return db_migrate(app_url, napplied, msg, msglen);
    char role[128];
    if (db_migrate(owner_url, napplied, msg, msglen) != 0 ||
        app_role(app_url, role, sizeof role, msg, msglen) != 0)
        return -1;
    PGconn *pg = open_conn(owner_url, msg, msglen);
    if (pg == NULL)
        return -1;
    const char *params[1] = {role};
    PGresult *r =
        PQexecParams(pg, "SELECT gpufleet_grant_app($1::name)", 1, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        snprintf(msg, msglen, "granting the application's role %s failed: %s", role,
                 PQresultErrorMessage(r));
        msg[strcspn(msg, "\n")] = '\0';
    } else
        log_json_steal(LOG_INFO,
                       json_pack("{s:s, s:s}", "msg", "application role granted (least privilege)",
                                 "role", role));
    PQclear(r);
    PQfinish(pg);
    return ok ? 0 : -1;
}
