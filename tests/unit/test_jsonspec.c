/* test_jsonspec.c — declarative body validation names the failing field, and the same
 * call fills typed fields. */
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
    {"x", SPEC_NUMBER, SPEC_NULLABLE, 0, 10, NULL, NULL, NULL, NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 8, lower, "lowercase letters", NULL, NULL, SPEC_NONE},
    {"count", SPEC_INTEGER, 0, 1, 100, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"ratio", SPEC_NUMBER, SPEC_EXCLUSIVE_MIN, 0, 1, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"on", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"colour", SPEC_ENUM, 0, 0, 0, NULL, NULL, colours, NULL, SPEC_NONE},
    {"colours", SPEC_ENUM_ARRAY, 0, 1, 2, NULL, NULL, colours, NULL, SPEC_NONE},
    {"inner", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, inner, SPEC_NONE},
    SPEC_END,
};

static int run(const char *json, struct spec_error *err)
{
    json_t *j = json_loads(json, 0, NULL);
    int rc = spec_parse(j, spec, NULL, err);
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

/* ---- extraction ---- */

struct out {
    const char *name, *colour, *raw_text;
    json_int_t count;
    double ratio, x, as_double;
    int on, has_ratio, has_x;
    const json_t *colours, *items, *raw;
};
#define TO(m) SPEC_TO(struct out, m)
static const struct spec_field out_inner[] = {
    {"x", SPEC_NUMBER, SPEC_NULLABLE, 0, 10, NULL, NULL, NULL, NULL,
     SPEC_TO_SEEN(struct out, x, has_x)},
    {"n", SPEC_INTEGER, 0, 0, 10, NULL, NULL, NULL, NULL, TO(as_double)},
    SPEC_END,
};
static const struct spec_field out_item[] = {
    /* items are validated only: this destination is never written */
    {"", SPEC_STRING, 0, 1, 8, NULL, NULL, NULL, NULL, TO(name)},
};
static const struct spec_field out_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 8, lower, "lowercase letters", NULL, NULL, TO(name)},
    {"count", SPEC_INTEGER, 0, 1, 100, NULL, NULL, NULL, NULL, TO(count)},
    {"ratio", SPEC_NUMBER, SPEC_NULLABLE, 0, 1, NULL, NULL, NULL, NULL,
     SPEC_TO_SEEN(struct out, ratio, has_ratio)},
    {"on", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, TO(on)},
    {"colour", SPEC_ENUM, 0, 0, 0, NULL, NULL, colours, NULL, TO(colour)},
    {"colours", SPEC_ENUM_ARRAY, 0, 1, 2, NULL, NULL, colours, NULL, TO(colours)},
    {"inner", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, out_inner, SPEC_NONE},
    {"items", SPEC_ARRAY, 0, 0, 4, NULL, NULL, NULL, out_item, TO(items)},
    {"raw", SPEC_STRING, SPEC_RAW, 0, 0, NULL, NULL, NULL, NULL, TO(raw)},
    SPEC_END,
};

static void fills_typed_fields(void)
{
    json_t *j = json_loads("{\"name\":\"abc\",\"count\":7,\"ratio\":0.25,\"on\":true,"
                           "\"colour\":\"green\",\"colours\":[\"red\"],\"inner\":{\"x\":2.5,"
                           "\"n\":3},\"items\":[\"zz\"],\"raw\":\"a\\nb\"}",
                           0, NULL);
    struct out o = {.count = -1};
    struct spec_error e;
    CHECK(j != NULL && spec_parse(j, out_spec, &o, &e) == 0);
    CHECK_STR(o.name, "abc"); /* borrowed: the body's own string */
    CHECK(o.name == json_string_value(json_object_get(j, "name")));
    CHECK(o.count == 7);
    CHECK(o.ratio == 0.25 && o.has_ratio == 1);
    CHECK(o.on == 1);
    CHECK_STR(o.colour, "green");
    CHECK(o.colours == json_object_get(j, "colours"));
    CHECK(o.x == 2.5 && o.has_x == 1); /* a nested object fills the same struct */
    CHECK(o.as_double == 3.0);         /* an integer into a double */
    CHECK(o.items == json_object_get(j, "items"));
    CHECK_STR(json_string_value(o.raw), "a\nb"); /* raw: newlines pass, the caller checks */
    json_decref(j);
}

static void absent_and_null_keep_defaults(void)
{
    json_t *j = json_loads("{\"name\":\"abc\",\"ratio\":null,\"inner\":{\"x\":null}}", 0, NULL);
    struct out o = {.count = 22, .ratio = 0.5, .x = 9, .on = 0};
    struct spec_error e;
    CHECK(j != NULL && spec_parse(j, out_spec, &o, &e) == 0);
    CHECK(o.count == 22);                      /* absent: the caller's default */
    CHECK(o.ratio == 0.5 && o.has_ratio == 0); /* null: no value */
    CHECK(o.x == 9 && o.has_x == 0);
    CHECK(o.colour == NULL && o.colours == NULL && o.raw == NULL && o.on == 0);
    json_decref(j);
}

static void extraction_keeps_the_errors(void)
{
    struct out o = {0};
    struct spec_error e;
    json_t *j = json_loads("{\"name\":\"abc\",\"raw\":5}", 0, NULL);
    CHECK(spec_parse(j, out_spec, &o, &e) != 0 && e.code == API_ERR_INVALID_FIELD);
    CHECK_STR(e.field, "raw");
    CHECK_STR(e.detail, "raw must be a string");
    json_decref(j);
    j = json_loads("{\"name\":\"abc\",\"items\":[\"\"]}", 0, NULL);
    CHECK(spec_parse(j, out_spec, &o, &e) != 0);
    CHECK_STR(e.field, "items[0]");
    json_decref(j);
    j = json_loads("{\"name\":\"abc\",\"items\":[null]}", 0, NULL);
    CHECK(spec_parse(j, out_spec, &o, &e) != 0);
    CHECK_STR(e.detail, "items[0] must not be null");
    json_decref(j);
    j = json_loads("{\"name\":\"abc\",\"inner\":{\"n\":1.5}}", 0, NULL);
    CHECK(spec_parse(j, out_spec, &o, &e) != 0);
    CHECK_STR(e.field, "inner.n");
    CHECK_STR(e.detail, "inner.n must be a whole number");
    json_decref(j);
}

UNIT_SUITE(jsonspec_tests) = {
    {"jsonspec: accepts valid bodies", accepts_valid},
    {"jsonspec: missing/unknown/invalid strings name the field", names_the_field},
    {"jsonspec: numbers, ranges, enums, arrays, nested paths", numbers_and_enums},
    {"jsonspec: one parse call fills typed, borrowed fields", fills_typed_fields},
    {"jsonspec: absent and null members keep the caller's defaults", absent_and_null_keep_defaults},
    {"jsonspec: extraction answers the same errors", extraction_keeps_the_errors},
    UNIT_END,
};
