/* host_command.h — the API side of a host command: the actor of the request, the
 * service's one path (service/host_commands.h), and one mapping of its typed refusal to a
 * problem reply. Handlers parse, fill a struct svc_host_cmd, and call api_host_command. */
#ifndef GPUFLEET_API_HOST_COMMAND_H
#define GPUFLEET_API_HOST_COMMAND_H

#include "api/http.h"
#include "service/host_commands.h"

/* Runs cmd (its who is set here from r) and answers: the refusal as a problem, a database
 * failure, or the command's document (202 with the job's Location, 200 with the host or
 * a stop's plan, 204 for a deletion). Frees cmd->doc. */
enum MHD_Result api_host_command(struct api_req *r, struct svc_host_cmd *cmd);

/* The problem reply of a refusal; state and busy_job come from the command's results. */
enum MHD_Result api_reply_host_refusal(struct api_req *r, const struct svc_host_cmd *cmd);

/* The problem reply of a refusal by the project's limits (credential_not_allowed,
 * quota_exceeded, budget_exhausted), naming the rule, the usage and limit, or the spend
 * and budget. user and address: the host's (NULL: not named). */
enum MHD_Result api_reply_host_limit(struct api_req *r, enum plan_cmd_refusal why,
                                     const struct svc_host_limit *l, const char *user,
                                     const char *address);

#endif
