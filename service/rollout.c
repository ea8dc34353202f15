/* rollout.c — see rollout.h. */
#include "service/rollout.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "db/rollouts.h"
#include "planner/host_command.h"
#include "planner/host_state.h"
#include "planner/rollout.h"
#include "service/audit.h"
#include "service/baseline.h"
#include "service/host_commands.h"
#include "service/periodic.h"

#define DUE_BATCH 16
#define MAX_MOVES 64 /* decisions applied per rollout per pass */
#define MAX_NOTES 24 /* of which the log shows */

struct move {
    const char *id;
    char actor[64]; /* rollout:<id>: history, audit and job creator */
    /* a transition the state machine refused */
    enum plan_host_event refused_ev; /* HE__COUNT when none */
    char refused_state[24], refused_host[37], refused_name[160];
    int refused_rollback;
    /* the decisions applied in the committed transaction, for the log */
    int nacts;
    struct {
        enum plan_ro_action action;
        char host[160], why[200];
    } acts[MAX_NOTES];
};

/* The rollout acts as rollout:<id>, on the rollout. */
static struct actor rollout_actor(const struct move *m, char path[96])
{
    snprintf(path, 96, "/v1/rollouts/%s", m->id);
    return actor_system(m->actor, path, NULL);
}

/* The audit row of the rollout's own act (role system). */
static enum db_status audit(struct db_conn *c, const struct move *m, const char *action,
                            const char *type, const char *resource, int status, const char *reason)
{
    char path[96];
    struct actor who = rollout_actor(m, path);
    return svc_audit(c, &who, action, type, resource, status, reason);
}

/* Applies ev to the host through the one host-command path (audited when the event is). */
static enum db_status event(struct db_conn *c, struct move *m,
                            const struct db_rollout_host_facts *h, int rollback,
                            enum plan_host_event ev, const char *reason)
{
    char path[96];
    struct actor who = rollout_actor(m, path);
    struct host_change ch = {h->host_id, ev, -1, reason, NULL, NULL, 200, NULL};
    enum db_host_refusal refused = DB_HOST_OK;
    enum db_status s = svc_host_apply(c, &who, &ch, &refused, NULL);
    if (refused != DB_HOST_OK) {
        m->refused_ev = ev;
        m->refused_rollback = rollback;
        snprintf(m->refused_state, sizeof m->refused_state, "%s",
                 h->host_state ? h->host_state : "gone");
        snprintf(m->refused_host, sizeof m->refused_host, "%s", h->host_id);
        snprintf(m->refused_name, sizeof m->refused_name, "%s", h->host_name);
    }
    return s;
}

/* Queues a provision (stack) or gate job on the host, audited; job_id gets its id. */
static enum db_status queue_job(struct db_conn *c, struct move *m,
                                const struct db_rollout_host_facts *h, const char *kind,
                                const char *stack_id, char job_id[37])
{
    char *doc = NULL, reason[200];
    enum db_status s = db_job_create(c, kind, h->host_id, stack_id, NULL, m->actor, &doc, job_id);
    free(doc);
    if (s < 0)
        return s; /* a job of another's came first (unique violation): retried next pass */
    snprintf(reason, sizeof reason, "rollout %s: %s job %s", m->id, kind, job_id);
    return audit(c, m, !strcmp(kind, "gate") ? "host.gate" : "host.provision", "host", h->host_id,
                 202, reason);
}

static void note(struct move *m, const struct db_rollout_facts *f, const struct plan_ro_decision *d)
{
    if (m->nacts >= MAX_NOTES)
        return;
    m->acts[m->nacts].action = d->action;
    snprintf(m->acts[m->nacts].host, sizeof m->acts[0].host, "%s",
             d->host >= 0 && d->host < f->nhosts ? f->hosts[d->host].host_name : "");
    utf8_clean(d->why, strlen(d->why), m->acts[m->nacts].why, sizeof m->acts[0].why);
    m->nacts++;
}

/* The evidence of a failure: what the host's facts say, and the comparison. */
static char *evidence(const struct db_rollout_facts *f, int i, const char *why, json_t *cmp)
{
    json_t *e = json_object();
    if (e == NULL)
        return NULL;
    json_object_set_new(e, "reason", json_string(why));
    if (i >= 0 && i < f->nhosts) {
        const struct db_rollout_host_facts *h = &f->hosts[i];
        json_object_set_new(e, "host_id", json_string(h->host_id));
        json_object_set_new(e, "host_name", json_string(h->host_name));
        json_object_set_new(e, "step", json_string(h->step));
        json_object_set_new(e, "host_state",
                            h->host_state ? json_string(h->host_state) : json_null());
#define OPT(key, v)  \
    if ((v) != NULL) \
        json_object_set_new(e, key, json_string(v));
        OPT("job_id", h->job_id)
        OPT("job_state", h->job_state)
        OPT("job_error", h->job_error)
        OPT("gate_run_id", h->run_id ? h->run_id : h->gate_run_id)
        OPT("verdict", h->verdict)
        OPT("verdict_reason", h->verdict_reason)
        OPT("isolation", h->isolation)
        OPT("intervention", h->intervention)
        OPT("foreign_job", h->foreign_job)
#undef OPT
    }
    if (cmp != NULL)
        json_object_set(e, "comparison", cmp);
    char *s = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(e);
    return s;
}

static enum db_status fail(struct db_conn *c, struct move *m, const struct db_rollout_facts *f,
                           int i, const char *why, json_t *cmp)
{
    char error[600];
    if (i >= 0 && i < f->nhosts)
        snprintf(error, sizeof error, "host %s: %s", f->hosts[i].host_name, why);
    else
        snprintf(error, sizeof error, "%s", why);
    char *ev = evidence(f, i, why, cmp);
    if (ev == NULL)
        return DB_HARD_ERROR;
    enum db_status s =
        db_rollout_fail(c, m->id, i >= 0 && i < f->nhosts ? f->hosts[i].host_id : NULL, error, ev);
    free(ev);
    if (s >= 0)
        s = audit(c, m, "rollout.rollback", "rollout", m->id, 409, error);
    return s;
}

/* The comparison step: the gate run's baseline against the previous stack's. */
static enum db_status compare(struct db_conn *c, struct move *m, const struct db_rollout_facts *f,
                              int i)
{
    const struct db_rollout_host_facts *h = &f->hosts[i];
    struct svc_baseline_cmp cmp;
    memset(&cmp, 0, sizeof cmp);
    char why[400];
    if (h->gate_run_id == NULL || h->from_stack_id == NULL)
        return fail(c, m, f, i, "comparing: no gate run or no previous stack to compare with",
                    NULL);
    /* the rollout's project's baselines only: a shared stack's baselines in another project
     * are that project's figures */
    char scope[40];
    snprintf(scope, sizeof scope, "{%s}", f->project_id);
    enum db_status s = svc_baseline_compare(c, h->gate_run_id, h->from_stack_id, scope, &cmp);
    if (s < 0) {
        svc_baseline_cmp_free(&cmp);
        return s;
    }
    if (s == DB_NO_RESULTS) {
        svc_baseline_cmp_free(&cmp);
        return fail(c, m, f, i, "comparing: the gate run recorded no baseline (no workload result)",
                    NULL);
    }
    double ratio = 0;
    int pass = plan_rollout_judge(cmp.matched, cmp.value, cmp.reference, f->min_ratio, &ratio, why,
                                  sizeof why);
    json_t *doc = cmp.doc != NULL ? json_deep_copy(cmp.doc) : json_object();
    if (doc == NULL) {
        svc_baseline_cmp_free(&cmp);
        return DB_HARD_ERROR;
    }
    json_object_set_new(doc, "min_ratio", json_real(f->min_ratio));
    json_object_set_new(doc, "ratio", cmp.matched > 0 ? json_real(ratio) : json_null());
    json_object_set_new(doc, "passed", json_boolean(pass));
    json_object_set_new(doc, "verdict", json_string(why));
    svc_baseline_cmp_free(&cmp);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (text == NULL) {
        json_decref(doc);
        return DB_HARD_ERROR;
    }
    struct db_rollout_host_set set = {.step = pass ? "resuming" : "comparing", .comparison = text};
    s = db_rollout_host_step(c, m->id, h->host_id, &set);
    free(text);
    if (s >= 0 && !pass) {
        char w[500];
        snprintf(w, sizeof w, "comparing: %s", why);
        s = fail(c, m, f, i, w, doc);
    }
    json_decref(doc);
    return s;
}

/* why, then the names of the hosts whose rollback failed ("…: gpu-07 (drained), …"), cut
 * to len bytes (never in the middle of a character). */
static void failed_names(const struct db_rollout_facts *f, const char *why, char *out, size_t len)
{
    char tmp[2048];
    size_t used = (size_t)snprintf(tmp, sizeof tmp, "%s", why);
    int n = 0;
    for (int i = 0; i < f->nhosts && used < sizeof tmp; i++) {
        const struct db_rollout_host_facts *h = &f->hosts[i];
        if (h->rollback_step == NULL || strcmp(h->rollback_step, "failed") != 0)
            continue;
        used += (size_t)snprintf(tmp + used, sizeof tmp - used, "%s%s (%s)", n++ ? ", " : ": ",
                                 h->host_name, h->host_state ? h->host_state : "gone");
    }
    utf8_clean(tmp, strnlen(tmp, sizeof tmp), out, len);
}

/* Moves the host's row to step: its rollback step while rolling back (with the job named
 * by provision_job_id or gate_job_id), else its forward step with set's other members. */
static enum db_status to_step(struct db_conn *c, const struct move *m,
                              const struct db_rollout_host_facts *h, int rollback, const char *step,
                              struct db_rollout_host_set set)
{
    if (rollback)
        return db_rollout_host_rollback(c, m->id, h->host_id, step, NULL, set.provision_job_id,
                                        set.gate_job_id);
    set.step = step;
    return db_rollout_host_step(c, m->id, h->host_id, &set);
}

/* Applies one decision. *more: ask again in this transaction. */
static enum db_status apply(struct db_conn *c, struct move *m, const struct db_rollout_facts *f,
                            const struct plan_ro_decision *d, int *more)
{
    char reason[1000], job_id[37] = "";
    const struct db_rollout_host_facts *h =
        d->host >= 0 && d->host < f->nhosts ? &f->hosts[d->host] : NULL;
    enum db_status s = DB_ONE_RESULT;
    *more = 1;
    snprintf(reason, sizeof reason, "rollout %s: %s", m->id, d->why);
    if (h == NULL && d->action != PLAN_RO_WAIT && d->action != PLAN_RO_SOAK &&
        d->action != PLAN_RO_NEXT_WAVE && d->action != PLAN_RO_SUCCEED &&
        d->action != PLAN_RO_FAIL && d->action != PLAN_RO_FINISH)
        return DB_HARD_ERROR; /* the planner names a host for every host action */
    switch (d->action) {
    case PLAN_RO_WAIT: *more = 0; break;
    case PLAN_RO_START:
        if ((s = event(c, m, h, 0, HE_DRAIN, reason)) >= 0) {
            struct db_rollout_host_set set = {.step = "draining", .started = 1};
            s = db_rollout_host_step(c, m->id, h->host_id, &set);
        }
        break;
    case PLAN_RO_SKIP: {
        struct db_rollout_host_set set = {.step = "skipped", .error = d->why};
        s = db_rollout_host_step(c, m->id, h->host_id, &set);
        break;
    }
    case PLAN_RO_DRAINED: s = event(c, m, h, d->rollback, HE_DRAINED_WHEN_IDLE, reason); break;
    case PLAN_RO_PROVISION:
        s = queue_job(c, m, h, "provision", d->rollback ? h->from_stack_id : h->to_stack_id,
                      job_id);
        if (s >= 0)
            s = to_step(c, m, h, d->rollback, "provisioning",
                        (struct db_rollout_host_set){.provision_job_id = job_id});
        break;
    case PLAN_RO_GATE:
        /* provisioned → draining: gated while held out of service, an accepted gate leaves
         * the host drained */
        s = event(c, m, h, d->rollback, HE_DRAIN, reason);
        if (s >= 0)
            s = queue_job(c, m, h, "gate", NULL, job_id);
        if (s >= 0)
            s = to_step(c, m, h, d->rollback, "gating",
                        (struct db_rollout_host_set){.gate_job_id = job_id});
        break;
    case PLAN_RO_ADVANCE:
        if (d->next >= PLAN_STEP_NONE)
            return DB_HARD_ERROR;
        s = to_step(c, m, h, d->rollback, plan_ro_step_names[d->next],
                    (struct db_rollout_host_set){
                        .gate_run_id = !strcmp(h->step, "gating") ? h->run_id : NULL});
        break;
    case PLAN_RO_COMPARE: s = compare(c, m, f, d->host); break;
    case PLAN_RO_RESUME:
        s = event(c, m, h, d->rollback, HE_RESUME, reason);
        if (s >= 0)
            s = to_step(c, m, h, d->rollback, "done", (struct db_rollout_host_set){0});
        break;
    case PLAN_RO_SOAK: s = db_rollout_soak(c, m->id); break;
    case PLAN_RO_NEXT_WAVE:
        s = db_rollout_next_wave(c, m->id, d->pause);
        if (s >= 0 && d->pause)
            s = audit(c, m, "rollout.pause", "rollout", m->id, 200, d->why);
        break;
    case PLAN_RO_SUCCEED:
        if ((s = db_rollout_succeed(c, m->id)) >= 0)
            s = audit(c, m, "rollout.succeed", "rollout", m->id, 200, d->why);
        *more = 0;
        break;
    case PLAN_RO_FAIL: s = fail(c, m, f, d->host, d->why, NULL); break;
    case PLAN_RO_RB_START:
        if (d->drain)
            s = event(c, m, h, 1, HE_DRAIN, reason);
        if (s >= 0)
            s = db_rollout_host_rollback(c, m->id, h->host_id, "draining", NULL, NULL, NULL);
        break;
    case PLAN_RO_HOST_FAIL:
        s = db_rollout_host_rollback(c, m->id, h->host_id, "failed", d->why, NULL, NULL);
        if (s >= 0)
            s = audit(c, m, "rollout.host_failed", "host", h->host_id, 409, d->why);
        break;
    case PLAN_RO_FINISH:
        failed_names(f, d->why, reason, sizeof reason);
        if ((s = db_rollout_finish(c, m->id, d->finish_state, reason)) >= 0)
            s = audit(c, m, "rollout.finish", "rollout", m->id,
                      !strcmp(d->finish_state, "failed") ? 409 : 200, reason);
        *more = 0;
        break;
    }
    return s;
}

struct plan_ro_host *svc_rollout_plan_hosts(const struct db_rollout_facts *f)
{
    struct plan_ro_host *ph = calloc((size_t)(f->nhosts > 0 ? f->nhosts : 1), sizeof *ph);
    for (int i = 0; ph != NULL && i < f->nhosts; i++) {
        const struct db_rollout_host_facts *h = &f->hosts[i];
        int step = plan_ro_step_parse(h->step), rb = plan_ro_step_parse(h->rollback_step);
        ph[i] = (struct plan_ro_host){
            .wave = h->wave,
            .step = step < 0 ? PLAN_STEP_FAILED : (enum plan_ro_step)step,
            .rollback_step = rb < 0 ? PLAN_STEP_FAILED : (enum plan_ro_step)rb,
            .host_state = h->host_state,
            .held = h->held,
            .hold_reason = h->hold_reason,
            .busy = h->busy,
            .foreign_job = h->foreign_job,
            .intervention = h->intervention,
            .isolation = h->isolation,
            .on_target = h->on_target,
            .has_from = h->has_from,
            .provisioned = h->provisioned,
            .gate_ok = plan_gate_covers_stack(h->gate_stack_id, h->current_stack_id),
            .job_state = h->job_state,
            .job_error = h->job_error,
            .verdict = h->verdict,
            .verdict_reason = h->verdict_reason,
            .gate_is_run = h->gate_is_run,
        };
    }
    return ph;
}

static enum db_status move_fn(struct db_conn *c, void *arg)
{
    struct move *m = arg;
    m->refused_ev = HE__COUNT;
    m->nacts = 0;
    enum db_status s = DB_NO_RESULTS;
    int locked = 0;
    for (int i = 0; i < MAX_MOVES; i++) {
        struct db_rollout_facts f;
        s = db_rollout_facts(c, m->id, m->actor, &f);
        if (s != DB_ONE_RESULT) {
            db_rollout_facts_free(&f);
            break; /* ended, gone, or another driver holds it */
        }
        locked = 1;
        struct plan_ro_host *ph = svc_rollout_plan_hosts(&f);
        int state = plan_ro_state_parse(f.state);
        if (ph == NULL || state < 0) {
            free(ph);
            db_rollout_facts_free(&f);
            return DB_HARD_ERROR;
        }
        struct plan_ro_facts pf = {
            .state = (enum plan_ro_state)state,
            .waves = f.waves,
            .current_wave = f.current_wave,
            .soaking = f.soaking,
            .soak_over = f.soak_over,
            .canary = f.canary,
            .pause_after_canary = f.pause_after_canary,
            .canary_paused = f.canary_paused,
            .ratio_set = f.ratio_set,
            .max_unavailable = f.max_unavailable,
            .nhosts = f.nhosts,
            .hosts = ph,
        };
        struct plan_ro_decision d;
        plan_rollout_next(&pf, &d);
        int more = 0;
        s = apply(c, m, &f, &d, &more);
        if (s >= 0 && d.action != PLAN_RO_WAIT)
            note(m, &f, &d);
        free(ph);
        db_rollout_facts_free(&f);
        if (s < 0)
            return s;
        if (!more)
            break;
    }
    if (s >= 0 && locked) /* never waits: this transaction holds the row */
        s = db_rollout_checked(c, m->id);
    return s < 0 ? s : DB_ONE_RESULT;
}

/* The state machine refused a transition (the host changed since the facts were read):
 * the rollout fails (or, rolling back, that host's rollback), naming it. */
static enum db_status refused_fn(struct db_conn *c, void *arg)
{
    struct move *m = arg;
    char why[400];
    snprintf(why, sizeof why, "the host state machine refused %s from %s on host %s",
             plan_host_events[m->refused_ev].name, m->refused_state, m->refused_name);
    struct db_rollout_facts f;
    enum db_status s = db_rollout_facts(c, m->id, m->actor, &f);
    if (s != DB_ONE_RESULT) {
        db_rollout_facts_free(&f);
        return s;
    }
    int i = -1;
    for (int k = 0; k < f.nhosts; k++)
        if (!strcmp(f.hosts[k].host_id, m->refused_host))
            i = k;
    struct plan_ro_decision d = {.action = PLAN_RO_FAIL, .host = i};
    snprintf(d.why, sizeof d.why, "%s", why);
    if (!strcmp(f.state, "rolling_back") && i >= 0) {
        d.action = PLAN_RO_HOST_FAIL;
        s = db_rollout_host_rollback(c, m->id, m->refused_host, "failed", why, NULL, NULL);
    } else {
        s = fail(c, m, &f, i, why, NULL);
    }
    m->nacts = 0;
    note(m, &f, &d);
    db_rollout_facts_free(&f);
    return s;
}

static void log_move(const struct move *m)
{
    for (int i = 0; i < m->nacts; i++)
        log_json_steal(LOG_INFO,
                       json_pack("{s:s, s:s, s:s, s:s, s:s}", "msg", "rollout", "rollout_id", m->id,
                                 "host", m->acts[i].host, "action",
                                 plan_ro_action_name(m->acts[i].action), "why", m->acts[i].why));
}

/* One rollout: its decisions in one transaction (a transition the state machine refused:
 * a second one that records it), logged once committed. */
static enum db_status drive(const char *id)
{
    struct move m = {.id = id};
    snprintf(m.actor, sizeof m.actor, "rollout:%s", m.id);
    enum db_status s = db_run_tx(move_fn, &m);
    if (s < 0 && m.refused_ev != HE__COUNT)
        s = db_run_tx(refused_fn, &m);
    if (s >= 0)
        log_move(&m);
    return s;
}

static struct svc_driver driver = SVC_DRIVER_INIT("rollout", DUE_BATCH, db_rollout_due, drive);

int svc_rollout_run_once(void)
{
    return svc_driver_run_once(&driver);
}

int svc_rollout_start(int ms)
{
    return svc_driver_start(&driver, ms);
}

void svc_rollout_stop(void)
{
    svc_driver_stop(&driver);
}
