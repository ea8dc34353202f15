/* host_commands.h — the one place a host command is decided and applied.
 *
 * Every command on a host goes through here, whoever issues it: an operator or admin
 * through the API (provision, gate, diagnostics, drain, resume, release, stop, delete,
 * pool move), the idle policy (stop), and — through svc_host_apply — the jobs and the
 * health monitor (installed as provisioner/host_port.h's apply path), the recovery driver
 * and the rollout driver. One path, in one transaction:
 *
 *   load     the host's typed facts (db_host_facts)
 *   scope    may this actor act on this host at all? (svc_host_scope: one hook; 404 when
 *            it may not even see it)
 *   plan     planner/host_command.h decides: refused, or the event, the job, the rest
 *   apply    svc_host_apply: the event through PostgreSQL's host_transition() (which
 *            enforces the same table again), the audit row naming the typed actor; the
 *            database's triggers emit the host.state event in the same transaction
 *   effects  the command's own writes (the job queued, the pin replaced, the host deleted)
 *
 * A refusal changes nothing and is typed (enum plan_cmd_refusal); api/ maps it to one
 * problem reply. */
#ifndef GPUFLEET_SVC_HOST_COMMANDS_H
#define GPUFLEET_SVC_HOST_COMMANDS_H

#include "common/actor.h"
#include "db/db.h"
#include "db/hosts.h"
#include "planner/host_command.h"
#include "planner/host_state.h"
#include "planner/project_limits.h"

/* What a refusal by the host's project's limits names, for the problem's detail:
 * credential_not_allowed (the rule of the binding), quota_exceeded (the model, the GPUs
 * held, the limit, the GPUs the act adds), budget_exhausted (spend and budget, decimal
 * text). */
struct svc_host_limit {
    enum plan_credential_answer credential;
    char gpu_model[65];
    long held, limit, adding;
    char spend[32], budget[32];
};

/* A pool's change of GPU model or gpu_count against its project's quota, in the caller's
 * transaction with the pool's row locked: a change that adds GPUs to the project (more per
 * host, or the hosts' GPUs counted under another model) locks the project's row and is
 * refused (*refused PLAN_CMD_QUOTA_EXCEEDED, out naming the model, usage, limit and the
 * GPUs the change adds) past the quota, as a registration is. Stopped hosts hold none. */
enum db_status svc_pool_quota(struct db_conn *c, const char *pool_id, const char *gpu_model,
                              long gpu_count, enum plan_cmd_refusal *refused,
                              struct svc_host_limit *out);

struct svc_host_cmd {
    enum plan_cmd cmd;
    const struct actor *who;
    const char *host_id;
    /* arguments (borrowed) */
    const char *stack_id;      /* provision */
    int diag_level;            /* diagnostics: 1-3 */
    const char *diag_tests;    /* diagnostics: targeted tests, a JSON array text, or NULL */
    const char *reason;        /* stop, release, drain, resume (optional): the caller's words */
    const char *host_key;      /* release: the new pin, or NULL (record on next contact) */
    int dry_run, force;        /* stop */
    const char *pool_id;       /* pool move (NULL keeps the pool) */
    const char *credential_id; /* pool move: the credential (NULL keeps it) */
    const char *labels_json;   /* pool move: labels (NULL keeps them) */
    /* results */
    enum plan_cmd_refusal refused;
    char *doc;         /* the host, the queued job, or a stop's plan (caller frees) */
    char job_id[37];   /* the queued job */
    char state[24];    /* the host's state when the command was decided */
    char busy_job[37]; /* busy: the active job; a forced stop: the job it supersedes */
    char busy_state[16];
    int by_scope;                /* the refusal is the scope's (audited as host.denied) */
    char move_project[37];       /* pool move: the target pool's project when it is another */
    struct svc_host_limit limit; /* what a refusal by the project's limits names */
};

/* Decides and applies cmd in the caller's transaction (which may be retried: results are
 * reset first). A refusal sets cmd->refused and returns DB_NO_RESULTS, or the failed
 * status when the database refused (the transaction must then roll back). */
enum db_status svc_host_command(struct db_conn *c, struct svc_host_cmd *cmd);

/* svc_host_command in a transaction of its own (db_run_tx: retried on serialization
 * failures and deadlocks); a refused document is freed. A refusal of the actor's right
 * (PLAN_CMD_FORBIDDEN) or by the scope (a host, or a pool move's target pool, of a
 * project the actor may not see) is audited, as host.denied, in a transaction of its
 * own. */
enum db_status svc_host_run(struct svc_host_cmd *cmd);

/* The one apply path: ch through host_transition() for who, and its audit row when the
 * event is audited (plan_host_events[].audit_action). *refused: the state machine's
 * refusal (the status is then the failed statement's: roll back). DB_NO_RESULTS: the host
 * is gone. to (may be NULL) gets the new state. Matches prov_host_apply_fn. */
enum db_status svc_host_apply(struct db_conn *c, const struct actor *who,
                              const struct host_change *ch, enum db_host_refusal *refused,
                              char to[24]);

/* The scope hook: may who act (cmd) on the host with these facts? planner/scope.h's
 * plan_scope on the host's project: PLAN_CMD_OK, PLAN_CMD_NOT_FOUND (no role there: it may
 * not see the host, answered as if there were none) or PLAN_CMD_FORBIDDEN (a role there,
 * but not operator or admin; not admin for release and delete). */
enum plan_cmd_refusal svc_host_scope(const struct actor *who, const struct db_host_facts *f,
                                     enum plan_cmd cmd);

/* Registration: the address policy (common/netpolicy.h's one SSH-target rule, against
 * the allow list given to svc_host_commands_configure), then in one transaction the pool
 * (one of a project where who is operator or admin) and the credential (of a project who
 * may see), the credential's binding, the project's budget and GPU quota (the project's
 * row locked, so concurrent registrations never over-commit), the new host (state
 * registered), its audit row. Refusals: PLAN_CMD_ADDRESS_REFUSED (address: the verdict),
 * PLAN_CMD_NAME_TAKEN, PLAN_CMD_UNKNOWN_REFERENCE (no such pool or credential, or one of a
 * project who may not see: the same answer), PLAN_CMD_FORBIDDEN (a viewer of the pool's
 * project), PLAN_CMD_CREDENTIAL_NOT_ALLOWED, PLAN_CMD_BUDGET_EXHAUSTED,
 * PLAN_CMD_QUOTA_EXCEEDED (limit names the rule, the spend, the usage). Refusals by the
 * scope are audited (host.denied). */
struct svc_host_new {
    const struct actor *who;
    struct db_host_new in;
    enum plan_cmd_refusal refused;
    int address; /* enum net_target_verdict when refused for the address */
    struct svc_host_limit limit;
    char *doc; /* the new host (caller frees) */
    char id[37];
};
enum db_status svc_host_register(struct svc_host_new *h);

/* The SSH allow list (GPUFLEET_SSH_ALLOW_CIDRS) registration checks; copied. */
void svc_host_commands_configure(const char *ssh_allow_cidrs);

#endif
