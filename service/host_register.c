/* host_register.c — registering a host (see host_commands.h): the address policy at the
 * door (the jobs and the monitor ask the same rule again before they connect), the
 * scope of the pool and the credential, the project's limits, the row, the audit. */
#include "service/host_commands.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/netpolicy.h"
#include "planner/scope.h"
#include "service/audit.h"
#include "service/host_limits.h"

static pthread_mutex_t allow_lock = PTHREAD_MUTEX_INITIALIZER;
static char *allow_cidrs;

void svc_host_commands_configure(const char *ssh_allow_cidrs)
{
    char *copy = strdup(ssh_allow_cidrs ? ssh_allow_cidrs : "");
    pthread_mutex_lock(&allow_lock);
    free(allow_cidrs);
    allow_cidrs = copy; /* NULL when out of memory: nothing is allowed */
    pthread_mutex_unlock(&allow_lock);
}

static enum net_target_verdict address_verdict(const char *address)
{
    pthread_mutex_lock(&allow_lock);
    enum net_target_verdict v = net_ssh_target(address, allow_cidrs ? allow_cidrs : "");
    pthread_mutex_unlock(&allow_lock);
    return v;
}

/* The pool and the credential: both must exist and be of projects who may see (else the
 * same answer as for an unknown id), the pool one where who may write, the credential
 * bound to the pool's project, the host's user and address. Sets h->refused; *denied: a
 * refusal by the scope (audited). */
static void check_refs(struct svc_host_new *h, const struct db_host_refs *refs, int *denied)
{
    *denied = 0;
    if (!refs->pool_found || !refs->credential_found) {
        h->refused = PLAN_CMD_UNKNOWN_REFERENCE;
        return;
    }
    enum plan_scope_answer a =
        plan_scope(h->who, refs->pool_project, ACTOR_ROLE_OPERATOR | ACTOR_ROLE_ADMIN);
    *denied = a != PLAN_SCOPE_OK || plan_scope_roles(h->who, refs->credential_project) == 0;
    if (a == PLAN_SCOPE_FORBIDDEN)
        h->refused = PLAN_CMD_FORBIDDEN;
    else if (*denied) /* a pool or a credential of a project who may not see */
        h->refused = PLAN_CMD_UNKNOWN_REFERENCE;
    else
        h->refused = svc_limit_credential(refs, h->in.user, h->in.address, &h->limit);
}

static enum db_status register_tx(struct db_conn *c, void *arg)
{
    struct svc_host_new *h = arg;
    struct db_host_refs refs;
    int denied;
    free(h->doc);
    h->doc = NULL;
    h->refused = PLAN_CMD_OK;
    memset(&h->limit, 0, sizeof h->limit);
    enum db_status s = db_host_refs(c, h->in.pool_id, h->in.credential_id, &refs);
    if (s < 0)
        return s;
    check_refs(h, &refs, &denied);
    if (h->refused == PLAN_CMD_OK)
        s = svc_limit_budget(c, refs.pool_project, &h->refused, &h->limit);
    if (s > 0 && h->refused == PLAN_CMD_OK)
        s = svc_limit_quota(c, refs.pool_project, refs.gpu_model, NULL, 0, refs.gpu_count,
                            &h->refused, &h->limit);
    if (s > 0 && h->refused == PLAN_CMD_OK) {
        s = db_host_insert(c, &h->in, &h->doc, h->id);
        if (s == DB_HARD_ERROR && db_conn_unique_violation(c))
            h->refused = PLAN_CMD_NAME_TAKEN;
        else if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
            h->refused = PLAN_CMD_UNKNOWN_REFERENCE;
    }
    if (s >= 0 && denied) /* committed: nothing else was written */
        s = svc_audit_row(c, h->who, "host.denied", "host", NULL,
                          h->refused == PLAN_CMD_FORBIDDEN ? 403 : 400, "register",
                          refs.pool_project[0] ? refs.pool_project : NULL, NULL, NULL);
    db_host_refs_free(&refs);
    if (s < 0 || h->refused != PLAN_CMD_OK)
        return s < 0 ? s : DB_NO_RESULTS;
    /* the key's provenance: pinned at registration, or trusted on first use (asked for
     * explicitly; the first contact's host.key_recorded row names the key learned) */
    if (h->in.host_key_sha256 == NULL)
        return svc_audit_row(c, h->who, "host.create", "host", h->id, 201,
                             "trust_on_first_use: the host key will be recorded on first contact",
                             NULL, NULL,
                             "{\"host_key_sha256\": null, \"trust_on_first_use\": true}");
    char after[128];
    snprintf(after, sizeof after, "{\"host_key_sha256\": \"%s\", \"trust_on_first_use\": false}",
             h->in.host_key_sha256); /* SHA256:<43 base64>, validated: nothing to escape */
    return svc_audit_row(c, h->who, "host.create", "host", h->id, 201, NULL, NULL, NULL, after);
}

enum db_status svc_host_register(struct svc_host_new *h)
{
    h->doc = NULL;
    h->id[0] = '\0';
    h->address = (int)address_verdict(h->in.address);
    if (h->address != NET_TARGET_OK) {
        h->refused = PLAN_CMD_ADDRESS_REFUSED;
        return DB_NO_RESULTS;
    }
    enum db_status s = db_run_tx(register_tx, h);
    if (s < 0 || h->refused != PLAN_CMD_OK) {
        free(h->doc);
        h->doc = NULL;
    }
    return s;
}
