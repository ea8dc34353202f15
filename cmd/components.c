/* components.c — see components.h. */
#include "cmd/components.h"

#include <assert.h>
#include <string.h>

#include "common/log.h"

int cmd_components_start(struct cmd_run *run, const char **failed, char *err, size_t errlen)
{
    assert(run->n <= CMD_MAX_COMPONENTS);
    memset(run->started, 0, sizeof run->started);
    for (size_t i = 0; i < run->n; i++) {
        const struct cmd_component *c = &run->table[i];
        if (c->wanted != NULL && !c->wanted(run->ctx))
            continue;
        if (c->start != NULL && c->start(run->ctx, err, errlen) != 0) {
            *failed = c->name;
            cmd_components_stop(run);
            return -1;
        }
        run->started[i] = 1;
        log_msg(LOG_DEBUG, "started: %s", c->name);
    }
    return 0;
}

void cmd_components_stop(struct cmd_run *run)
{
    for (size_t i = run->n; i-- > 0;) {
        if (!run->started[i])
            continue;
        run->started[i] = 0;
        if (run->table[i].stop != NULL)
            run->table[i].stop(run->ctx);
        log_msg(LOG_DEBUG, "stopped: %s", run->table[i].name);
    }
}
