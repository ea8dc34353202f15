/* monitor_state.c — see monitor_state.h. */
#include "provisioner/monitor/monitor_state.h"

#include <stdio.h>
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
