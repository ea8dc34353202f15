/* host_command.c — see host_command.h. */
#include "api/host_command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum MHD_Result busy(struct api_req *r, const struct svc_host_cmd *cmd)
{
    if (cmd->cmd == PLAN_CMD_DELETE)
        return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                                 "a job is running on this host; cancel it first");
    if (cmd->cmd == PLAN_CMD_STOP)
        return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                                 "this host already has a queued or running job%s%s; an admin "
                                 "may set force to cancel it and stop the host",
                                 cmd->busy_job[0] ? " " : "", cmd->busy_job);
    return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                             "this host already has a queued or running job");
}

static enum MHD_Result not_drained(struct api_req *r, const struct svc_host_cmd *cmd)
{
    if (cmd->cmd == PLAN_CMD_MOVE_POOL)
        return api_reply_problem(
            r, API_ERR_HOST_NOT_DRAINED, "pool_id",
            "a host moves into another pool only when it serves nothing: registered, drained or "
            "stopped (this one is %s); %s",
            cmd->state,
            !strcmp(cmd->state, "ready") ? "POST /v1/hosts/{id}/drain first" : "drain it first");
    if (cmd->cmd == PLAN_CMD_RESUME)
        return api_reply_problem(r, API_ERR_HOST_NOT_DRAINED, NULL,
                                 "only a drained host can be resumed (this one is %s)", cmd->state);
    if (cmd->cmd == PLAN_CMD_DRILL)
        return api_reply_problem(r, API_ERR_HOST_NOT_DRAINED, NULL,
                                 "a restore drill runs only on a drained host, never one doing "
                                 "work (this one is %s); POST /v1/hosts/{id}/drain first",
                                 cmd->state);
    return api_reply_problem(r, API_ERR_HOST_NOT_DRAINED, NULL,
                             "active diagnostics are invasive and run only on a drained host "
                             "(this one is %s); POST /v1/hosts/{id}/drain first",
                             cmd->state);
}

static enum MHD_Result held_or_stopped(struct api_req *r, const struct svc_host_cmd *cmd)
{
    if (cmd->refused == PLAN_CMD_STOPPED)
        return cmd->cmd == PLAN_CMD_STOP
                   ? api_reply_problem(r, API_ERR_HOST_STOPPED, NULL, "the host is already stopped")
                   : api_reply_problem(r, API_ERR_HOST_STOPPED, NULL,
                                       "the host is %s; provision it again to bring it back",
                                       cmd->state);
    if (cmd->cmd == PLAN_CMD_PROVISION)
        return api_reply_problem(r, API_ERR_HOST_QUARANTINED, NULL,
                                 "the host is quarantined (host key mismatch or hardware "
                                 "evidence); it must be investigated first");
    return api_reply_problem(r, API_ERR_HOST_QUARANTINED, NULL,
                             "the host is quarantined (host key mismatch or hardware "
                             "evidence); an admin must release it first "
                             "(POST /v1/hosts/{id}/release)");
}

enum MHD_Result api_reply_host_limit(struct api_req *r, enum plan_cmd_refusal why,
                                     const struct svc_host_limit *l, const char *user,
                                     const char *address)
{
    if (why == PLAN_CMD_QUOTA_EXCEEDED)
        return api_reply_problem(r, API_ERR_QUOTA_EXCEEDED, NULL,
                                 "the project's GPU quota for %s is %ld; its hosts hold %ld and "
                                 "this would add %ld",
                                 l->gpu_model, l->limit, l->held, l->adding);
    if (why == PLAN_CMD_BUDGET_EXHAUSTED)
        return api_reply_problem(r, API_ERR_BUDGET_EXHAUSTED, NULL,
                                 "the project's spend this month (%s) reached its monthly budget "
                                 "(%s), and its on_exhausted refuses new hosts and provisionings",
                                 l->spend[0] ? l->spend : "?", l->budget[0] ? l->budget : "?");
    switch (l->credential) {
    case PLAN_CREDENTIAL_USER:
        return api_reply_problem(r, API_ERR_CREDENTIAL_NOT_ALLOWED, "user",
                                 "the credential's allowed_users do not include the login user%s%s",
                                 user ? " " : "", user ? user : "");
    case PLAN_CREDENTIAL_ADDRESS:
        return api_reply_problem(r, API_ERR_CREDENTIAL_NOT_ALLOWED, "address",
                                 "the address%s%s lies in none of the credential's allowed_cidrs",
                                 address ? " " : "", address ? address : "");
    default:
        return api_reply_problem(r, API_ERR_CREDENTIAL_NOT_ALLOWED, "credential_id",
                                 "the credential belongs to another project than the pool; a "
                                 "host uses a credential of its pool's project");
    }
}

enum MHD_Result api_reply_host_refusal(struct api_req *r, const struct svc_host_cmd *cmd)
{
    switch (cmd->refused) {
    case PLAN_CMD_NOT_FOUND:
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    case PLAN_CMD_FORBIDDEN:
        if (cmd->cmd == PLAN_CMD_MOVE_POOL && cmd->move_project[0])
            return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "pool_id",
                                     "only a platform admin may move a host into another "
                                     "project's pool");
        if (cmd->cmd == PLAN_CMD_STOP && cmd->force)
            return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "force",
                                     "only an admin may force a stop");
        return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL,
                                 "your role may not %s this host", plan_cmd_names[cmd->cmd]);
    case PLAN_CMD_BUSY: return busy(r, cmd);
    case PLAN_CMD_NOT_PROVISIONED:
        return api_reply_problem(r, API_ERR_NOT_PROVISIONED, NULL,
                                 "the host has no current stack; provision it first");
    case PLAN_CMD_DRAINING:
        return api_reply_problem(r, API_ERR_HOST_DRAINED, NULL,
                                 "the host is %s; resume it (or run diagnostics) first",
                                 cmd->state);
    case PLAN_CMD_NOT_DRAINED: return not_drained(r, cmd);
    case PLAN_CMD_NO_GATE:
        return api_reply_problem(r, API_ERR_GATE_REQUIRED, NULL,
                                 "the host has no accepted gate for its current stack; run the "
                                 "gate (POST /v1/hosts/{id}/gate)");
    case PLAN_CMD_QUARANTINED:
    case PLAN_CMD_STOPPED: return held_or_stopped(r, cmd);
    case PLAN_CMD_NOT_QUARANTINED:
        return api_reply_problem(r, API_ERR_HOST_NOT_QUARANTINED, NULL,
                                 "the host is not quarantined (it is %s): nothing to release",
                                 cmd->state);
    case PLAN_CMD_CONFLICT:
        return api_reply_problem(r, API_ERR_HOST_STATE_CONFLICT, NULL,
                                 "the host's state changed while the request ran; read it and "
                                 "retry");
    case PLAN_CMD_NO_STOP_COMMAND:
        return api_reply_problem(r, API_ERR_NO_STOP_COMMAND, NULL,
                                 "the host's pool has no stop_command; set one "
                                 "(PUT /v1/pools/{id}) first");
    case PLAN_CMD_UNKNOWN_STACK:
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "stack_id", "no stack has this id");
    case PLAN_CMD_UNKNOWN_POOL:
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "pool_id", "no pool has this id");
    case PLAN_CMD_UNKNOWN_REFERENCE:
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "credential_id",
                                 "no credential has this id");
    case PLAN_CMD_CREDENTIAL_NOT_ALLOWED:
    case PLAN_CMD_QUOTA_EXCEEDED:
    case PLAN_CMD_BUDGET_EXHAUSTED:
        return api_reply_host_limit(r, cmd->refused, &cmd->limit, NULL, NULL);
    default: return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "unexpected refusal");
    }
}

enum MHD_Result api_host_command(struct api_req *r, struct svc_host_cmd *cmd)
{
    struct actor who;
    api_actor(r, &who);
    cmd->who = &who;
    cmd->doc = NULL;
    enum db_status s = svc_host_run(cmd);
    if (cmd->refused != PLAN_CMD_OK)
        return api_reply_host_refusal(r, cmd);
    if (s < 0)
        return api_reply_db(r, s);
    if (cmd->cmd == PLAN_CMD_DELETE) {
        free(cmd->doc);
        return api_reply_empty(r, MHD_HTTP_NO_CONTENT);
    }
    if (cmd->job_id[0] == '\0') /* a state command, an update, or a stop's dry run */
        return api_reply_text(r, MHD_HTTP_OK, cmd->doc, NULL);
    char location[96];
    snprintf(location, sizeof location, "/v1/jobs/%s", cmd->job_id);
    return api_reply_text(r, MHD_HTTP_ACCEPTED, cmd->doc, location);
}
