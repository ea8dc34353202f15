/* test_routes.c — the route matcher. */
#include <stdlib.h>

#include "api/routes.h"
#include "tests/unit/unit.h"

static void match(void)
{
    const struct api_route *r;
    char *params[API_MAX_PARAMS];
    int n, label;
    char allow[128];
    CHECK(api_route_match("GET", "/v1/gpu-models/h100_sxm", &r, params, &n, allow, sizeof allow,
                          &label) == MATCH_OK);
    CHECK(r != NULL && strcmp(r->path, "/v1/gpu-models/{key}") == 0);
    CHECK(n == 1);
    CHECK_STR(params[0], "h100_sxm");
    free(params[0]);
    CHECK(api_route_match("GET", "/v1/gpu-models", &r, params, &n, allow, sizeof allow,
                          &label) == MATCH_OK && n == 0);
    CHECK(strstr(allow, "POST") != NULL && strstr(allow, "GET") != NULL);
}

static void misses(void)
{
    const struct api_route *r;
    char *params[API_MAX_PARAMS];
    int n, label;
    char allow[128];
    CHECK(api_route_match("GET", "/v1/nothing", &r, params, &n, allow, sizeof allow, &label) ==
          MATCH_NO_PATH);
    CHECK(label == -1);
    CHECK(api_route_match("GET", "/v1/gpu-models/", &r, params, &n, allow, sizeof allow,
                          &label) == MATCH_NO_PATH);
    CHECK(api_route_match("GET", "/v1/gpu-models/a/b", &r, params, &n, allow, sizeof allow,
                          &label) == MATCH_NO_PATH);
    CHECK(api_route_match("DELETE", "/v1/gpu-models", &r, params, &n, allow, sizeof allow,
                          &label) == MATCH_WRONG_METHOD);
    CHECK(strstr(allow, "GET") != NULL && strstr(allow, "POST") != NULL);
    CHECK(strstr(allow, "DELETE") == NULL);
    CHECK(label >= 0);
    CHECK(api_route_match("HEAD", "/healthz", &r, params, &n, allow, sizeof allow, &label) ==
          MATCH_OK);
    CHECK_STR(r->method, "GET");
}

static void table_is_sane(void)
{
    /* Every /v1 route needs roles; service routes are public. */
    for (size_t i = 0; i < api_routes_count; i++) {
        const struct api_route *r = &api_routes[i];
        if (strncmp(r->path, "/v1/", 4) == 0)
            CHECK(r->roles != 0 && !(r->flags & ROUTE_PUBLIC));
        else
            CHECK(r->flags & ROUTE_PUBLIC);
        for (size_t j = 0; j < i; j++)
            CHECK(!(strcmp(r->method, api_routes[j].method) == 0 &&
                    strcmp(r->path, api_routes[j].path) == 0));
    }
}

UNIT_SUITE(routes_tests) = {
    {"routes: parameters and Allow", match},
    {"routes: 404 and 405 cases, HEAD served by GET", misses},
    {"routes: /v1 routes need roles, no duplicates", table_is_sane},
    UNIT_END,
};
