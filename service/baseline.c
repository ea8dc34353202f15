/* baseline.c — see baseline.h. */
#include "service/baseline.h"

#include <stdio.h>
#include <string.h>

#include "db/baselines.h"
#include "planner/baseline.h"

/* Matches the candidates against the wanted baseline and fills *out. Returns 0, or -1
 * when out of memory. */
static int judge(const struct baseline *wanted, const struct db_baselines *cand,
                 struct svc_baseline_cmp *out)
{
    struct plan_bl_result res = {0};
    int rc = -1;
    if (plan_baseline_match(wanted, cand->rows, cand->n, &res) != 0)
        goto out;
    out->doc = plan_baseline_document(wanted, cand->rows, cand->n, &res);
    if (out->doc == NULL)
        goto out;
    out->matched = (int)res.nmatched;
    out->reference = res.nmatched > 0 ? res.reference : 0.0;
    out->value = wanted->value;
    snprintf(out->metric, sizeof out->metric, "%s",
             wanted->cond[BL_METRIC].s ? wanted->cond[BL_METRIC].s : "");
    rc = 0;
out:
    json_decref(res.unmatched);
    return rc;
}

enum db_status svc_baseline_compare(struct db_conn *c, const char *gate_run_id,
                                    const char *prev_stack_id, const char *scope,
                                    struct svc_baseline_cmp *out)
{
    struct db_baselines run = {0}, cand = {0};
    memset(out, 0, sizeof *out);
    enum db_status s = db_baseline_of_run(c, gate_run_id, scope, &run);
    if (s != DB_ONE_RESULT) {
        db_baselines_free(&run);
        return s == DB_NO_RESULTS || s == DB_MANY_RESULTS ? DB_NO_RESULTS : s;
    }
    const struct baseline *wanted = &run.rows[0];
    s = db_baseline_candidates(c, prev_stack_id, wanted->id, scope, PLAN_BASELINE_MAX_CANDIDATES,
                               &cand);
    if (s >= 0)
        s = judge(wanted, &cand, out) == 0 ? DB_ONE_RESULT : DB_HARD_ERROR;
    db_baselines_free(&cand);
    db_baselines_free(&run);
    return s;
}

void svc_baseline_cmp_free(struct svc_baseline_cmp *cmp)
{
    json_decref(cmp->doc);
    memset(cmp, 0, sizeof *cmp);
}
