/* host_limits.h — the project limits a host's registration, provisioning and pool move
 * meet (docs/projects.md), asked in the command's transaction: the typed rows from db/,
 * the decision from planner/project_limits.h, the refusal and what it names for the
 * problem's detail (struct svc_host_limit, host_commands.h). Internal to service/. */
#ifndef GPUFLEET_SVC_HOST_LIMITS_H
#define GPUFLEET_SVC_HOST_LIMITS_H

#include "db/hosts.h"
#include "service/host_commands.h"

/* The credential's binding (refs: the credential's and the target pool's rows) for a host
 * with this login user and address: PLAN_CMD_OK, or PLAN_CMD_CREDENTIAL_NOT_ALLOWED with
 * out->credential naming the rule. */
enum plan_cmd_refusal svc_limit_credential(const struct db_host_refs *refs, const char *user,
                                           const char *address, struct svc_host_limit *out);

/* The GPU quota of project_id for adding GPUs of gpu_model to host_id (NULL: a new host),
 * with the project's row locked until the transaction ends (concurrent additions are
 * decided one at a time). extra: GPUs of the model the host already holds in the project
 * and keeps (counted with the usage). *refused: PLAN_CMD_OK or PLAN_CMD_QUOTA_EXCEEDED
 * (out names the model, the usage and the limit). Returns the database's status. */
enum db_status svc_limit_quota(struct db_conn *c, const char *project_id, const char *gpu_model,
                               const char *host_id, long extra, long adding,
                               enum plan_cmd_refusal *refused, struct svc_host_limit *out);

/* The budget of project_id: *refused is PLAN_CMD_BUDGET_EXHAUSTED (out names the spend
 * and the budget) when its month's spend reached it and on_exhausted refuses new hosts
 * and provisionings. */
enum db_status svc_limit_budget(struct db_conn *c, const char *project_id,
                                enum plan_cmd_refusal *refused, struct svc_host_limit *out);

#endif
