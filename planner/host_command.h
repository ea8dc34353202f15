/* host_command.h — what a host command may do now, decided from typed facts (pure logic,
 * no I/O). service/host_commands.c loads the facts, asks plan_host_command(), and applies
 * the answer through the state machine (planner/host_state.h, enforced again by
 * PostgreSQL's host_transition()); no other file decides a host command.
 *
 * The commands are the operators' and admins' (provision, gate, diagnostics, drain,
 * resume, release, stop, delete, pool move) and the idle policy's stop. The background
 * actors' own events (a job's start and end, the monitor's consequences, a recovery's or a
 * rollout's steps) are decided by their planners (planner/monitor_policy.h,
 * planner/recovery.h, planner/rollout.h) and applied through the same service path. */
#ifndef GPUFLEET_HOST_COMMAND_H
#define GPUFLEET_HOST_COMMAND_H

#include "planner/host_state.h"

enum plan_cmd {
    PLAN_CMD_PROVISION,
    PLAN_CMD_GATE,
    PLAN_CMD_DIAGNOSTICS,
    PLAN_CMD_DRAIN,
    PLAN_CMD_RESUME,
    PLAN_CMD_RELEASE,
    PLAN_CMD_STOP,
    PLAN_CMD_DELETE,
    PLAN_CMD_MOVE_POOL,
    PLAN_CMD_DRILL, /* a restore drill: drained hosts only (docs/hosts-and-gates.md) */
    PLAN_CMD__COUNT
};

/* Why a command is refused; each maps to one problem code in the API. */
enum plan_cmd_refusal {
    PLAN_CMD_OK = 0,
    PLAN_CMD_NOT_FOUND,         /* no such host (or one the actor may not see) */
    PLAN_CMD_FORBIDDEN,         /* the actor's role does not allow this (e.g. force) */
    PLAN_CMD_BUSY,              /* a job runs or is queued, or the state is a job's */
    PLAN_CMD_NOT_PROVISIONED,   /* gate: no current (or desired) stack */
    PLAN_CMD_DRAINING,          /* gate: the host is draining or drained */
    PLAN_CMD_NOT_DRAINED,       /* diagnostics, resume: the host must be drained */
    PLAN_CMD_NO_GATE,           /* resume: no accepted gate covers the current stack */
    PLAN_CMD_QUARANTINED,       /* the quarantine hold refuses it */
    PLAN_CMD_STOPPED,           /* stopped or stopping */
    PLAN_CMD_NOT_QUARANTINED,   /* release: nothing to release */
    PLAN_CMD_CONFLICT,          /* the state changed under the request */
    PLAN_CMD_NO_STOP_COMMAND,   /* stop: the pool has no valid stop command */
    PLAN_CMD_UNKNOWN_STACK,     /* provision: no such stack */
    PLAN_CMD_UNKNOWN_POOL,      /* pool move: no such pool */
    PLAN_CMD_ADDRESS_REFUSED,   /* register: the address policy refuses the address */
    PLAN_CMD_NAME_TAKEN,        /* register: another host has this name */
    PLAN_CMD_UNKNOWN_REFERENCE, /* register: no such credential or pool */
    /* projects (docs/projects.md): the limits a registration, a provisioning or a move
     * meets (planner/project_limits.h) */
    PLAN_CMD_CREDENTIAL_NOT_ALLOWED, /* register, move: the credential's binding refuses */
    PLAN_CMD_QUOTA_EXCEEDED,         /* register, move, provision a stopped host */
    PLAN_CMD_BUDGET_EXHAUSTED,       /* register, provision: refuse_new at 100 % */
    PLAN_CMD__REFUSALS
};

/* Who asks, as the state machine knows actors (planner/host_state.h). */
enum plan_host_actor plan_cmd_actor(int system, int admin);

/* The facts a command is decided on, read in the command's transaction. */
struct plan_host_facts {
    int state;             /* enum plan_host_state, or -1 when the stored state is unknown */
    int held;              /* the quarantine hold is set */
    int has_stack;         /* a current stack, or a desired one (a failed provisioning) */
    int gate_covers_stack; /* plan_gate_covers_stack() of the accepted gate and the stack */
    int active_job;        /* a job of the host is queued or running */
    int running_job;       /* a job of the host is running */
    int stop_command_ok;   /* the pool has a stop command that passes its template check */
    /* pool move: what the target pool changes */
    int move_changes_pool;  /* the host goes into another pool (0: labels or credential only) */
    int move_other_project; /* the target pool belongs to another project */
    int move_other_gpus;    /* the target pool expects another GPU model or count */
};

/* What to do. */
struct plan_cmd_decision {
    enum plan_host_event ev; /* the event to apply, or HE__COUNT: no state change */
    int hint;                /* its wanted to state (enum plan_host_state) or -1 */
    const char *job_kind;    /* the job to queue, or NULL */
    int then_drained;        /* drain: a host with no job goes on to drained */
    int supersede;           /* stop with force: the active job ends first */
    int repin;               /* release: the pin is replaced or cleared */
};

/* Decides cmd for an actor (plan_cmd_actor) on a host with facts f; force: an admin's
 * forced stop. On PLAN_CMD_OK fills *d. Refusals follow the order an operator needs to
 * read them: the hold, stopped, then the command's own.
 *
 * A move into another pool, whatever the pool, is the event pool_moved: only a host that
 * serves nothing moves — registered, drained or stopped (not_drained otherwise: a ready
 * host is drained first) — with no job acting on it (busy), and its accepted gate is
 * always cleared (the gate vouched for the old pool's GPUs, stop command and scopes). A
 * change of labels or credential alone changes no state. Who may move a host across
 * projects (a platform admin) is the scope's question, not this. */
enum plan_cmd_refusal plan_host_command(enum plan_cmd cmd, const struct plan_host_facts *f,
                                        enum plan_host_actor actor, int force,
                                        struct plan_cmd_decision *d);

/* The one rule: an accepted gate covers a host's stack when both are known and it ran on
 * that stack. NULL ids do not cover. */
int plan_gate_covers_stack(const char *accepted_gate_stack_id, const char *current_stack_id);

/* "provision", "gate", … (for logs and audit), and the refusals' names ("busy", …). */
extern const char *const plan_cmd_names[PLAN_CMD__COUNT];
extern const char *const plan_cmd_refusal_names[PLAN_CMD__REFUSALS];

#endif
