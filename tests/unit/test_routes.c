/* test_routes.c — the route matcher. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "api/ui.h"
#include "tests/unit/unit.h"

/* Every route names its handler and the file that defines it (what `gpufleetd routes`
 * prints); the file really defines that handler (run from the repository root). */
static void handler_files(void)
{
    for (size_t i = 0; i < api_routes_count; i++) {
        const struct api_route *rt = &api_routes[i];
        CHECK(rt->handler_name != NULL && strncmp(rt->handler_name, "api_", 4) == 0);
        CHECK(rt->file != NULL && strncmp(rt->file, "api/", 4) == 0);
        FILE *f = fopen(rt->file, "r");
        CHECK(f != NULL);
        char def[160], line[512];
        snprintf(def, sizeof def, "enum MHD_Result %s(struct api_req *r)", rt->handler_name);
        int found = 0;
        while (!found && fgets(line, sizeof line, f) != NULL)
            found = strstr(line, def) == line;
        fclose(f);
        if (!found)
            fprintf(stderr, "    # %s is not defined in %s\n", rt->handler_name, rt->file);
        CHECK(found);
    }
}

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
    CHECK(api_route_match("GET", "/v1/gpu-models", &r, params, &n, allow, sizeof allow, &label) ==
              MATCH_OK &&
          n == 0);
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
    CHECK(api_route_match("GET", "/v1/gpu-models/", &r, params, &n, allow, sizeof allow, &label) ==
          MATCH_NO_PATH);
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

/* The status page: one path segment names a file, looked up by exact name in the
 * embedded table; any other shape matches no route. */
static void ui_paths(void)
{
    const struct api_route *r;
    char *params[API_MAX_PARAMS];
    int n, label;
    char allow[128];
    CHECK(api_route_match("GET", "/ui/", &r, params, &n, allow, sizeof allow, &label) == MATCH_OK &&
          n == 0);
    CHECK_STR(r->path, "/ui/");
    CHECK(api_route_match("GET", "/ui/..", &r, params, &n, allow, sizeof allow, &label) ==
          MATCH_OK);
    CHECK(n == 1);
    CHECK_STR(r->path, "/ui/{file}");
    CHECK_STR(params[0], "..");
    free(params[0]);
    CHECK(api_ui_find("..") == NULL);
    const char *none[] = {
        "/ui/../openapi.yaml", "/ui//etc/passwd", "/ui/a/b", "/ui/app.js/", "/uix", "/ui/./app.js"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        CHECK(api_route_match("GET", none[i], &r, params, &n, allow, sizeof allow, &label) ==
              MATCH_NO_PATH);
    CHECK(api_ui_find(NULL) == NULL && api_ui_find("") == NULL);
    CHECK(api_ui_find("INDEX.HTML") == NULL && api_ui_find("index.html ") == NULL);
    const struct api_ui_file *f = api_ui_find("index.html");
    CHECK(f != NULL);
    CHECK_STR(f->content_type, "text/html; charset=utf-8");
    f = api_ui_find("app.js");
    CHECK(f != NULL);
    CHECK_STR(f->content_type, "text/javascript; charset=utf-8");
    for (size_t i = 0; i < api_ui_files_count; i++) {
        f = &api_ui_files[i];
        CHECK(f->len > 0 && f->data[f->len] == 0 && strchr(f->name, '/') == NULL);
        CHECK(strlen(f->etag) == 34 && f->etag[0] == '"' && f->etag[33] == '"');
        CHECK(api_ui_find(f->name) == f);
    }
    CHECK(api_ui_path("/ui") && api_ui_path("/ui/") && api_ui_path("/ui/app.js"));
    CHECK(!api_ui_path("/uix") && !api_ui_path("/v1/ui") && !api_ui_path(NULL));
}

UNIT_SUITE(routes_tests) = {
    {"routes: each route names its handler and the file that defines it", handler_files},
    {"routes: parameters and Allow", match},
    {"routes: 404 and 405 cases, HEAD served by GET", misses},
    {"routes: /v1 routes need roles, no duplicates", table_is_sane},
    {"routes: /ui/ serves one embedded file by exact name, nothing else", ui_paths},
    UNIT_END,
};
