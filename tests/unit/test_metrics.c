/* test_metrics.c — /metrics label values: the exposition format's escapes and UTF-8
 * cleaning, against hand-written expected bytes. */
#include <stdlib.h>
#include <string.h>

#include "api/metrics.h"
#include "common/sbuf.h"
#include "tests/unit/unit.h"

/* The label value of v, as api_metrics_label_value writes it (caller frees). */
static char *escaped(const char *v)
{
    struct sbuf b;
    sbuf_init(&b, 16);
    api_metrics_label_value(&b, v);
    size_t len;
    return sbuf_take(&b, &len);
}

static int escapes_to(const char *v, const char *want)
{
    char *got = escaped(v);
    int ok = got != NULL && strcmp(got, want) == 0;
    free(got);
    return ok;
}

static void label_escapes(void)
{
    CHECK(escapes_to("node-01.dc1", "node-01.dc1"));
    CHECK(escapes_to("", ""));
    CHECK(escapes_to(NULL, ""));
    CHECK(escapes_to("a\"b", "a\\\"b"));
    CHECK(escapes_to("a\\b", "a\\\\b"));
    CHECK(escapes_to("two\nlines", "two\\nlines"));
    CHECK(escapes_to("\\\"\n", "\\\\\\\"\\n"));
    CHECK(escapes_to("gpu \"prod\" \\ east", "gpu \\\"prod\\\" \\\\ east"));
    /* Other characters pass as they are: the format escapes only these three. */
    CHECK(escapes_to("tab\there\r", "tab\there\r"));
    CHECK(escapes_to("\xc3\xbc \xe2\x80\x93", "\xc3\xbc \xe2\x80\x93")); /* "ü –" */
}

static void label_utf8(void)
{
    /* Ill-formed bytes become U+FFFD (EF BF BD): the output stays valid UTF-8. */
    CHECK(escapes_to("a\xff"
                     "b",
                     "a\xef\xbf\xbd"
                     "b"));
    CHECK(escapes_to("\xc0\xaf\"", "\xef\xbf\xbd\xef\xbf\xbd\\\""));
    CHECK(escapes_to("cut \xe2\x82", "cut \xef\xbf\xbd"));
}

static void label_bounded(void)
{
    /* A value longer than any name the database allows is cut at a character boundary
     * below 1024 bytes, never mid-character, and still escaped. */
    char v[3001];
    for (size_t i = 0; i < 1000; i++)
        memcpy(v + 3 * i, "\xe2\x80\x93", 3);
    v[3000] = '\0';
    char *got = escaped(v);
    CHECK(got != NULL);
    size_t n = strlen(got);
    int whole = n > 0 && n < 1024 && n % 3 == 0;
    free(got);
    CHECK(whole);
}

UNIT_SUITE(metrics_tests) = {
    {"metrics: label values escape backslash, quote, newline", label_escapes},
    {"metrics: label values are valid UTF-8", label_utf8},
    {"metrics: label values are bounded at a character boundary", label_bounded},
    UNIT_END,
};
