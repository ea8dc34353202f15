/* server.h — the libmicrohttpd daemon: start, stop. */
#ifndef GPUFLEET_SERVER_H
#define GPUFLEET_SERVER_H

#include "api/auth.h"
#include "api/config.h"

/* Starts listening per cfg. auth is borrowed for the daemon's lifetime. Returns 0. */
int api_server_start(const struct api_config *cfg, const struct api_auth *auth, char *err,
                     size_t errlen);
void api_server_stop(void);

#endif
