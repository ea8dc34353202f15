/* listener.c — LISTEN connections (db_listen, db.h): one PostgreSQL connection each,
 * outside the pool, non-blocking, reconnected at most once a second. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db.h"
#include "db/db_pg.h"

struct db_listener {
    char *url;
    char *channel;
    PGconn *pg;
    int64_t last_try_us;
};

static int listener_connect(struct db_listener *l)
{
    int64_t now = util_mono_us();
    if (l->last_try_us != 0 && now - l->last_try_us < 1000000)
        return -1;
    l->last_try_us = now;
    PGconn *pg = db_connect_url(l->url);
    if (pg == NULL)
        return -1;
    /* Never LISTEN on another channel than asked: no identifier, no connection. */
    char *ident = PQescapeIdentifier(pg, l->channel, strlen(l->channel));
    char sql[160];
    int ok = ident != NULL && (size_t)snprintf(sql, sizeof sql, "LISTEN %s", ident) < sizeof sql;
    PQfreemem(ident);
    if (ok) {
        PGresult *r = PQexec(pg, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (!ok || PQsetnonblocking(pg, 1) != 0) {
        PQfinish(pg);
        return -1;
    }
    l->pg = pg;
    return 0;
}

struct db_listener *db_listen(const char *url, const char *channel)
{
    struct db_listener *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->url = strdup(url);
    l->channel = strdup(channel);
    if (l->url == NULL || l->channel == NULL) {
        db_listener_free(l);
        return NULL;
    }
    listener_connect(l);
    return l;
}

int db_listener_fd(struct db_listener *l)
{
    if (l->pg == NULL)
        listener_connect(l);
    return l->pg ? PQsocket(l->pg) : -1;
}

int db_listener_drain(struct db_listener *l)
{
    if (l->pg == NULL)
        return listener_connect(l) == 0 ? 1 : 0;
    int n = 0;
    if (PQconsumeInput(l->pg) == 0 || PQstatus(l->pg) != CONNECTION_OK) {
        PQfinish(l->pg);
        l->pg = NULL;
        return 1;
    }
    PGnotify *note;
    while ((note = PQnotifies(l->pg)) != NULL) {
        n++;
        PQfreemem(note);
    }
    return n;
}

void db_listener_free(struct db_listener *l)
{
    if (l == NULL)
        return;
    if (l->pg != NULL)
        PQfinish(l->pg);
    free(l->url);
    free(l->channel);
    free(l);
}
