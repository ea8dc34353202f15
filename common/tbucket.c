/* tbucket.c — token-bucket arithmetic in millionths of a token (tbucket.h). */
#include "common/tbucket.h"

/* Millionths of a token refilled per microsecond is rate / per_s; refill over d µs is
 * d * rate / per_s. d is capped at the time a bucket takes to fill so that nothing
 * overflows (burst ≤ 1e9 tokens, rate ≤ 1e9). */
static int64_t level_at(const struct tb_state *s, const struct tb_policy *p, int64_t now_us)
{
    int64_t cap = p->burst * TB_UNIT;
    if (s->last_us == 0)
        return cap;
    int64_t d = now_us - s->last_us;
    if (d <= 0)
        return s->tokens;
    int64_t full_us = (cap - s->tokens) * p->per_s / p->rate + 1;
    if (d >= full_us)
        return cap;
    int64_t t = s->tokens + d * p->rate / p->per_s;
    return t > cap ? cap : t;
}

/* Microseconds until the level reaches want millionths (0 when it has). */
static int64_t us_until(int64_t level, int64_t want, const struct tb_policy *p)
{
    if (level >= want)
        return 0;
    int64_t need = want - level;
    return (need * p->per_s + p->rate - 1) / p->rate;
}

static int64_t ceil_s(int64_t us)
{
    return (us + 999999) / 1000000;
}

static struct tb_verdict verdict(int64_t level, int allowed, const struct tb_policy *p)
{
    struct tb_verdict v = {allowed, level / TB_UNIT, 0, 0};
    v.retry_s = ceil_s(us_until(level, TB_UNIT, p));
    /* Quota arrives continuously; "reset" is when the next whole token is there. */
    int64_t cap = p->burst * TB_UNIT;
    if (level < cap) {
        int64_t next = (level / TB_UNIT + 1) * TB_UNIT;
        v.reset_s = ceil_s(us_until(level, next > cap ? cap : next, p));
    }
    return v;
}

struct tb_verdict tb_peek(const struct tb_state *s, const struct tb_policy *p, int64_t now_us)
{
    if (p->rate <= 0)
        return (struct tb_verdict){1, p->burst, 0, 0};
    return verdict(level_at(s, p, now_us), 1, p);
}

struct tb_verdict tb_take(struct tb_state *s, const struct tb_policy *p, int64_t now_us)
{
    if (p->rate <= 0)
        return (struct tb_verdict){1, p->burst, 0, 0};
    int64_t level = level_at(s, p, now_us);
    if (level < TB_UNIT)
        return verdict(level, 0, p);
    level -= TB_UNIT;
    s->tokens = level;
    if (now_us > s->last_us || s->last_us == 0)
        s->last_us = now_us;
    return verdict(level, 1, p);
}

int64_t tb_window_s(const struct tb_policy *p)
{
    if (p->rate <= 0)
        return 1;
    int64_t w = (p->burst * p->per_s + p->rate - 1) / p->rate;
    return w < 1 ? 1 : w;
}

int tb_idle(const struct tb_state *s, const struct tb_policy *p, int64_t now_us)
{
    return p->rate <= 0 || s->last_us == 0 || level_at(s, p, now_us) >= p->burst * TB_UNIT;
}
