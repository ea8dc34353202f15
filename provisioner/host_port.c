/* host_port.c — see host_port.h. */
#include "provisioner/host_port.h"

#include <stdatomic.h>
#include <stddef.h>

#include "common/log.h"

static _Atomic(prov_host_apply_fn) installed;

void prov_host_port_install(prov_host_apply_fn fn)
{
    atomic_store(&installed, fn);
}

enum db_status prov_host_apply(struct db_conn *c, const struct actor *who,
                               const struct host_change *ch, enum db_host_refusal *refused,
                               char to[24])
{
    prov_host_apply_fn fn = atomic_load(&installed);
    *refused = DB_HOST_OK;
    if (to != NULL)
        to[0] = '\0';
    if (fn == NULL) {
        log_msg(LOG_ERROR, "no host apply path is installed: %s for host %s not applied",
                plan_host_events[ch->ev].name, ch->host_id);
        return DB_HARD_ERROR;
    }
    return fn(c, who, ch, refused, to);
}
