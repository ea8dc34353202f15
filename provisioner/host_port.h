/* host_port.h — how the provisioner's jobs and health monitor change a host's state. They
 * decide which event (their planners do), but they do not apply it: the one apply path is
 * the service's (service/host_commands.c: the state machine, the audit row), installed here
 * by the composition root at start-up. provisioner/ never calls service/ directly (the
 * layers run cmd → api → service → provisioner → db, planner → common). */
#ifndef GPUFLEET_PROV_HOST_PORT_H
#define GPUFLEET_PROV_HOST_PORT_H

#include "common/actor.h"
#include "db/db.h"
#include "db/hosts.h"
#include "planner/host_state.h"

/* Applies ch for who in the caller's transaction; *refused gets the state machine's
 * refusal (the transaction is then aborted) and to (may be NULL) the new state. */
typedef enum db_status (*prov_host_apply_fn)(struct db_conn *c, const struct actor *who,
                                             const struct host_change *ch,
                                             enum db_host_refusal *refused, char to[24]);

/* Installs the apply path (call once, before any worker starts). */
void prov_host_port_install(prov_host_apply_fn fn);

/* Applies through the installed path. None installed: DB_HARD_ERROR (logged), never a
 * state change behind the service's back. */
enum db_status prov_host_apply(struct db_conn *c, const struct actor *who,
                               const struct host_change *ch, enum db_host_refusal *refused,
                               char to[24]);

#endif
