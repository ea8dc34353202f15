/* recommend_briefs.c — the briefs of the recommendations' read: those a usage row names
 * (db_rec_briefs_ran), and dropping their documents once sized (db_rec_briefs_keep_ids).
 * See recommend.h; the statements are recommend.c's. */
#include "db/recommend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "db/db_pg.h"

/* s copied to *at (advanced past it), or NULL for NULL. */
static const char *keep(const char *s, char **at)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(*at, s, n);
    *at += n;
    return d;
}

int db_rec_briefs_keep_ids(struct db_rec_input *in)
{
    if (in->res[3] == NULL)
        return 0;
    size_t len = 1;
    for (size_t k = 0; k < in->nbriefs; k++) {
        const struct db_rec_brief *b = &in->briefs[k];
        len += (b->id ? strlen(b->id) + 1 : 0) + (b->project_id ? strlen(b->project_id) + 1 : 0);
    }
    char *ids = malloc(len), *at = ids;
    if (ids == NULL)
        return -1;
    for (size_t k = 0; k < in->nbriefs; k++) {
        struct db_rec_brief *b = &in->briefs[k];
        b->id = keep(b->id, &at);
        b->project_id = keep(b->project_id, &at);
        b->spec = NULL;
    }
    free(in->brief_ids);
    in->brief_ids = ids;
    PQclear(in->res[3]);
    in->res[3] = NULL;
    return 0;
}

enum db_status db_rec_briefs_ran(struct db_conn *c, int64_t at_us, struct db_rec_briefs *out)
{
    const int64_t H = 3600LL * 1000000, lo = at_us - 48 * H;
    const int64_t v[4] = {lo, at_us, util_ceil_us(lo, H), util_floor_us(at_us, H)};
    char t[4][40];
    const char *p[4] = {t[0], t[1], t[2], t[3]};
    for (int i = 0; i < 4; i++)
        util_rfc3339(v[i], t[i], sizeof t[i]);
    db_rec_briefs_free(out);
    PGresult *r = NULL;
    enum db_status s = db_exec(c, "recommend_briefs_ran", 4, p, &r);
    if (s < 0)
        return s;
    out->res = r;
    out->briefs = calloc((size_t)PQntuples(r) + 1, sizeof *out->briefs);
    if (out->briefs == NULL) {
        db_rec_briefs_free(out);
        return DB_HARD_ERROR;
    }
    int id = db_col(r, "id"), spec = db_col(r, "spec"), project = db_col(r, "project_id");
    for (int i = 0; i < PQntuples(r); i++)
        out->briefs[out->n++] =
            (struct db_rec_brief){db_val(r, i, id), db_val(r, i, project), db_val(r, i, spec)};
    return s;
}

void db_rec_briefs_free(struct db_rec_briefs *b)
{
    free(b->briefs);
    PQclear(b->res);
    memset(b, 0, sizeof *b);
}
