/* stop.c — POST /v1/hosts/{id}/stop {reason, dry_run?, force?}: stop a host by running
 * its pool's stop_command over SSH, as a durable job of kind `stop`. The rules live in
 * the one host-command path (service/host_commands.c, planner/host_command.c):
 *
 *   - operator or admin; `force` only for admin (403 insufficient_role otherwise, audited
 *     as host.denied);
 *   - the pool needs a stop_command (409 no_stop_command); a stopped host is refused
 *     (409 host_stopped);
 *   - a host with a queued or running job is refused (409 host_busy) unless an admin sets
 *     force: then that job ends at once (state cancelled, cancel_requested, error_class
 *     superseded — its worker is fenced out at its next write or heartbeat) and the stop
 *     is queued in the same transaction;
 *   - dry_run answers 200 with what would run (host, exact command, the job force would
 *     cancel) and queues, changes and audits nothing;
 *   - otherwise 202 with the job; the audit event host.stop carries the principal and the
 *     reason. The job's params keep the reason, the principal, the command and the host's
 *     state at the time (the worker returns the host to it if the stop fails). */
#include "api/stop.h"

#include "api/host_command.h"
#include "api/jsonspec.h"
#include "api/resource.h"

static int valid_reason(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

struct stop_in {
    const char *reason;
    int dry_run, force;
};
static const struct spec_field stop_spec[] = {
    {"reason", SPEC_STRING, SPEC_REQUIRED, 1, 500, valid_reason,
     "1-500 characters without control characters", NULL, NULL, SPEC_TO(struct stop_in, reason)},
    {"dry_run", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_TO(struct stop_in, dry_run)},
    {"force", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_TO(struct stop_in, force)},
    SPEC_END,
};

enum MHD_Result api_hosts_stop(struct api_req *r)
{
    struct stop_in in = {NULL, 0, 0};
    const char *id = api_path_id(r, "host");
    if (id == NULL || api_spec_parse(r, r->json, stop_spec, &in) != 0)
        return MHD_YES;
    struct svc_host_cmd cmd = {.cmd = PLAN_CMD_STOP,
                               .host_id = id,
                               .reason = in.reason,
                               .dry_run = in.dry_run,
                               .force = in.force};
    return api_host_command(r, &cmd);
}
