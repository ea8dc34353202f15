/* tokens.h — the tokens gpufleetd mints (their jti recorded) and the revocation list,
 * held in memory by every process that verifies tokens.
 *
 * Every request's token is checked against the list in memory (no query per request).
 * The list is reloaded from PostgreSQL when its version moves: this process reloads at
 * once after a revocation it made; every process polls the version every refresh_s
 * (GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS), so a revocation made by another replica
 * takes effect everywhere within that bound. The same thread prunes expired tokens and
 * revocations from the tables. Fail closed: until the list has been loaded once, every
 * check answers "unknown" (the request is refused with 503). */
#ifndef GPUFLEET_SERVICE_TOKENS_H
#define GPUFLEET_SERVICE_TOKENS_H

#include <stdint.h>

#include "db/db.h"

/* Records a token `gpufleetd token` minted: jti (a UUID), subject, role name, project
 * (NULL: none), issued and expiry times (Unix seconds). */
enum db_status svc_token_record(const char *jti, const char *sub, const char *role,
                                const char *project, int64_t iat, int64_t exp);

/* Loads the list (a failure is logged and retried) and starts the thread that polls its
 * version every refresh_s seconds and prunes. Returns 0, or -1 when the thread cannot
 * start. */
int svc_tokens_start(int refresh_s);
void svc_tokens_stop(void);
/* Reloads the list when its version moved (force: whatever the version). Returns 0, or
 * -1 when PostgreSQL could not be read (the list held stays). */
int svc_tokens_reload(int force);

/* Whether a token is revoked: its jti ("" or NULL: none) is listed, or its subject is and
 * it was issued (iat, Unix seconds; INT64_MIN when the token has no iat) at or before the
 * subject's entry. 1: revoked; 0: not (or no list is kept in this process); -1: the list
 * has not been loaded yet (refuse). */
int svc_token_revoked(const char *jti, const char *sub, int64_t iat);

#endif
