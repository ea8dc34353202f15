/* test_utf8.c — common/utf8.c: what host bytes become before they enter JSON or a log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "tests/unit/unit.h"

static int cleans_to(const char *in, size_t n, const char *want)
{
    char out[64];
    size_t w = utf8_clean(in, n, out, sizeof out);
    return w == strlen(want) && strcmp(out, want) == 0 && utf8_valid(out, w) &&
           utf8_valid(in, n) == (n == strlen(want) && memcmp(in, want, n) == 0);
}

#define FFFD "\xef\xbf\xbd"
static void utf8_rules(void)
{
    CHECK(cleans_to("", 0, ""));
    CHECK(cleans_to("plain", 5, "plain"));
    CHECK(cleans_to("\xc2\x80\xdf\xbf", 4, "\xc2\x80\xdf\xbf"));                 /* 2-byte ends */
    CHECK(cleans_to("\xe0\xa0\x80\xef\xbf\xbf", 6, "\xe0\xa0\x80\xef\xbf\xbf")); /* 3-byte */
    CHECK(cleans_to("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 8, "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));
    CHECK(cleans_to("a\0b", 3, "a" FFFD "b")); /* NUL */
    CHECK(cleans_to("\x80", 1, FFFD));         /* stray continuation */
    CHECK(cleans_to("\xbf\xbf", 2, FFFD FFFD));
    CHECK(cleans_to("\xc0\xaf", 2, FFFD FFFD)); /* overlong 2-byte */
    CHECK(cleans_to("\xc1\xbf", 2, FFFD FFFD));
    CHECK(cleans_to("\xe0\x80\xaf", 3, FFFD FFFD FFFD));          /* overlong 3-byte */
    CHECK(cleans_to("\xf0\x80\x80\xaf", 4, FFFD FFFD FFFD FFFD)); /* overlong 4-byte */
    CHECK(cleans_to("\xed\xa0\x80", 3, FFFD FFFD FFFD));          /* surrogate D800 */
    CHECK(cleans_to("\xed\xbf\xbf", 3, FFFD FFFD FFFD));          /* surrogate DFFF */
    CHECK(cleans_to("\xed\x9f\xbf", 3, "\xed\x9f\xbf"));          /* U+D7FF is fine */
    CHECK(cleans_to("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD)); /* > U+10FFFF */
    CHECK(cleans_to("\xf5\x80", 2, FFFD FFFD));
    CHECK(cleans_to("\xfe\xff", 2, FFFD FFFD));
    CHECK(cleans_to("\xe2\x82", 2, FFFD)); /* truncated: one per maximal subpart */
    CHECK(cleans_to("\xe2\x82x", 3, FFFD "x"));
    CHECK(cleans_to("\xf0\x9f\x98", 3, FFFD));
    CHECK(cleans_to("\xf0\x9f\x98\xc3\xa9", 5, FFFD "\xc3\xa9"));
    CHECK(cleans_to("\xc3", 1, FFFD));
    /* cut at every offset of a multi-byte string: valid, a prefix, never a cut char */
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"; /* a é € 😀 z */
    size_t len = strlen(s);
    static const size_t bounds[] = {0, 1, 3, 6, 10, 11};
    for (size_t cap = 1; cap <= len + 1; cap++) {
        char out[32];
        size_t w = utf8_clean(s, len, out, cap);
        size_t want = 0;
        for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++)
            if (bounds[k] <= cap - 1)
                want = bounds[k];
        CHECK(w == want && out[w] == '\0' && memcmp(out, s, w) == 0 && utf8_valid(out, w));
        /* the source cut at every offset: cleaned, the cut char becomes one U+FFFD */
        char exp[32];
        snprintf(exp, sizeof exp, "%.*s%s", (int)want, s, want < cap - 1 ? FFFD : "");
        w = utf8_clean(s, cap - 1, out, sizeof out);
        CHECK(w == strlen(exp) && strcmp(out, exp) == 0);
        char *d = utf8_dup(s, len, cap - 1), *t = utf8_dup_tail(s, len, cap - 1);
        CHECK(d && t && strlen(d) <= cap - 1 && strlen(t) <= cap - 1);
        CHECK(utf8_valid(d, strlen(d)) && utf8_valid(t, strlen(t)));
        CHECK(strncmp(s, d, strlen(d)) == 0 && strcmp(s + len - strlen(t), t) == 0);
        free(d);
        free(t);
    }
    char out[8];
    CHECK(utf8_clean("abc", 3, out, 0) == 0);
    CHECK(utf8_clean("\x80", 1, out, 3) == 0 && out[0] == '\0'); /* U+FFFD needs 3 bytes */
    CHECK(utf8_clean(NULL, 0, out, sizeof out) == 0 && out[0] == '\0');
    /* the tail when replacements make the text longer than maxbytes */
    char *t = utf8_dup_tail("\xff\xff\xff\xff"
                            "ab",
                            6, 7);
    CHECK_STR(t, FFFD "ab");
    free(t);
    t = utf8_dup_tail(NULL, 0, 10);
    CHECK_STR(t, "");
    free(t);
    char *d = utf8_dup("\xff", 1, (size_t)-1);
    CHECK_STR(d, FFFD);
    free(d);
    char line[8];
    CHECK_STR(utf8_first_line("ab\xc3\xa9\xc3\xa9\r\nnext", line, sizeof line),
              "ab\xc3\xa9\xc3\xa9");
    CHECK_STR(utf8_first_line("abcd\xe2\x82\xac", line, 7), "abcd"); /* no room for € */
    CHECK_STR(utf8_first_line("abcd\xe2\x82\xac", line, 8), "abcd\xe2\x82\xac");
    CHECK_STR(utf8_first_line(NULL, line, sizeof line), "");
    json_t *j = utf8_json("\xff", 1);
    CHECK_STR(json_string_value(j), FFFD);
    json_decref(j);
}

/* A request path for the access log: valid UTF-8, no control character, bounded. */
static void log_text(void)
{
    char out[32];
    utf8_log_text("/v1/h\xff\xfe/x", 9, out, sizeof out);
    CHECK_STR(out, "/v1/h" FFFD FFFD "/x");
    utf8_log_text("/a\nb\r\x1b[31m\x7f\\", 12, out, sizeof out);
    CHECK_STR(out, "/a\\x0ab\\x0d\\x1b[31m\\x7f\\x5c");
    utf8_log_text("/\xc2\x85\xc3\xa9", 5, out, sizeof out); /* NEL (C1) escaped, é kept */
    CHECK_STR(out, "/\\u0085\xc3\xa9");
    char longp[200];
    memset(longp, 'a', sizeof longp);
    size_t w = utf8_log_text(longp, sizeof longp, out, sizeof out);
    CHECK(w <= sizeof out - 1 && utf8_valid(out, w));
    CHECK(w >= 3 && strcmp(out + w - 3, "\xe2\x80\xa6") == 0); /* cut: ends with … */
    memset(longp, 0xff, sizeof longp);
    w = utf8_log_text(longp, sizeof longp, out, sizeof out);
    CHECK(w <= sizeof out - 1 && utf8_valid(out, w));
    CHECK(utf8_log_text(NULL, 0, out, sizeof out) == 0 && out[0] == '\0');
}

UNIT_SUITE(utf8_tests) = {
    {"utf8: every invalid class, cuts at every offset, dup, tail, first line", utf8_rules},
    {"utf8: log text escapes controls, cleans and bounds a request path", log_text},
    UNIT_END,
};
