/* rollout_create.c — see rollout_create.h. */
#include "service/rollout_create.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "planner/rollout.h"

/* ---- create ---- */

/* The planner's answer for one host of the pool. */
struct placed {
    int in_scope;
    int driver_ok;    /* in scope: its driver is the stack's */
    char reason[160]; /* skipped: why */
};

/* A create: the request, what was read, what was decided. */
struct create {
    const struct db_rollout_new *in;
    struct plan_ro_request rq;
    struct plan_ro_create_facts f;
    char stack_id[37];  /* the stack's id as stored */
    char *driver;       /* the stack's driver_version (owned), NULL when none */
    char active_id[37]; /* the pool's active rollout */
    struct db_rollout_pool_host *hosts;
    struct placed *placed; /* one per host */
    int n;
};

static void create_free(struct create *cr)
{
    free(cr->driver);
    db_rollout_pool_hosts_free(cr->hosts, cr->n);
    free(cr->placed);
}

/* Each host: in scope or skipped, and its driver. */
static enum db_status place(struct create *cr)
{
    cr->placed = calloc((size_t)(cr->n > 0 ? cr->n : 1), sizeof *cr->placed);
    if (cr->placed == NULL)
        return DB_HARD_ERROR;
    for (int i = 0; i < cr->n; i++) {
        const struct db_rollout_pool_host *h = &cr->hosts[i];
        struct placed *p = &cr->placed[i];
        struct plan_ro_candidate cand = {h->state, h->current_stack_id};
        p->in_scope = plan_ro_in_scope(&cand, cr->stack_id, p->reason, sizeof p->reason);
        p->driver_ok = p->in_scope && plan_ro_driver_matches(h->driver_version, cr->driver);
        cr->f.in_scope += p->in_scope;
        cr->f.mismatched += p->in_scope && !p->driver_ok;
    }
    return DB_ONE_RESULT;
}

/* Whether a host in scope has a baseline. */
static enum db_status read_baseline(struct db_conn *c, struct create *cr)
{
    const char **ids = calloc((size_t)cr->f.in_scope, sizeof *ids);
    if (ids == NULL)
        return DB_HARD_ERROR;
    int k = 0;
    for (int i = 0; i < cr->n; i++)
        if (cr->placed[i].in_scope)
            ids[k++] = cr->hosts[i].id;
    enum db_status s = db_rollout_any_baseline(c, cr->in->pool_id, ids, k, &cr->f.any_baseline);
    free(ids);
    return s;
}

/* Reads the facts in order. Each read needs the one before: where one finds nothing (no
 * pool, no stack) or settles it (an active rollout), the rest stay unread, and the
 * planner's order refuses on that fact before any fact read later. */
static enum db_status load(struct db_conn *c, struct create *cr)
{
    const struct db_rollout_new *in = cr->in;
    if (!util_is_uuid(in->pool_id))
        return DB_NO_RESULTS;
    enum db_status s = db_rollout_pool_lock(c, in->pool_id, in->scope, &cr->f.has_workload);
    if (s != DB_ONE_RESULT)
        return s;
    cr->f.pool_found = 1;
    if (!util_is_uuid(in->stack_id))
        return DB_NO_RESULTS;
    if ((s = db_rollout_stack(c, in->stack_id, in->pool_id, cr->stack_id, &cr->driver)) !=
        DB_ONE_RESULT)
        return s;
    cr->f.stack_found = 1;
    if ((s = db_rollout_active(c, in->pool_id, cr->active_id)) != DB_NO_RESULTS) {
        cr->f.active = s == DB_ONE_RESULT;
        return s;
    }
    if ((s = db_rollout_pool_hosts(c, in->pool_id, &cr->hosts, &cr->n)) < 0)
        return s;
    if ((s = place(cr)) < 0 || cr->f.in_scope == 0 || !plan_ro_needs_baseline(&cr->rq))
        return s;
    return read_baseline(c, cr);
}

enum pick { PICK_SKIPPED, PICK_MISMATCH, PICK_SCOPE };

/* The hosts a problem names, as its members list them. NULL when out of memory. */
static json_t *host_list(const struct create *cr, enum pick pick)
{
    json_t *a = json_array();
    for (int i = 0; a != NULL && i < cr->n; i++) {
        const struct db_rollout_pool_host *h = &cr->hosts[i];
        const struct placed *p = &cr->placed[i];
        json_t *e;
        if (pick == PICK_SKIPPED && !p->in_scope)
            e = json_pack("{s:s, s:s, s:s, s:s}", "host_id", h->id, "name", h->name, "state",
                          h->state, "reason", p->reason);
        else if (pick == PICK_MISMATCH && p->in_scope && !p->driver_ok)
            e = json_pack("{s:s, s:s, s:s?}", "id", h->id, "name", h->name, "driver_version",
                          h->driver_version);
        else if (pick == PICK_SCOPE && p->in_scope)
            e = json_pack("{s:s, s:s}", "id", h->id, "name", h->name);
        else
            continue;
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* The refusal's members (rollout_create.h), or NULL for one without. Returns -1 when
 * they could not be built. */
static int refusal_detail(const struct create *cr, enum plan_ro_refusal why, json_t **detail)
{
    switch (why) {
    case PLAN_RO_ACTIVE: *detail = json_pack("{s:s}", "rollout_id", cr->active_id); break;
    case PLAN_RO_NOTHING:
        *detail = json_pack("{s:o}", "skipped", host_list(cr, PICK_SKIPPED));
        break;
    case PLAN_RO_DRIVER_MISMATCH:
        *detail = json_pack("{s:s?, s:o}", "driver_version", cr->driver, "hosts",
                            host_list(cr, PICK_MISMATCH));
        break;
    case PLAN_RO_NO_BASELINE:
        *detail = json_pack("{s:o}", "hosts", host_list(cr, PICK_SCOPE));
        break;
    case PLAN_RO_CANARY_TOO_BIG: *detail = json_pack("{s:i}", "in_scope", cr->f.in_scope); break;
    default: *detail = NULL; return 0;
    }
    return *detail != NULL ? 0 : -1;
}

/* Stores the accepted rollout: the hosts in scope in position order with their waves,
 * the skipped with their reasons. */
static enum db_status store(struct db_conn *c, const struct create *cr, char id_out[37])
{
    struct plan_ro_layout lay;
    plan_ro_layout(&cr->rq, cr->f.in_scope, &lay);
    struct db_rollout_member *members = calloc((size_t)cr->n, sizeof *members);
    struct db_rollout_skip *skips = calloc((size_t)cr->n, sizeof *skips);
    enum db_status s = DB_HARD_ERROR;
    if (members != NULL && skips != NULL) {
        int k = 0, j = 0;
        for (int i = 0; i < cr->n; i++) {
            const struct db_rollout_pool_host *h = &cr->hosts[i];
            if (cr->placed[i].in_scope) {
                members[k] = (struct db_rollout_member){
                    h->id, h->name, k, plan_rollout_wave(k, cr->rq.canary, lay.max_hosts)};
                k++;
            } else
                skips[j++] =
                    (struct db_rollout_skip){h->id, h->name, h->state, cr->placed[i].reason};
        }
        struct db_rollout_layout l = {lay.max_hosts, lay.waves, members, k, skips, j};
        s = db_rollout_insert(c, cr->in, &l, id_out);
    }
    free(members);
    free(skips);
    return s;
}

enum db_status svc_rollout_create(struct db_conn *c, const struct db_rollout_new *in,
                                  char id_out[37], enum plan_ro_refusal *refusal, json_t **detail)
{
    *refusal = PLAN_RO_OK;
    *detail = NULL;
    id_out[0] = '\0';
    struct create cr = {
        .in = in,
        .rq = {in->canary, in->max_unavailable, in->max_unavailable_pct, in->ratio_set, in->force},
    };
    enum db_status s = load(c, &cr);
    if (s >= 0) {
        enum plan_ro_refusal why = plan_ro_create_refusal(&cr.rq, &cr.f);
        if (why == PLAN_RO_OK)
            s = store(c, &cr, id_out);
        else if (refusal_detail(&cr, why, detail) != 0)
            s = DB_HARD_ERROR;
        else {
            *refusal = why;
            s = DB_NO_RESULTS;
        }
    }
    create_free(&cr);
    return s;
}

/* ---- pause / resume / abort ---- */

enum db_status svc_rollout_control(struct db_conn *c, const char *id, const char *scope,
                                   enum plan_ro_ctl action, const char *actor, const char *reason,
                                   enum plan_ro_refusal *refusal, json_t **detail)
{
    *refusal = PLAN_RO_OK;
    *detail = NULL;
    char state[16] = "";
    int touched = 0;
    enum db_status s =
        util_is_uuid(id) ? db_rollout_control_lock(c, id, scope, state, &touched) : DB_NO_RESULTS;
    if (s < 0)
        return s;
    if (s != DB_ONE_RESULT) {
        *refusal = PLAN_RO_NOT_FOUND;
        return DB_NO_RESULTS;
    }
    struct plan_ro_ctl_decision d;
    if (plan_ro_control(action, state, touched, &d) != PLAN_RO_OK) {
        *detail = json_pack("{s:s}", "state", state);
        if (*detail == NULL)
            return DB_HARD_ERROR;
        *refusal = PLAN_RO_BAD_STATE;
        return DB_NO_RESULTS;
    }
    char why[600];
    const char *err = NULL;
    if (d.abort) {
        snprintf(why, sizeof why, "aborted by %s%s%s", actor ? actor : "unknown",
                 reason && *reason ? ": " : "", reason ? reason : "");
        err = why;
    }
    if (d.roll_back)
        s = db_rollout_fail(c, id, NULL, err, NULL);
    else
        s = db_rollout_set_state(c, id, d.to, err);
    if (s >= 0 && d.release) /* nothing was touched: every host not_needed */
        s = db_rollout_fail_hosts(c, id, NULL, err);
    return s < 0 ? s : DB_ONE_RESULT;
}
