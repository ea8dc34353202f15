/* result.c — reading results: columns by name, pages of documents, single documents.
 * See db_pg.h (and db.h for pages). No pool or connection state: it reads PGresults,
 * and the page and document helpers run their statement with db_exec. */
#include "db/db_pg.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- columns ---- */

int db_col(const PGresult *r, const char *name)
{
    int f = PQfnumber(r, name);
    assert(f >= 0); /* the statement and its decoder disagree */
    return f;
}

void db_cols(const PGresult *r, const char *const *names, int n, int *cols)
{
    for (int i = 0; i < n; i++)
        cols[i] = db_col(r, names[i]);
}

const char *db_val(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* PQgetvalue gives "" for SQL NULL: 0 below. */
double db_val_num(const PGresult *r, int row, int col)
{
    return atof(PQgetvalue(r, row, col));
}
long db_val_long(const PGresult *r, int row, int col)
{
    return atol(PQgetvalue(r, row, col));
}
int db_val_bool(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col)[0] == 't';
}
int db_val_isnull(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

const char *db_str(const PGresult *r, int row, const char *col)
{
    return db_val(r, row, db_col(r, col));
}
int db_isnull(const PGresult *r, int row, const char *col)
{
    return PQgetisnull(r, row, db_col(r, col));
}
double db_num(const PGresult *r, int row, const char *col)
{
    return db_val_num(r, row, db_col(r, col));
}
long db_long(const PGresult *r, int row, const char *col)
{
    return db_val_long(r, row, db_col(r, col));
}
int db_bool(const PGresult *r, int row, const char *col)
{
    return db_val_bool(r, row, db_col(r, col));
}

char *db_dup(const PGresult *r, int row, const char *col, int *oom)
{
    const char *v = db_str(r, row, col);
    if (v == NULL)
        return NULL;
    char *copy = strdup(v);
    if (copy == NULL)
        *oom = 1;
    return copy;
}

void db_copy(const PGresult *r, int row, const char *col, char *out, size_t len)
{
    const char *v = db_str(r, row, col);
    snprintf(out, len, "%s", v ? v : "");
}

static char **field_at(const struct db_str_field *f, void *out)
{
    return (char **)((char *)out + f->offset);
}

int db_dup_fields(const PGresult *r, int row, const struct db_str_field *f, size_t n, void *out)
{
    int oom = 0;
    for (size_t i = 0; i < n; i++)
        *field_at(&f[i], out) = db_dup(r, row, f[i].col, &oom);
    if (oom)
        db_free_fields(f, n, out);
    return oom ? -1 : 0;
}

void db_free_fields(const struct db_str_field *f, size_t n, void *out)
{
    for (size_t i = 0; i < n; i++) {
        char **member = field_at(&f[i], out);
        free(*member);
        *member = NULL;
    }
}

/* ---- pages and documents ---- */

int db_page_count(const struct db_page *p)
{
    return p->res ? PQntuples(p->res) : 0;
}
/* db_exec_page checked that doc and key are columns 0 and 1. */
const char *db_page_doc(const struct db_page *p, int i)
{
    return PQgetvalue(p->res, i, 0);
}
const char *db_page_key(const struct db_page *p, int i)
{
    return PQgetvalue(p->res, i, 1);
}

void db_page_clear(struct db_page *p)
{
    PQclear(p->res);
    p->res = NULL;
}

enum db_status db_exec_page(struct db_conn *c, const char *stmt, int nparams,
                            const char *const *params, struct db_page *page)
{
    db_page_clear(page);
    PGresult *r;
    enum db_status s = db_exec(c, stmt, nparams, params, &r);
    assert(s < 0 || (PQnfields(r) == 2 && db_col(r, "doc") == 0 && db_col(r, "key") == 1));
    page->res = r;
    return s;
}

enum db_status db_exec_doc(struct db_conn *c, const char *stmt, int nparams,
                           const char *const *params, char **doc)
{
    return db_exec_doc_id(c, stmt, nparams, params, doc, NULL);
}

enum db_status db_exec_doc_id(struct db_conn *c, const char *stmt, int nparams,
                              const char *const *params, char **doc, char id[37])
{
    PGresult *r;
    *doc = NULL;
    if (id != NULL)
        id[0] = '\0';
    enum db_status s = db_exec(c, stmt, nparams, params, &r);
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        *doc = db_dup(r, 0, "doc", &oom);
        if (id != NULL)
            db_copy(r, 0, "id", id, 37);
        if (oom)
            s = DB_HARD_ERROR;
    }
    PQclear(r);
    return s;
}

enum db_status db_exec_returning_id(struct db_conn *c, const char *stmt, int nparams,
                                    const char *const *params, char id[37])
{
    PGresult *r;
    id[0] = '\0';
    enum db_status s = db_exec(c, stmt, nparams, params, &r);
    if (s == DB_ONE_RESULT && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0))
        snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

enum db_status db_exec_row(struct db_conn *c, const char *stmt, int nparams,
                           const char *const *params, PGresult **r)
{
    enum db_status s = db_exec(c, stmt, nparams, params, r);
    if (s != DB_ONE_RESULT) {
        if (s >= 0)
            PQclear(*r);
        *r = NULL;
    }
    return s;
}

enum db_status db_exec_ids(struct db_conn *c, const char *stmt, int max, char (*ids)[37], int *n)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", max);
    const char *p[1] = {lim};
    PGresult *r;
    *n = 0;
    enum db_status s = db_exec(c, stmt, 1, p, &r);
    if (s < 0)
        return s;
    int rows = PQntuples(r), col = db_col(r, "id");
    for (int i = 0; i < rows && i < max; i++)
        snprintf(ids[(*n)++], 37, "%s", db_val(r, i, col));
    PQclear(r);
    return s;
}
