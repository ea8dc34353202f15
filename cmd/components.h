/* components.h — the composition root's runner. A process of gpufleetd is a table of
 * components {name, wanted, start, stop} (cmd/serve.c): the HTTP server, the event hub, the
 * webhook dispatcher, the job workers, the recovery and rollout drivers, the idle policy,
 * and what they stand on (the token verifier, the master key, the database pool). They
 * start in table order and stop in reverse: at shutdown, and when one fails to start (the
 * ones already started stop, in reverse; nothing after it starts). */
#ifndef GPUFLEET_CMD_COMPONENTS_H
#define GPUFLEET_CMD_COMPONENTS_H

#include <stddef.h>

#define CMD_MAX_COMPONENTS 32

struct cmd_component {
    const char *name;
    /* Whether it runs in this process (its role, its configuration); NULL: always. */
    int (*wanted)(const void *ctx);
    /* 0, or -1 with a one-line reason in err; NULL: nothing to start (only a stop). */
    int (*start)(void *ctx, char *err, size_t errlen);
    /* Undoes start; NULL: nothing to undo. */
    void (*stop)(void *ctx);
};

struct cmd_run {
    const struct cmd_component *table;
    size_t n; /* at most CMD_MAX_COMPONENTS */
    void *ctx;
    unsigned char started[CMD_MAX_COMPONENTS];
};

/* Starts the wanted components of run->table in order. Returns 0; or -1 when one fails,
 * after stopping those started (in reverse), with its reason in err and *failed set to
 * its name. */
int cmd_components_start(struct cmd_run *run, const char **failed, char *err, size_t errlen);
/* Stops the started components in reverse order. */
void cmd_components_stop(struct cmd_run *run);

#endif
