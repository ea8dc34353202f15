/* tokens.h — POST /v1/tokens/revoke (platform admin): puts a token (by jti), or every token
 * of a subject issued up to now, on the revocation list (service/tokens.h). */
#ifndef GPUFLEET_API_TOKENS_H
#define GPUFLEET_API_TOKENS_H

#include "api/http.h"

/* The longest a token gpufleetd mints may live (the larger TTL cap): the least time an
 * entry of a token gpufleetd did not record is kept. */
void api_tokens_configure(long max_ttl_s);
enum MHD_Result api_tokens_revoke(struct api_req *r);

#endif
