/* host_register.c — registering a host (see host_commands.h): the address policy at the
 * door (the jobs and the monitor ask the same rule again before they connect), the row,
 * the audit. */
#include "service/host_commands.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/netpolicy.h"
#include "service/audit.h"

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

static enum db_status register_tx(struct db_conn *c, void *arg)
{
    struct svc_host_new *h = arg;
    free(h->doc);
    h->doc = NULL;
    h->refused = PLAN_CMD_OK;
    enum db_status s = db_host_insert(c, &h->in, &h->doc, h->id);
    if (s == DB_HARD_ERROR && db_conn_unique_violation(c))
        h->refused = PLAN_CMD_NAME_TAKEN;
    else if (s == DB_HARD_ERROR && db_conn_fk_violation(c))
        h->refused = PLAN_CMD_UNKNOWN_REFERENCE;
    if (s <= 0)
        return s;
    return svc_audit(c, h->who, "host.create", "host", h->id, 201, NULL);
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
