/* ratelimit.h — request rate limits (docs/operations.md#rate-limits): token buckets per
 * client address, per principal and for authentication failures per address, held in two
 * fixed-size tables (addresses; principals) of striped, mutex-guarded sets. Memory is
 * bounded by the table sizes: a new key takes an idle slot of its set, else the least
 * recently used one. The bucket arithmetic is common/tbucket.c. */
#ifndef GPUFLEET_RATELIMIT_H
#define GPUFLEET_RATELIMIT_H

#include "api/config.h"
#include "api/http.h"

struct sbuf;

/* What a bucket is charged for; each has its policy, its RateLimit-Policy name. */
enum api_rl_class {
    RL_ADDRESS = 0,  /* every request, by client address (IPv4, IPv6 /64) */
    RL_PROBE,        /* /healthz, /readyz, /metrics by client address: their own bucket */
    RL_PRINCIPAL,    /* every authenticated request, by token subject */
    RL_REPORTER,     /* the same for a principal whose only role is reporter */
    RL_AUTH_FAILURE, /* each 401, by client address */
    RL__COUNT
};

/* Sets the policies and allocates the tables (cfg->rate_limit 0: every check passes).
 * Returns 0, or -1 with a reason. */
int api_rl_configure(const struct api_config *cfg, char *err, size_t errlen);
void api_rl_shutdown(void);

/* Charges the request's bucket of class c (the address classes key on the client's
 * address, the principal classes on r->principal.sub). Returns 0 when allowed (and
 * remembers the verdict for the RateLimit headers: r->rl_policy, r->rl_name,
 * r->rl_verdict), or -1 after queueing 429 (api_queue adds Retry-After). */
int api_rl_check(struct api_req *r, enum api_rl_class c);
/* Charges the address's authentication-failure bucket for a 401 about to be sent.
 * Returns 0 (send the 401), or -1 after queueing 429 instead. */
int api_rl_auth_failure(struct api_req *r);
/* The same for a 401 already queued: charges, never replies. */
void api_rl_charge_auth_failure(struct api_req *r);
/* gpufleet_rate_limited_total{policy} and gpufleet_rate_limit_evictions_total. */
void api_rl_metrics(struct sbuf *b);

#endif
