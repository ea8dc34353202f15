/* test_health.c — the health read API's pure parts: GPU UUIDs and the samples plan (range,
 * grain, point bound), against hand-computed values. */
#include <stdint.h>
#include <string.h>

#include "api/health.h"
#include "common/util.h"
#include "tests/unit/unit.h"

static void gpu_uuids(void)
{
    CHECK(api_valid_gpu_uuid("GPU-566e6f65-c38e-b12f-4824-6944218668b9"));
    CHECK(api_valid_gpu_uuid("GPU-00000000-0000-0000-0000-000000000000"));
    CHECK(api_valid_gpu_uuid("GPU-ABCD"));
    CHECK(!api_valid_gpu_uuid("GPU-"));
    CHECK(!api_valid_gpu_uuid("GPU-abc"));
    CHECK(!api_valid_gpu_uuid("MIG-566e6f65-c38e-b12f-4824-6944218668b9"));
    CHECK(!api_valid_gpu_uuid("gpu-566e6f65"));
    CHECK(!api_valid_gpu_uuid("GPU-566e6f65'; DROP TABLE gpus; --"));
    CHECK(!api_valid_gpu_uuid("GPU-566e6f65 c38e"));
    char longer[81];
    memset(longer, 'a', sizeof longer - 1);
    memcpy(longer, "GPU-", 4);
    longer[80] = '\0';
    CHECK(!api_valid_gpu_uuid(longer)); /* 80 characters: one too many */
    longer[79] = '\0';
    CHECK(api_valid_gpu_uuid(longer));
}

#define H 3600LL * 1000000

/* now: 2026-12-01T18:07:30Z */
static int64_t now_us(void)
{
    int64_t t;
    util_parse_rfc3339("2026-12-01T18:07:30Z", &t);
    return t;
}

static void plan_defaults_and_auto(void)
{
    struct api_samples_plan p;
    const char *field = NULL;
    char d[256];
    int64_t now = now_us();
    CHECK(api_samples_plan(NULL, NULL, NULL, now, &p, &field, d, sizeof d) == 0);
    CHECK(p.to_us == now && p.from_us == now - H);
    CHECK(p.grain == DB_GRAIN_RAW && p.points == 360); /* 1 h at one point per 10 s */
    /* 2 h is 720 raw points: still raw; a second more is 5m */
    CHECK(api_samples_plan("2026-12-01T16:00:00Z", "2026-12-01T18:00:00Z", "auto", now, &p, &field,
                           d, sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_RAW && p.points == 720);
    CHECK(api_samples_plan("2026-12-01T15:59:59Z", "2026-12-01T18:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_5M && p.points == 25); /* 15:55 .. 18:00 */
    /* one day: 288 buckets of 5 min (aligned), 289 when from is not aligned */
    CHECK(api_samples_plan("2026-11-30T18:00:00Z", "2026-12-01T18:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_5M && p.points == 288);
    CHECK(api_samples_plan("2026-11-30T18:01:00Z", "2026-12-01T18:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.points == 288);
    CHECK(api_samples_plan("2026-11-30T18:01:00Z", "2026-12-01T18:01:00Z", NULL, now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.points == 289);
    /* 30 days: 720 buckets of 1 h; 30 days and an hour: refused, naming from */
    CHECK(api_samples_plan("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_1H && p.points == 720);
    CHECK(api_samples_plan("2026-10-31T23:00:00Z", "2026-12-01T00:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == -1);
    CHECK_STR(field, "from");
    /* only to: from is an hour before it; only from: to is now */
    CHECK(api_samples_plan(NULL, "2026-12-01T12:00:00+02:00", NULL, now, &p, &field, d, sizeof d) ==
          0);
    CHECK(p.to_us - p.from_us == H);
    char s[40];
    util_rfc3339(p.to_us, s, sizeof s);
    CHECK_STR(s, "2026-12-01T10:00:00.000000Z");
    CHECK(api_samples_plan("2026-12-01T17:07:30Z", NULL, NULL, now, &p, &field, d, sizeof d) == 0);
    CHECK(p.to_us == now && p.points == 360);
}

static void plan_explicit_and_refusals(void)
{
    struct api_samples_plan p;
    const char *field = NULL;
    char d[256];
    int64_t now = now_us();
    CHECK(api_samples_plan("2026-12-01T17:00:00Z", "2026-12-01T18:00:00Z", "1h", now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_1H && p.points == 1);
    CHECK(api_samples_plan("2026-12-01T17:02:00Z", "2026-12-01T18:00:00Z", "5m", now, &p, &field, d,
                           sizeof d) == 0);
    CHECK(p.grain == DB_GRAIN_5M && p.points == 12); /* 17:00 .. 17:55 */
    /* raw over a day: 8640 points, refused naming step */
    CHECK(api_samples_plan("2026-11-30T18:00:00Z", "2026-12-01T18:00:00Z", "raw", now, &p, &field,
                           d, sizeof d) == -1);
    CHECK_STR(field, "step");
    CHECK(strstr(d, "8640") != NULL);
    /* 5m over 3 days: 864 */
    CHECK(api_samples_plan("2026-11-28T18:00:00Z", "2026-12-01T18:00:00Z", "5m", now, &p, &field, d,
                           sizeof d) == -1);
    CHECK_STR(field, "step");
    CHECK(api_samples_plan(NULL, NULL, "10m", now, &p, &field, d, sizeof d) == -1);
    CHECK_STR(field, "step");
    CHECK(api_samples_plan("2026-12-01T18:00:00Z", "2026-12-01T17:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == -1);
    CHECK_STR(field, "from");
    CHECK(api_samples_plan("2026-12-01T18:00:00Z", "2026-12-01T18:00:00Z", NULL, now, &p, &field, d,
                           sizeof d) == -1);
    CHECK_STR(field, "from");
    CHECK(api_samples_plan("yesterday", NULL, NULL, now, &p, &field, d, sizeof d) == -1);
    CHECK_STR(field, "from");
    CHECK(api_samples_plan(NULL, "2026-13-01T00:00:00Z", NULL, now, &p, &field, d, sizeof d) == -1);
    CHECK_STR(field, "to");
}

UNIT_SUITE(health_tests) = {
    {"health: GPU UUIDs as nvidia-smi prints them", gpu_uuids},
    {"health: samples plan, defaults and the auto grain", plan_defaults_and_auto},
    {"health: samples plan, explicit steps and refusals", plan_explicit_and_refusals},
    UNIT_END,
};
