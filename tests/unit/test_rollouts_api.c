/* test_rollouts_api.c — the rollout body's max_unavailable (api/rollouts.h): a whole
 * number of hosts, or a percentage string "N%" with N 1..100 written plainly. */
#include <jansson.h>

#include "api/rollouts.h"
#include "unit.h"

static int parse(json_t *v, int *hosts, int *pct)
{
    int rc = api_rollout_max_unavailable(v, hosts, pct);
    json_decref(v);
    return rc;
}

static void test_hosts(void)
{
    int h, p;
    CHECK(parse(json_integer(1), &h, &p) == 0 && h == 1 && p == 0);
    CHECK(parse(json_integer(5), &h, &p) == 0 && h == 5 && p == 0);
    CHECK(parse(json_integer(1000000), &h, &p) == 0 && h == 1000000 && p == 0);
    CHECK(parse(json_integer(0), &h, &p) == -1);
    CHECK(parse(json_integer(-3), &h, &p) == -1);
    CHECK(parse(json_integer(1000001), &h, &p) == -1);
    CHECK(parse(json_real(2.0), &h, &p) == -1); /* a JSON real is not a whole number here */
    CHECK(parse(json_real(2.5), &h, &p) == -1);
    CHECK(parse(json_true(), &h, &p) == -1);
    CHECK(parse(json_null(), &h, &p) == -1);
    CHECK(parse(json_array(), &h, &p) == -1);
}

static void test_percent(void)
{
    int h, p;
    CHECK(parse(json_string("1%"), &h, &p) == 0 && p == 1 && h == 0);
    CHECK(parse(json_string("25%"), &h, &p) == 0 && p == 25 && h == 0);
    CHECK(parse(json_string("100%"), &h, &p) == 0 && p == 100 && h == 0);
    const char *bad[] = {"0%",  "101%", "05%",  "5", "%",  "25 %", " 25%",  "25%%",
                         "-5%", "+5%",  "1e1%", "",  "x%", "999%", "1000%", "12.5%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(json_string(bad[i]), &h, &p) == -1);
    /* a NUL inside the string is not a percentage */
    CHECK(parse(json_stringn("5%\0", 3), &h, &p) == -1);
}

UNIT_SUITE(rollouts_api_tests) = {
    {"rollouts api: max_unavailable as hosts", test_hosts},
    {"rollouts api: max_unavailable as a percentage", test_percent},
    UNIT_END,
};
