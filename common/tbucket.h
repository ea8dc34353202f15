/* tbucket.h — token-bucket arithmetic (pure: the caller passes the monotonic time and
 * keeps the state). Tokens are counted in millionths so that any whole rate per second
 * refills exactly per microsecond; no floating point. */
#ifndef GPUFLEET_TBUCKET_H
#define GPUFLEET_TBUCKET_H

#include <stdint.h>

#define TB_UNIT 1000000LL /* one token, in millionths */

/* A policy: `rate` tokens per `per_s` seconds sustained (per_s 1: per second, 60: per
 * minute), at most `burst` held. rate 0 means the policy does not limit. */
struct tb_policy {
    int64_t rate;
    int64_t per_s;
    int64_t burst;
};

/* One bucket. A zeroed state is a bucket never used: it starts full. */
struct tb_state {
    int64_t tokens;  /* millionths of a token held at `last_us` */
    int64_t last_us; /* when `tokens` was computed (0: never) */
};

struct tb_verdict {
    int allowed;       /* 1: a token was taken */
    int64_t remaining; /* whole tokens left after this request */
    int64_t retry_s;   /* seconds until one token is there again (0 when one is) */
    int64_t reset_s;   /* seconds until more quota arrives (0 when the bucket is full) */
};

/* Takes one token at now_us when there is one (the state is then updated); a refused
 * request takes nothing. A clock that goes backwards is taken as no time passing. */
struct tb_verdict tb_take(struct tb_state *s, const struct tb_policy *p, int64_t now_us);
/* The bucket as it would be at now_us, without taking anything. */
struct tb_verdict tb_peek(const struct tb_state *s, const struct tb_policy *p, int64_t now_us);
/* Seconds after which an untouched bucket is full again: the "w" of the RateLimit-Policy
 * header (burst / rate, rounded up, at least 1). */
int64_t tb_window_s(const struct tb_policy *p);
/* True when the bucket, last used at last_us, is full at now_us (it can be forgotten: a
 * fresh one is the same). */
int tb_idle(const struct tb_state *s, const struct tb_policy *p, int64_t now_us);

#endif
