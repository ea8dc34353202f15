/* stop.c — POST /v1/hosts/{id}/stop {reason, dry_run?, force?}: stop a host by running
 * its pool's stop_command over SSH, as a durable job of kind `stop`.
 *
 *   - operator or admin; `force` only for admin (403 insufficient_role otherwise);
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "db/audit.h"
#include "db/hosts.h"
#include "db/jobs.h"
#include "planner/host_state.h"
#include "provisioner/shell.h"
#include "service/stop.h"

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

struct stop_arg {
    struct api_req *r;
    struct svc_stop st;
};

static enum db_status stop_fn(struct db_conn *c, void *arg)
{
    struct stop_arg *a = arg;
    enum db_status s = svc_stop_queue(c, &a->st);
    if (s < 0 || a->st.refused || a->st.dry_run)
        return s;
    return api_audit_reason(c, a->r, "host.stop", "host", a->st.id, MHD_HTTP_ACCEPTED,
                            a->st.reason);
}

static enum db_status denied_fn(struct db_conn *c, void *arg)
{
    struct stop_arg *a = arg;
    return api_audit_reason(c, a->r, "host.denied", "host", a->st.id, MHD_HTTP_FORBIDDEN,
                            a->st.reason);
}

enum MHD_Result api_hosts_stop(struct api_req *r)
{
    struct stop_in in = {NULL, 0, 0};
    const char *id = api_path_id(r, "host");
    if (id == NULL || api_spec_parse(r, r->json, stop_spec, &in) != 0)
        return MHD_YES;
    struct stop_arg a = {.r = r,
                         .st = {.principal = r->principal.sub,
                                .id = id,
                                .reason = in.reason,
                                .dry_run = in.dry_run,
                                .force = in.force}};
    if (a.st.force && r->principal.role != ROLE_ADMIN) {
        enum MHD_Result ret = api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, "force",
                                                "only an admin may force a stop");
        db_run_tx(denied_fn, &a); /* denied attempts are audited too */
        return ret;
    }
    enum db_status s = api_run_tx_doc(stop_fn, &a, &a.st.doc);
    switch (a.st.refused) {
    case SVC_STOP_OK: break;
    case SVC_STOP_NO_HOST:
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    case SVC_STOP_NO_COMMAND:
        return api_reply_problem(r, API_ERR_NO_STOP_COMMAND, NULL,
                                 "the host's pool has no stop_command; set one "
                                 "(PUT /v1/pools/{id}) first");
    case SVC_STOP_STOPPED:
        return api_reply_problem(r, API_ERR_HOST_STOPPED, NULL, "the host is already stopped");
    case SVC_STOP_BUSY: /* refused before a job was made, or rolled back (doc freed) */
        return api_reply_problem(r, API_ERR_HOST_BUSY, NULL,
                                 "this host already has a queued or running job%s%s; an admin "
                                 "may set force to cancel it and stop the host",
                                 a.st.busy_job[0] ? " " : "", a.st.busy_job);
    }
    if (s < 0)
        return api_reply_db(r, s);
    if (a.st.dry_run)
        return api_reply_text(r, MHD_HTTP_OK, a.st.doc, NULL);
    char location[96];
    snprintf(location, sizeof location, "/v1/jobs/%s", a.st.job_id);
    return api_reply_text(r, MHD_HTTP_ACCEPTED, a.st.doc, location);
}
