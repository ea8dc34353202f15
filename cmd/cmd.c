/* cmd.c — see cmd.h. */
#include "cmd/cmd.h"

#include <stdlib.h>

int cmd_usage(FILE *out)
{
    fprintf(out,
            "usage: gpufleetd COMMAND\n"
            "  serve [--migrate]      run the API (configuration from GPUFLEET_* variables)\n"
            "  worker [--migrate]     run job workers only (no API)\n"
            "  migrate                apply pending database migrations\n"
            "  token --sub NAME --role viewer|operator|admin|reporter [--ttl 15m]\n"
            "        [--project NAME]   the role in that project (without: an admin is a\n"
            "                         platform admin, other roles act on project default)\n"
            "        [--pool NAME_OR_ID]... [--host NAME_OR_ID]...   (reporter scope)\n"
            "        [--private-key-file EC_P256.pem]   print a signed JWT (HS256 with\n"
            "                         GPUFLEET_JWT_SECRET_FILE, or ES256 with the key file)\n"
            "  keygen PATH            write a new random secret file (mode 0600)\n"
            "  routes                 print the route table (METHOD PATH HANDLER FILE)\n"
            "  sql NAME               print the SQL of a prepared statement (for EXPLAIN)\n"
            "  state-machine [--sql]  print the host state machine (Markdown, or the SQL rows\n"
            "                         that migrations/0012 loads)\n"
            "  version                print the version\n");
    return out == stderr ? 2 : 0;
}

int cmd_fatal(const char *what, const char *reason)
{
    fprintf(stderr, "gpufleetd %s: %s\n", what, reason);
    return 1;
}

const char *cmd_env(const char *name)
{
    return getenv(name);
}
