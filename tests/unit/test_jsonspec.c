/* test_jsonspec.c — declarative body validation names the failing field. */
#include <stdlib.h>

#include "api/jsonspec.h"
#include "tests/unit/unit.h"

static int lower(const char *s)
{
    for (; *s; s++)
        if (*s < 'a' || *s > 'z')
            return 0;
    return 1;
}

static const char *const colours[] = {"red", "green", NULL};
static const struct spec_field inner[] = {
    {"x", SPEC_NUMBER, SPEC_NULLABLE, 0, 10, NULL, NULL, NULL, NULL},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
static const struct spec_field spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 8, lower, "lowercase letters", NULL, NULL},
    {"count", SPEC_INTEGER, 0, 1, 100, NULL, NULL, NULL, NULL},
    {"ratio", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 1, NULL, NULL, NULL, NULL},
    {"on", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL},
    {"colour", SPEC_ENUM, 0, 0, 0, NULL, NULL, colours, NULL},
    {"colours", SPEC_ENUM_ARRAY, 0, 1, 2, NULL, NULL, colours, NULL},
    {"inner", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, inner},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

static int run(const char *json, struct spec_error *err)
{
    json_t *j = json_loads(json, 0, NULL);
    int rc = spec_check(j, spec, err);
    json_decref(j);
    return rc;
}

static void accepts_valid(void)
{
    struct spec_error e;
    CHECK(run("{\"name\":\"abc\"}", &e) == 0);
    CHECK(run("{\"name\":\"abc\",\"count\":100,\"ratio\":1,\"on\":false,\"colour\":\"red\","
              "\"colours\":[\"red\",\"green\"],\"inner\":{\"x\":null}}",
              &e) == 0);
}

static void names_the_field(void)
{
    struct spec_error e;
    CHECK(run("{}", &e) != 0 && e.code == API_ERR_MISSING_FIELD);
    CHECK_STR(e.field, "name");
    CHECK(run("{\"name\":\"abc\",\"bogus\":1}", &e) != 0 && e.code == API_ERR_UNKNOWN_FIELD);
    CHECK_STR(e.field, "bogus");
    CHECK(run("{\"name\":\"ABC\"}", &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK(strstr(e.detail, "lowercase letters") != NULL);
    CHECK(run("{\"name\":\"abcdefghi\"}", &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK(run("{\"name\":\"\"}", &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK(run("{\"name\":5}", &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK(run("{\"name\":null}", &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK(run("{\"name\":\"a\\nb\"}", &e) != 0); /* control character */
}

static void numbers_and_enums(void)
{
    struct spec_error e;
    CHECK(run("{\"name\":\"a\",\"count\":1.5}", &e) != 0);
    CHECK_STR(e.field, "count");
    CHECK(run("{\"name\":\"a\",\"count\":0}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"count\":101}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"ratio\":0}", &e) != 0); /* exclusive minimum */
    CHECK(run("{\"name\":\"a\",\"ratio\":\"0.5\"}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"on\":1}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"colour\":\"blue\"}", &e) != 0);
    CHECK(strstr(e.detail, "red, green") != NULL);
    CHECK(run("{\"name\":\"a\",\"colours\":[]}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"colours\":[\"red\",\"red\"]}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"colours\":\"red\"}", &e) != 0);
    CHECK(run("{\"name\":\"a\",\"inner\":{\"x\":11}}", &e) != 0);
    CHECK_STR(e.field, "inner.x");
    CHECK(run("{\"name\":\"a\",\"inner\":{\"y\":1}}", &e) != 0 && e.code == API_ERR_UNKNOWN_FIELD);
    CHECK_STR(e.field, "inner.y");
    CHECK(run("{\"name\":\"a\",\"inner\":[]}", &e) != 0);
}

UNIT_SUITE(jsonspec_tests) = {
    {"jsonspec: accepts valid bodies", accepts_valid},
    {"jsonspec: missing/unknown/invalid strings name the field", names_the_field},
    {"jsonspec: numbers, ranges, enums, arrays, nested paths", numbers_and_enums},
    UNIT_END,
};
