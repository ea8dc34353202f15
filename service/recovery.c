/* recovery.c — see recovery.h. */
#include "service/recovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/utf8.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "db/recovery.h"
#include "planner/host_state.h"
#include "planner/recovery.h"
#include "service/audit.h"
#include "service/host_commands.h"
#include "service/periodic.h"

#define DUE_BATCH 32
#define MAX_MOVES 8 /* decisions applied per recovery per pass (a whole recovery needs 7) */

struct move {
    const char *id;
    char actor[64];                  /* recovery:<id>: history, audit and job creator */
    enum plan_host_event refused_ev; /* HE__COUNT when none */
    char refused_state[24];
    char host_id[37], step[16];
    /* the decisions applied in the committed transaction, for the log */
    int nacts;
    struct {
        enum plan_rec_action action;
        char step[16], why[200];
    } acts[MAX_MOVES + 1];
};

/* The recovery acts as recovery:<id>, on the host's recoveries. */
static struct actor recovery_actor(const struct move *m, char path[96])
{
    snprintf(path, 96, "/v1/hosts/%s/recoveries", m->host_id);
    return actor_system(m->actor, path, NULL);
}

/* The audit row of a recovery's own act on the host (role system). */
static enum db_status audit(struct db_conn *c, const struct move *m, const char *action, int status,
                            const char *reason)
{
    char path[96];
    struct actor who = recovery_actor(m, path);
    return svc_audit(c, &who, action, "host", m->host_id, status, reason);
}

/* Applies ev (the only row from the host's state) through the one host-command path
 * (audited when the event is). */
static enum db_status event(struct db_conn *c, struct move *m, enum plan_host_event ev,
                            const char *state, const char *reason)
{
    char path[96];
    struct actor who = recovery_actor(m, path);
    struct host_change ch = {m->host_id, ev, -1, reason, NULL, NULL, 0, NULL};
    enum db_host_refusal refused = DB_HOST_OK;
    enum db_status s = svc_host_apply(c, &who, &ch, &refused, NULL);
    if (refused != DB_HOST_OK) {
        m->refused_ev = ev;
        snprintf(m->refused_state, sizeof m->refused_state, "%s", state);
    }
    return s;
}

static enum db_status queue_job(struct db_conn *c, struct move *m,
                                const struct db_recovery_facts *f, const char *kind)
{
    char params[32], job_id[37] = "", *doc = NULL;
    if (kind == NULL)
        return DB_HARD_ERROR; /* the planner queues only the diagnostics and the gate */
    int diag = !strcmp(kind, "diagnostics");
    snprintf(params, sizeof params, "{\"level\":%d}", f->diag_level);
    enum db_status s =
        db_job_create(c, kind, m->host_id, NULL, diag ? params : NULL, m->actor, &doc, job_id);
    free(doc);
    if (s < 0)
        return s; /* a job of another's came first (unique violation): retried next pass */
    return db_recovery_set_job(c, m->id, kind, job_id);
}

/* Keeps an applied decision for the log (written once the transaction committed). */
static void note(struct move *m, enum plan_rec_action a, const char *why)
{
    if (m->nacts >= (int)(sizeof m->acts / sizeof m->acts[0]))
        return;
    m->acts[m->nacts].action = a;
    snprintf(m->acts[m->nacts].step, sizeof m->acts[0].step, "%s", m->step);
    utf8_clean(why, strlen(why), m->acts[m->nacts].why, sizeof m->acts[0].why);
    m->nacts++;
}

/* Applies one decision. *more: ask again in this transaction. */
static enum db_status apply(struct db_conn *c, struct move *m, const struct db_recovery_facts *f,
                            const struct plan_rec_decision *d, int *more)
{
    char reason[480];
    enum db_status s = DB_ONE_RESULT;
    *more = 0;
    switch (d->action) {
    case PLAN_REC_WAIT: break;
    case PLAN_REC_START:
        snprintf(reason, sizeof reason, "automatic recovery %s: draining after the isolation",
                 m->id);
        if ((s = event(c, m, HE_RECOVERY_STARTED, f->host_state, reason)) >= 0)
            s = db_recovery_mark_started(c, m->id);
        *more = 1;
        break;
    case PLAN_REC_DRAINED:
        snprintf(reason, sizeof reason, "automatic recovery %s: no job runs", m->id);
        s = event(c, m, HE_DRAINED_WHEN_IDLE, f->host_state, reason);
        *more = 1;
        break;
    case PLAN_REC_QUEUE:
        s = queue_job(c, m, f, plan_rec_step_job((enum plan_rec_step)plan_rec_step_parse(f->step)));
        break;
    case PLAN_REC_ADVANCE: {
        int next = plan_rec_step_parse(f->step) + 1;
        if (next <= 0 || next >= PLAN_REC__STEPS)
            return DB_HARD_ERROR; /* the planner advances only from the drain and diagnostics */
        s = db_recovery_set_step(c, m->id, plan_rec_step_names[next]);
        *more = 1;
        break;
    }
    case PLAN_REC_SUCCEED:
        if ((s = db_recovery_finish(c, m->id, "succeeded", NULL)) >= 0)
            s = audit(c, m, "host.recovery", 200, "automatic recovery: the host is ready again");
        break;
    case PLAN_REC_FAIL:
        snprintf(reason, sizeof reason, "automatic recovery failed at %s: %s", f->step, d->why);
        if (d->requarantine)
            s = event(c, m, HE_RECOVERY_FAILED, f->host_state, reason);
        if (s >= 0)
            s = db_recovery_finish(c, m->id, "failed", d->why);
        break;
    case PLAN_REC_CANCEL: s = db_recovery_finish(c, m->id, "cancelled", d->why); break;
    }
    return s;
}

static enum db_status move_fn(struct db_conn *c, void *arg)
{
    struct move *m = arg;
    m->refused_ev = HE__COUNT;
    m->nacts = 0;
    enum db_status s = DB_NO_RESULTS;
    for (int i = 0; i < MAX_MOVES; i++) {
        struct db_recovery_facts f;
        s = db_recovery_facts(c, m->id, &f);
        if (s != DB_ONE_RESULT) {
            db_recovery_facts_free(&f);
            break; /* ended, gone, or another driver holds it */
        }
        snprintf(m->host_id, sizeof m->host_id, "%s", f.host_id);
        snprintf(m->step, sizeof m->step, "%s", f.step);
        int step = plan_rec_step_parse(f.step);
        struct plan_rec_facts pf = {
            .step = step < 0 ? PLAN_REC__STEPS : (enum plan_rec_step)step,
            .started = f.started,
            .host_state = f.host_state,
            .held = f.held,
            .hold_is_ours = f.hold_is_ours,
            .hold_reason = f.hold_reason,
            .intervention = f.intervention,
            .foreign_job = f.foreign_job,
            .busy = f.busy,
            .job_state = f.job_state,
            .job_error = f.job_error,
            .verdict = f.verdict,
            .verdict_reason = f.verdict_reason,
            .gate_is_run = f.gate_is_run,
        };
        struct plan_rec_decision d;
        plan_recovery_next(&pf, &d);
        int more = 0;
        s = apply(c, m, &f, &d, &more);
        db_recovery_facts_free(&f);
        if (s < 0)
            return s;
        if (d.action != PLAN_REC_WAIT)
            note(m, d.action, d.why);
        if (!more) {
            s = db_recovery_checked(c, m->id);
            break;
        }
    }
    return s < 0 ? s : DB_ONE_RESULT;
}

/* The state machine refused a transition (the host changed since the facts were read):
 * the recovery ends failed, naming it. */
static enum db_status refused_fn(struct db_conn *c, void *arg)
{
    struct move *m = arg;
    char why[200];
    snprintf(why, sizeof why, "the host state machine refused %s from %s",
             plan_host_events[m->refused_ev].name, m->refused_state);
    m->nacts = 0;
    note(m, PLAN_REC_FAIL, why);
    return db_recovery_finish(c, m->id, "failed", why);
}

static void log_move(const struct move *m)
{
    for (int i = 0; i < m->nacts; i++)
        log_json_steal(LOG_INFO,
                       json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg", "recovery", "recovery_id",
                                 m->id, "host_id", m->host_id, "step", m->acts[i].step, "action",
                                 plan_rec_action_name(m->acts[i].action), "why", m->acts[i].why));
}

/* One recovery: its decisions in one transaction (a transition the state machine refused:
 * a second one that records it), logged once committed. */
static enum db_status drive(const char *id)
{
    struct move m = {.id = id};
    snprintf(m.actor, sizeof m.actor, "recovery:%s", m.id);
    enum db_status s = db_run_tx(move_fn, &m);
    if (s < 0 && m.refused_ev != HE__COUNT)
        s = db_run_tx(refused_fn, &m);
    if (s >= 0)
        log_move(&m);
    return s;
}

static struct svc_driver driver = SVC_DRIVER_INIT("recovery", DUE_BATCH, db_recovery_due, drive);

int svc_recovery_run_once(void)
{
    return svc_driver_run_once(&driver);
}

int svc_recovery_start(int ms)
{
    return svc_driver_start(&driver, ms);
}

void svc_recovery_stop(void)
{
    svc_driver_stop(&driver);
}
