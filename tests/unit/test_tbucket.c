/* test_tbucket.c — common/tbucket.c against hand-computed values: a burst, the refill, the
 * retry and reset seconds, a per-minute policy, a clock that goes backwards, the window. */
#include "common/tbucket.h"
#include "tests/unit/unit.h"

#define S 1000000LL /* one second in µs */

/* 10 per second, burst 3: three pass at once, the fourth waits 0.1 s (Retry-After 1). */
static void test_burst_then_refused(void)
{
    struct tb_policy p = {10, 1, 3};
    struct tb_state s = {0, 0};
    int64_t t = 1000 * S;
    struct tb_verdict v = tb_take(&s, &p, t);
    CHECK(v.allowed && v.remaining == 2 && v.retry_s == 0 && v.reset_s == 1);
    CHECK(tb_take(&s, &p, t).remaining == 1);
    v = tb_take(&s, &p, t);
    CHECK(v.allowed && v.remaining == 0 && v.retry_s == 1);
    v = tb_take(&s, &p, t);
    CHECK(!v.allowed && v.remaining == 0 && v.retry_s == 1);
    /* A refusal takes nothing: 0.1 s later exactly one token is back. */
    v = tb_take(&s, &p, t + S / 10);
    CHECK(v.allowed && v.remaining == 0);
    CHECK(!tb_take(&s, &p, t + S / 10).allowed);
    /* 0.05 s is half a token: still refused. */
    CHECK(!tb_take(&s, &p, t + S / 10 + S / 20).allowed);
}

/* The bucket never holds more than the burst, however long it rests. */
static void test_refill_capped(void)
{
    struct tb_policy p = {5, 1, 4};
    struct tb_state s = {0, 0};
    int64_t t = 50 * S;
    for (int i = 0; i < 4; i++)
        CHECK(tb_take(&s, &p, t).allowed);
    CHECK(!tb_take(&s, &p, t).allowed);
    CHECK(!tb_idle(&s, &p, t));
    struct tb_verdict v = tb_peek(&s, &p, t + 3600 * S);
    CHECK(v.remaining == 4 && v.reset_s == 0);
    CHECK(tb_idle(&s, &p, t + 3600 * S));
    /* 4 tokens at 5/s take 0.8 s: idle then, not before. */
    CHECK(!tb_idle(&s, &p, t + 799999));
    CHECK(tb_idle(&s, &p, t + 800000));
    for (int i = 0; i < 4; i++)
        CHECK(tb_take(&s, &p, t + 3600 * S).allowed);
    CHECK(!tb_take(&s, &p, t + 3600 * S).allowed);
}

/* 30 per minute, burst 2: a token every 2 s; after two, Retry-After is 2. */
static void test_per_minute(void)
{
    struct tb_policy p = {30, 60, 2};
    struct tb_state s = {0, 0};
    int64_t t = 7 * S;
    CHECK(tb_take(&s, &p, t).allowed);
    CHECK(tb_take(&s, &p, t).allowed);
    struct tb_verdict v = tb_take(&s, &p, t);
    CHECK(!v.allowed && v.retry_s == 2 && v.reset_s == 2);
    v = tb_take(&s, &p, t + S);
    CHECK(!v.allowed && v.retry_s == 1);
    CHECK(tb_take(&s, &p, t + 2 * S).allowed);
    CHECK(tb_window_s(&p) == 4);
}

/* A clock that steps back gives nothing back and does not wrap. */
static void test_clock_backwards(void)
{
    struct tb_policy p = {1, 1, 1};
    struct tb_state s = {0, 0};
    CHECK(tb_take(&s, &p, 100 * S).allowed);
    CHECK(!tb_take(&s, &p, 50 * S).allowed);
    CHECK(!tb_take(&s, &p, 100 * S + S / 2).allowed);
    CHECK(tb_take(&s, &p, 101 * S).allowed);
}

/* rate 0: the policy does not limit. Large values do not overflow. */
static void test_off_and_large(void)
{
    struct tb_policy off = {0, 1, 5};
    struct tb_state s = {0, 0};
    for (int i = 0; i < 1000; i++)
        CHECK(tb_take(&s, &off, S).allowed);
    struct tb_policy big = {1000000, 1, 1000000};
    struct tb_state b = {0, 0};
    CHECK(tb_take(&b, &big, S).remaining == 999999);
    /* Ten years idle: full again, no overflow. */
    CHECK(tb_peek(&b, &big, S + 3650LL * 86400 * S).remaining == 1000000);
    CHECK(tb_window_s(&big) == 1);
    struct tb_policy slow = {1, 3600, 1000000};
    struct tb_state w = {0, 0};
    CHECK(tb_take(&w, &slow, S).allowed);
    CHECK(tb_peek(&w, &slow, S + 3600 * S).remaining == 1000000);
    CHECK(tb_window_s(&slow) == 3600000000LL);
}

UNIT_SUITE(tbucket_tests) = {
    {"tbucket: a burst passes, the next waits, a refusal takes nothing", test_burst_then_refused},
    {"tbucket: the refill is capped at the burst", test_refill_capped},
    {"tbucket: a per-minute policy", test_per_minute},
    {"tbucket: a clock that goes backwards", test_clock_backwards},
    {"tbucket: rate 0 is off; large values do not overflow", test_off_and_large},
    UNIT_END,
};
