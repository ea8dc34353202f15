/* test_list.c — opaque cursors. */
#include <stdlib.h>

#include "api/list.h"
#include "tests/unit/unit.h"

static void cursor_roundtrip(void)
{
    char *c = api_cursor_encode("gpu_model", "h100_sxm");
    CHECK(c != NULL && strstr(c, "h100") == NULL); /* opaque */
    char *v = api_cursor_decode("gpu_model", c);
    CHECK_STR(v, "h100_sxm");
    free(v);
    CHECK(api_cursor_decode("audit", c) == NULL); /* another list's cursor */
    free(c);
}

static void cursor_rejects(void)
{
    CHECK(api_cursor_decode("audit", "") == NULL);
    CHECK(api_cursor_decode("audit", "not base64!") == NULL);
    CHECK(api_cursor_decode("audit", "YXVkaXQ") == NULL); /* "audit" with no value */
    char *c = api_cursor_encode("audit", "1\x01"
                                         "2"); /* control character inside */
    CHECK(api_cursor_decode("audit", c) == NULL);
    free(c);
}

UNIT_SUITE(list_tests) = {
    {"list: cursor round trip, bound to its list", cursor_roundtrip},
    {"list: cursor rejects garbage", cursor_rejects},
    UNIT_END,
};
