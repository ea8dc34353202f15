/* host_commands.c — see host_commands.h. */
#include "service/host_commands.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/jobs.h"
#include "planner/scope.h"
#include "provisioner/shell.h"
#include "service/audit.h"
#include "service/host_limits.h"

/* ---- the one apply path ---- */

enum db_status svc_host_apply(struct db_conn *c, const struct actor *who,
                              const struct host_change *ch, enum db_host_refusal *refused,
                              char to[24])
{
    *refused = DB_HOST_OK;
    if ((unsigned)ch->ev >= HE__COUNT)
        return DB_HARD_ERROR;
    struct db_host_event e = {
        ch->host_id,
        plan_host_events[ch->ev].name,
        ch->hint >= 0 && ch->hint < HS__COUNT ? plan_host_state_names[ch->hint] : NULL,
        ch->reason,
        ch->job_id,
        who->name,
        ch->gate_run_id};
    enum db_status s = db_host_event(c, &e, to, refused);
    const char *action = plan_host_events[ch->ev].audit_action;
    if (s <= 0 || action == NULL)
        return s; /* refused, failed, the host gone, or an event not audited */
    int status = ch->audit_status                     ? ch->audit_status
                 : !strcmp(action, "host.quarantine") ? 409
                                                      : 200;
    enum db_status a = svc_audit(c, who, action, "host", ch->host_id, status,
                                 ch->audit_reason ? ch->audit_reason : ch->reason);
    return a < 0 ? a : s;
}

/* ---- the scope hook ---- */

enum plan_cmd_refusal svc_host_scope(const struct actor *who, const struct db_host_facts *f,
                                     enum plan_cmd cmd)
{
    unsigned need = cmd == PLAN_CMD_RELEASE || cmd == PLAN_CMD_DELETE
                        ? ACTOR_ROLE_ADMIN
                        : ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN;
    switch (plan_scope(who, f->project_id, need)) {
    case PLAN_SCOPE_OK: return PLAN_CMD_OK;
    /* one with a role in the host's project learns that this one exists; anyone else
     * does not */
    case PLAN_SCOPE_FORBIDDEN: return PLAN_CMD_FORBIDDEN;
    default: return PLAN_CMD_NOT_FOUND;
    }
}

/* ---- loading and deciding ---- */

static struct plan_host_facts plan_facts(const struct db_host_facts *f)
{
    const char *stack = f->current_stack_id[0] ? f->current_stack_id : NULL;
    return (struct plan_host_facts){
        .state = plan_host_state_parse(f->t.state),
        .held = f->t.held,
        .has_stack = stack != NULL || f->desired_stack_id[0] != '\0',
        .gate_covers_stack = plan_gate_covers_stack(f->gate_stack_id, stack),
        .active_job = f->job_id[0] != '\0',
        .running_job = !strcmp(f->job_state, "running"),
        .stop_command_ok = f->t.stop_command != NULL && prov_valid_stop_command(f->t.stop_command),
    };
}

static void reset(struct svc_host_cmd *cmd)
{
    cmd->refused = PLAN_CMD_OK;
    cmd->by_scope = 0;
    cmd->move_project[0] = '\0';
    memset(&cmd->limit, 0, sizeof cmd->limit);
    free(cmd->doc);
    cmd->doc = NULL;
    cmd->job_id[0] = cmd->state[0] = cmd->busy_job[0] = cmd->busy_state[0] = '\0';
}

/* The reason in the host's history for cmd's event (the audit row keeps the caller's own
 * words where the command takes them). */
static void history_reason(const struct svc_host_cmd *cmd, char *out, size_t n)
{
    const char *who = cmd->who->name;
    switch (cmd->cmd) {
    case PLAN_CMD_DRAIN:
        snprintf(out, n, "drain requested by %s%s%s", who, cmd->reason ? ": " : "",
                 cmd->reason ? cmd->reason : "");
        break;
    case PLAN_CMD_RESUME:
        snprintf(out, n, "resumed by %s with an accepted gate for its stack%s%s", who,
                 cmd->reason ? ": " : "", cmd->reason ? cmd->reason : "");
        break;
    case PLAN_CMD_RELEASE:
        snprintf(out, n, "released from quarantine by %s (%s): %s", who,
                 cmd->host_key ? "new host key pinned" : "host key recorded on next contact",
                 cmd->reason ? cmd->reason : "");
        break;
    case PLAN_CMD_STOP: snprintf(out, n, "%s", cmd->reason ? cmd->reason : "stop"); break;
    default: snprintf(out, n, "%s requested by %s", plan_cmd_names[cmd->cmd], who); break;
    }
}

/* The status the API answers a command with, kept in its audit row. */
static int answer_status(enum plan_cmd cmd)
{
    switch (cmd) {
    case PLAN_CMD_PROVISION:
    case PLAN_CMD_GATE:
    case PLAN_CMD_DIAGNOSTICS:
    case PLAN_CMD_DRILL:
    case PLAN_CMD_STOP: return 202;
    case PLAN_CMD_DELETE: return 204;
    default: return 200;
    }
}

/* Applies the decided event; a refusal there (the state changed since it was read)
 * becomes the command's refusal. */
static enum db_status apply_decided(struct db_conn *c, struct svc_host_cmd *cmd,
                                    const struct plan_cmd_decision *d)
{
    char reason[700];
    history_reason(cmd, reason, sizeof reason);
    int own_words = cmd->cmd == PLAN_CMD_RELEASE || cmd->cmd == PLAN_CMD_STOP ||
                    ((cmd->cmd == PLAN_CMD_DRAIN || cmd->cmd == PLAN_CMD_RESUME) && cmd->reason);
    struct host_change ch = {cmd->host_id,
                             d->ev,
                             d->hint,
                             reason,
                             NULL,
                             NULL,
                             answer_status(cmd->cmd),
                             own_words ? cmd->reason : NULL};
    enum db_host_refusal refused;
    enum db_status s = svc_host_apply(c, cmd->who, &ch, &refused, NULL);
    if (refused != DB_HOST_OK)
        cmd->refused = refused == DB_HOST_QUARANTINED ? PLAN_CMD_QUARANTINED : PLAN_CMD_CONFLICT;
    else if (s == DB_NO_RESULTS)
        cmd->refused = PLAN_CMD_NOT_FOUND;
    return s;
}

/* ---- the commands' own writes ---- */

static char *stop_plan(const struct svc_host_cmd *cmd, const struct db_host_facts *f)
{
    const struct db_host_target *t = &f->t;
    json_t *plan = json_pack(
        "{s:b, s:{s:s, s:s, s:s, s:i, s:s, s:s}, s:s, s:s, s:s, s:o}", "dry_run", 1, "host", "id",
        t->id, "name", t->name, "address", t->address, "port", t->port, "user", t->user, "state",
        t->state, "pool_id", t->pool_id, "command", t->stop_command, "reason", cmd->reason,
        "cancels_job_id", f->job_id[0] ? json_string(f->job_id) : json_null());
    /* as the API renders answers */
    char *doc = plan
                    ? json_dumps(plan, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))
                    : NULL;
    json_decref(plan);
    return doc;
}

/* The stop job's params: the reason, who asked, the command, the state to return to if
 * the stop fails, and the job a forced stop superseded. Caller frees. */
static char *stop_params(const struct svc_host_cmd *cmd, const struct db_host_facts *f,
                         const char *superseded)
{
    json_t *params = json_pack(
        "{s:s, s:s, s:s, s:s, s:b, s:o}", "reason", cmd->reason, "requested_by", cmd->who->name,
        "command", f->t.stop_command, "previous_state", f->t.state, "force", cmd->force,
        "superseded_job_id", superseded[0] ? json_string(superseded) : json_null());
    char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
    json_decref(params);
    return text;
}

static enum db_status queue_job(struct db_conn *c, struct svc_host_cmd *cmd,
                                const struct db_host_facts *f, const struct plan_cmd_decision *d)
{
    char superseded[37] = "", params[128], *text = NULL;
    enum db_status s = DB_ONE_RESULT;
    if (d->supersede) {
        char why[200];
        snprintf(why, sizeof why, "superseded by a forced stop requested by %s", cmd->who->name);
        if ((s = db_job_supersede(c, cmd->host_id, why, superseded)) < 0)
            return s;
        snprintf(cmd->busy_job, sizeof cmd->busy_job, "%s", superseded);
    }
    if (cmd->cmd == PLAN_CMD_STOP && (text = stop_params(cmd, f, superseded)) == NULL)
        return DB_HARD_ERROR;
    if (cmd->cmd == PLAN_CMD_DIAGNOSTICS && cmd->diag_tests != NULL) /* targeted (api/gates.c) */
        snprintf(params, sizeof params, "{\"tests\":%s}", cmd->diag_tests);
    else if (cmd->cmd == PLAN_CMD_DIAGNOSTICS)
        snprintf(params, sizeof params, "{\"level\":%d}", cmd->diag_level);
    s = db_job_create(c, d->job_kind, cmd->host_id,
                      cmd->cmd == PLAN_CMD_PROVISION ? cmd->stack_id : NULL,
                      text                               ? text
                      : cmd->cmd == PLAN_CMD_DIAGNOSTICS ? params
                                                         : NULL,
                      cmd->who->name, &cmd->doc, cmd->job_id);
    free(text);
    if (s == DB_HARD_ERROR && db_conn_unique_violation(c))
        cmd->refused = PLAN_CMD_BUSY; /* a job was queued in between */
    else if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        cmd->refused = PLAN_CMD_UNKNOWN_STACK;
    return s;
}

/* The labels and the pool, and the audit row (a move across projects: one in each
 * project, naming both pools). */
static enum db_status move(struct db_conn *c, struct svc_host_cmd *cmd,
                           const struct db_host_facts *f)
{
    enum db_status s = db_host_patch(c, cmd->host_id, cmd->labels_json, cmd->pool_id,
                                     cmd->credential_id, &cmd->doc);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        cmd->refused = PLAN_CMD_UNKNOWN_POOL; /* the pool went away meanwhile */
    if (s <= 0)
        return s;
    if (cmd->move_project[0] == '\0')
        return svc_audit(c, cmd->who, "host.update", "host", cmd->host_id, 200, NULL);
    char reason[256];
    snprintf(reason, sizeof reason, "moved from pool %s (project %s) to pool %s (project %s)",
             f->t.pool_id, f->project_id, cmd->pool_id, cmd->move_project);
    s = svc_audit(c, cmd->who, "host.update", "host", cmd->host_id, 200, reason);
    if (s < 0)
        return s;
    s = svc_audit_row(c, cmd->who, "host.update", "host", cmd->host_id, 200, reason, f->project_id,
                      NULL, NULL);
    return s < 0 ? s : DB_ONE_RESULT;
}

/* The writes after the event: the job, the drained host, the new pin, the deletion, the
 * pool move; and the document answered. */
static enum db_status effects(struct db_conn *c, struct svc_host_cmd *cmd,
                              const struct db_host_facts *f, const struct plan_cmd_decision *d)
{
    enum db_status s;
    if (d->job_kind != NULL)
        return queue_job(c, cmd, f, d);
    if (d->then_drained) {
        char reason[200];
        snprintf(reason, sizeof reason, "no job runs any more (drain requested by %s)",
                 cmd->who->name);
        struct host_change ch = {cmd->host_id, HE_DRAINED_WHEN_IDLE, -1, reason, NULL, NULL, 0,
                                 NULL};
        enum db_host_refusal refused;
        if ((s = svc_host_apply(c, cmd->who, &ch, &refused, NULL)) < 0)
            return s;
    }
    if (d->repin && (s = db_host_repin(c, cmd->host_id, cmd->host_key)) < 0)
        return s;
    if (cmd->cmd == PLAN_CMD_DELETE) /* audited with its event (host.delete) */
        return db_host_delete(c, cmd->host_id);
    if (cmd->cmd == PLAN_CMD_MOVE_POOL)
        return move(c, cmd, f);
    return db_host_get(c, cmd->host_id, NULL, &cmd->doc);
}

/* ---- the project's limits ---- */

/* A move's target (PATCH pool_id, credential_id): the pool and the credential (a pool or
 * a credential of a project who may not see answers as one that does not exist), a move
 * across projects (a platform admin's only), the credential's binding to the target
 * project, the host's user and address (checked whenever the project or the credential
 * changes), and what the move changes (pf's move facts). refs is filled for the quota. */
static enum db_status move_target(struct db_conn *c, struct svc_host_cmd *cmd,
                                  const struct db_host_facts *f, struct db_host_refs *refs,
                                  struct plan_host_facts *pf)
{
    const char *pool = cmd->pool_id ? cmd->pool_id : f->t.pool_id;
    const char *cred = cmd->credential_id ? cmd->credential_id : f->t.credential_id;
    enum db_status s = db_host_refs(c, pool, cred, refs);
    if (s < 0)
        return s;
    if (!refs->pool_found) {
        cmd->refused = PLAN_CMD_UNKNOWN_POOL;
        return s;
    }
    const char *model = f->t.pool_gpu_model ? f->t.pool_gpu_model : "";
    pf->move_other_gpus =
        strcmp(refs->gpu_model, model) != 0 || refs->gpu_count != f->t.pool_gpu_count;
    pf->move_other_project = strcmp(refs->pool_project, f->project_id) != 0;
    pf->move_changes_pool = cmd->pool_id != NULL && strcasecmp(cmd->pool_id, f->t.pool_id) != 0;
    if (pf->move_other_project) {
        snprintf(cmd->move_project, sizeof cmd->move_project, "%s", refs->pool_project);
        enum plan_scope_answer a =
            plan_scope(cmd->who, refs->pool_project, ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN);
        if (a == PLAN_SCOPE_HIDDEN)
            cmd->refused = PLAN_CMD_UNKNOWN_POOL; /* as a pool that does not exist */
        else if (a == PLAN_SCOPE_FORBIDDEN ||
                 (!cmd->who->platform_admin && cmd->who->kind != ACTOR_SYSTEM))
            cmd->refused = PLAN_CMD_FORBIDDEN; /* only a platform admin moves across projects */
        cmd->by_scope = cmd->refused != PLAN_CMD_OK;
    }
    if (cmd->refused != PLAN_CMD_OK)
        return s;
    if (!refs->credential_found ||
        (cmd->credential_id && plan_scope_roles(cmd->who, refs->credential_project) == 0)) {
        cmd->refused = PLAN_CMD_UNKNOWN_REFERENCE; /* as a credential that does not exist */
        cmd->by_scope = refs->credential_found;
        return s;
    }
    /* the credential's binding, re-checked whenever the pool changes: the host's credential
     * must be allowed in the new pool's project for its user and address */
    if (pf->move_changes_pool || cmd->credential_id)
        cmd->refused = svc_limit_credential(refs, f->t.user, f->t.address, &cmd->limit);
    return s;
}

/* The limits a decided command meets: provisioning (a stack the host's project may use;
 * the budget; a stopped host's GPUs come back: the quota), a pool move (the target project's quota
 * for the GPUs the host would add there; a stopped host holds none). Sets cmd->refused. */
static enum db_status limits(struct db_conn *c, struct svc_host_cmd *cmd,
                             const struct db_host_facts *f, const struct db_host_refs *refs)
{
    enum db_status s = DB_ONE_RESULT;
    int stopped = f->t.state != NULL && !strcmp(f->t.state, "stopped");
    const char *model = f->t.pool_gpu_model ? f->t.pool_gpu_model : "";
    if (cmd->cmd == PLAN_CMD_PROVISION) {
        /* a stack of the host's project, or a shared one (another's: as unknown) */
        s = cmd->stack_id ? db_host_stack_usable(c, cmd->stack_id, f->project_id) : DB_NO_RESULTS;
        if (s <= 0) {
            cmd->refused = s == DB_NO_RESULTS ? PLAN_CMD_UNKNOWN_STACK : PLAN_CMD_OK;
            return s;
        }
        s = svc_limit_budget(c, f->project_id, &cmd->refused, &cmd->limit);
        if (s > 0 && cmd->refused == PLAN_CMD_OK && stopped)
            s = svc_limit_quota(c, f->project_id, model, cmd->host_id, 0, f->t.pool_gpu_count,
                                &cmd->refused, &cmd->limit);
        return s;
    }
    if (cmd->cmd != PLAN_CMD_MOVE_POOL || cmd->pool_id == NULL || !refs->pool_found || stopped ||
        !strcmp(cmd->pool_id, f->t.pool_id))
        return s;
    if (strcmp(refs->pool_project, f->project_id) != 0 || strcmp(refs->gpu_model, model) != 0)
        return svc_limit_quota(c, refs->pool_project, refs->gpu_model, cmd->host_id, 0,
                               refs->gpu_count, &cmd->refused, &cmd->limit);
    /* the same model in the same project: only GPUs beyond those it holds are added */
    return svc_limit_quota(c, f->project_id, model, cmd->host_id, f->t.pool_gpu_count,
                           refs->gpu_count - f->t.pool_gpu_count, &cmd->refused, &cmd->limit);
}

/* Scope, target, plan, limits: cmd->refused, or the decision in *d. */
static enum db_status decide(struct db_conn *c, struct svc_host_cmd *cmd,
                             const struct db_host_facts *f, struct db_host_refs *refs,
                             struct plan_cmd_decision *d)
{
    enum db_status s = DB_ONE_RESULT;
    cmd->refused = svc_host_scope(cmd->who, f, cmd->cmd);
    cmd->by_scope = cmd->refused != PLAN_CMD_OK;
    if (cmd->refused != PLAN_CMD_OK)
        return s;
    struct plan_host_facts pf = plan_facts(f);
    if (cmd->cmd == PLAN_CMD_MOVE_POOL && (cmd->pool_id != NULL || cmd->credential_id != NULL)) {
        s = move_target(c, cmd, f, refs, &pf);
        if (s < 0 || cmd->refused != PLAN_CMD_OK)
            return s;
    }
    int admin = (plan_scope_roles(cmd->who, f->project_id) & ACTOR_ROLE_ADMIN) != 0;
    enum plan_host_actor actor = plan_cmd_actor(cmd->who->kind == ACTOR_SYSTEM, admin);
    cmd->refused = plan_host_command(cmd->cmd, &pf, actor, cmd->force, d);
    if (cmd->refused != PLAN_CMD_OK || (cmd->cmd == PLAN_CMD_STOP && cmd->dry_run))
        return s;
    return limits(c, cmd, f, refs);
}

enum db_status svc_host_command(struct db_conn *c, struct svc_host_cmd *cmd)
{
    reset(cmd);
    struct db_host_facts f;
    struct db_host_refs refs = {0};
    enum db_status s = db_host_facts(c, cmd->host_id, &f);
    if (s <= 0) {
        if (s == DB_NO_RESULTS)
            cmd->refused = PLAN_CMD_NOT_FOUND;
        return s;
    }
    snprintf(cmd->state, sizeof cmd->state, "%s", f.t.state ? f.t.state : "");
    snprintf(cmd->busy_job, sizeof cmd->busy_job, "%s", f.job_id);
    snprintf(cmd->busy_state, sizeof cmd->busy_state, "%s", f.job_state);
    struct plan_cmd_decision d;
    s = decide(c, cmd, &f, &refs, &d);
    if (s < 0 || cmd->refused != PLAN_CMD_OK) {
        if (cmd->by_scope) /* a scope's refusal answers as if there were no such host */
            cmd->state[0] = cmd->busy_job[0] = cmd->busy_state[0] = '\0';
        db_host_facts_free(&f);
        db_host_refs_free(&refs);
        return s < 0 ? s : DB_NO_RESULTS;
    }
    if (cmd->cmd == PLAN_CMD_STOP && cmd->dry_run) {
        cmd->doc = stop_plan(cmd, &f);
        db_host_facts_free(&f);
        db_host_refs_free(&refs);
        return cmd->doc ? DB_ONE_RESULT : DB_HARD_ERROR;
    }
    s = d.ev != HE__COUNT ? apply_decided(c, cmd, &d) : DB_ONE_RESULT;
    if (s > 0 && cmd->refused == PLAN_CMD_OK)
        s = effects(c, cmd, &f, &d);
    db_host_facts_free(&f);
    db_host_refs_free(&refs);
    return s;
}

/* ---- in a transaction of its own ---- */

static enum db_status command_tx(struct db_conn *c, void *arg)
{
    return svc_host_command(c, arg);
}

static enum db_status denied_tx(struct db_conn *c, void *arg)
{
    const struct svc_host_cmd *cmd = arg;
    int status = cmd->refused == PLAN_CMD_FORBIDDEN   ? 403
                 : cmd->refused == PLAN_CMD_NOT_FOUND ? 404
                                                      : 400;
    /* the caller's words, else the command refused */
    return svc_audit(c, cmd->who, "host.denied", "host", cmd->host_id, status,
                     cmd->reason ? cmd->reason : plan_cmd_names[cmd->cmd]);
}

enum db_status svc_host_run(struct svc_host_cmd *cmd)
{
    enum db_status s = db_run_tx(command_tx, cmd);
    if (s < 0 || cmd->refused != PLAN_CMD_OK) {
        free(cmd->doc); /* rolled back, or refused: never sent */
        cmd->doc = NULL;
    }
    if (s >= 0 && (cmd->refused == PLAN_CMD_FORBIDDEN || cmd->by_scope))
        db_run_tx(denied_tx, cmd); /* denied attempts are audited too */
    return s;
}
