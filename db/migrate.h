/* migrate.h — ordered SQL migrations embedded in the binary (see scripts/embed). */
#ifndef GPUFLEET_MIGRATE_H
#define GPUFLEET_MIGRATE_H

#include <stddef.h>

struct db_migration {
    const char *name; /* "0001_core.sql" */
    const char *sql;
    size_t len;
};
extern const struct db_migration db_migrations[];
extern const size_t db_migrations_count;

enum db_schema_state {
    DB_SCHEMA_CURRENT = 0,
    DB_SCHEMA_PENDING,  /* migrations to apply (includes a fresh database) */
    DB_SCHEMA_NEWER,    /* the database knows migrations this binary does not */
    DB_SCHEMA_MISMATCH, /* an applied file's checksum changed, or order is broken */
    DB_SCHEMA_UNREACHABLE,
};

/* Compares the database with the embedded migrations. On anything but CURRENT, writes a
 * one-line explanation into msg. *applied receives the number of applied migrations. */
enum db_schema_state db_schema_check(const char *url, int *applied, char *msg, size_t msglen);

/* Applies pending migrations, each in its own transaction, under an advisory lock so
 * concurrent replicas are safe. Returns 0 on success, with *napplied set; -1 with a
 * one-line reason in msg. */
int db_migrate(const char *url, int *napplied, char *msg, size_t msglen);

/* With two roles (docs/operations.md, least privilege): applies the migrations as the owner
 * (owner_url), then grants the role app_url logs in as what serve needs and no more
 * (gpufleet_grant_app, migrations/0026), on every run. owner_url NULL or "": one role,
 * db_migrate(app_url). Returns 0, or -1 with a one-line reason in msg. */
int db_migrate_roles(const char *owner_url, const char *app_url, int *napplied, char *msg,
                     size_t msglen);

#endif
