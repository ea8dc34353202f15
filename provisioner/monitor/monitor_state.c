/* monitor_state.c — see monitor_state.h. */
#include "provisioner/monitor/monitor_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/monitor_lease.h"
#include "planner/monitor_policy.h"
#include "provisioner/host_port.h"

/* Applies the policy's steps in order as the monitor; state follows each. */
static enum db_status apply(struct db_conn *c, const char *owner, const char *host_id,
                            const struct plan_mon_step *steps, int n, const char *reason,
                            const struct db_mon_state *st, char state[24])
{
    char path[80];
    snprintf(path, sizeof path, "/v1/hosts/%s/health", host_id);
    struct actor who = actor_system(owner, path, NULL);
    snprintf(state, 24, "%s", st->state);
    for (int i = 0; i < n; i++) {
        const char *why =
            steps[i].ev == HE_MONITOR_REACHABLE ? "the monitor reaches the host again" : reason;
        struct host_change ch = {host_id, steps[i].ev, steps[i].hint, why, NULL, NULL, 0, NULL};
        enum db_host_refusal refused;
        enum db_status s = prov_host_apply(c, &who, &ch, &refused, state);
        if (s < 0)
            return s;
    }
    return DB_ONE_RESULT;
}

enum db_status mon_missed_tx(struct db_conn *c, const char *owner, const char *host_id, int missed,
                             int unreachable_after, const char *reason, char state[24])
{
    struct db_mon_state st;
    struct plan_mon_step steps[PLAN_MON_MAX_STEPS];
    state[0] = '\0';
    enum db_status s = db_mon_store_missed(c, owner, host_id, missed, reason, &st);
    if (s <= 0)
        return s;
    int n =
        plan_mon_after_missed(plan_host_state_parse(st.state), missed, unreachable_after, steps);
    return apply(c, owner, host_id, steps, n, reason, &st, state);
}

enum db_status mon_sampled_tx(struct db_conn *c, const char *owner, const char *host_id,
                              const char *doc, const char *isolate_reason, char state[24],
                              char **result)
{
    struct db_mon_state st;
    struct plan_mon_step steps[PLAN_MON_MAX_STEPS];
    state[0] = '\0';
    enum db_status s = db_mon_store_sample(c, owner, host_id, doc, result, &st);
    if (s <= 0)
        return s;
    int n = plan_mon_after_sample(plan_host_state_parse(st.state), plan_host_state_parse(st.back),
                                  isolate_reason != NULL, steps);
    return apply(c, owner, host_id, steps, n, isolate_reason, &st, state);
}

enum db_status mon_key_mismatch_tx(struct db_conn *c, const char *owner, const char *host_id,
                                   const char *reason, char state[24])
{
    struct db_mon_state st;
    struct plan_mon_step steps[PLAN_MON_MAX_STEPS];
    state[0] = '\0';
    enum db_status s = db_mon_fenced_state(c, owner, host_id, &st);
    if (s <= 0)
        return s;
    int n = plan_mon_after_key_mismatch(plan_host_state_parse(st.state), steps);
    return apply(c, owner, host_id, steps, n, reason, &st, state);
}

enum db_status mon_sampled_group_tx(struct db_conn *c, const char *owner, struct mon_group_item *it,
                                    int n)
{
    const char **ids = calloc((size_t)n, sizeof *ids), **docs = calloc((size_t)n, sizeof *docs);
    struct db_mon_stored *out = calloc((size_t)n, sizeof *out);
    enum db_status s = DB_HARD_ERROR;
    if (ids == NULL || docs == NULL || out == NULL)
        goto done;
    for (int i = 0; i < n; i++) {
        ids[i] = it[i].host_id;
        docs[i] = it[i].doc;
        it[i].state[0] = '\0';
        it[i].status = DB_NO_RESULTS;
    }
    if ((s = db_mon_store_group(c, owner, n, ids, docs, out)) < 0)
        goto done;
    for (int i = 0; i < n && s >= 0; i++) {
        if (!out[i].stored)
            continue; /* fenced out: nothing stored, nothing applied */
        free(*it[i].result);
        *it[i].result = out[i].result;
        out[i].result = NULL;
        struct plan_mon_step steps[PLAN_MON_MAX_STEPS];
        const struct db_mon_state *st = &out[i].st;
        int k =
            plan_mon_after_sample(plan_host_state_parse(st->state), plan_host_state_parse(st->back),
                                  it[i].isolate != NULL, steps);
        s = apply(c, owner, it[i].host_id, steps, k, it[i].isolate, st, it[i].state);
        it[i].status = DB_ONE_RESULT;
    }
    if (s >= 0)
        s = DB_ONE_RESULT;
done:
    db_mon_stored_clear(out, n);
    free(ids);
    free(docs);
    free(out);
    return s;
}
