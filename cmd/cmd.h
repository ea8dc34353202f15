/* cmd.h — what gpufleetd's subcommands share (cmd.c), and the subcommands that have a file
 * of their own. cmd/main.c dispatches; serve and worker (cmd/serve.c) start the components
 * of cmd/components.h; token is cmd/token.c. */
#ifndef GPUFLEET_CMD_H
#define GPUFLEET_CMD_H

#include <stdio.h>

/* Prints the usage; returns the exit status for it (2 on stderr, 0 on stdout). */
int cmd_usage(FILE *out);
/* Prints "gpufleetd WHAT: REASON" on stderr; returns 1. */
int cmd_fatal(const char *what, const char *reason);
/* The process environment (getenv), as config_load takes it. */
const char *cmd_env(const char *name);

/* gpufleetd serve|worker [--migrate] */
int cmd_serve(int argc, char **argv);
/* gpufleetd token --sub NAME --role ROLE ... */
int cmd_token(int argc, char **argv);

#endif
