/* test_rolemap.c — api/rolemap.c: GPUFLEET_JWT_ROLE_MAP's syntax, its refusals, and how an
 * identity provider's groups resolve to roles, reporter scopes and project roles. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/role.h"
#include "api/rolemap.h"
#include "tests/unit/unit.h"

/* ---- the role map ---- */

static enum api_role resolve(const struct auth_rolemap *m, const char *claim_json, char **scope)
{
    json_t *c = json_loads(claim_json, JSON_DECODE_ANY, NULL);
    json_t *s = NULL;
    struct api_project_claim claims[API_MAX_PROJECT_CLAIMS];
    int n;
    enum api_role r = auth_rolemap_resolve(m, c, &s, claims, API_MAX_PROJECT_CLAIMS, &n);
    json_decref(c);
    *scope = s ? json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(s);
    return r;
}

static void rolemap_syntax(void)
{
    struct auth_rolemap *m = NULL;
    char err[256];
    CHECK(auth_rolemap_parse("platform-admins:admin,platform:operator, readers:viewer ,"
                             "gpu-reporters-a:reporter@pool-a,"
                             "ops@corp.example:admin,realm:group:viewer,"
                             "mixed:reporter@pool=a+host=gpu-07+b,any:reporter",
                             &m, err, sizeof err) == 0);
    CHECK(auth_rolemap_size(m) == 8);
    auth_rolemap_free(m);
    static const char *const bad[][2] = {
        {"", "empty"},
        {"a:admin,,b:viewer", "entry 2 is empty"},
        {"a:admin,", "entry 2 is empty"},
        {"noroles", "GROUP:ROLE"},
        {":admin", "GROUP:ROLE"},
        {"a:root", "viewer, operator, admin or"},
        {"a:Admin", "viewer, operator, admin or"},
        {"a:admin@pool-a", "only reporter"},
        {"a:viewer@pool-a+host=x", "only reporter"},
        {"a:reporter@", "viewer, operator"}, /* "reporter@" is no role */
        {"a:reporter@pool a", "viewer, operator"},
        {"a:reporter@host=", "scope item"},
        {"a:reporter@pool-a++b", "scope item"},
        {"a:reporter@x=y", "scope item"},
        {"a:reporter@pool=", "scope item"},
        {"a:operator@project=", "scope item"},
        {"a:operator@project=x+project=y", "one project=NAME"},
        {"a:operator@project=x+pool=p", "only reporter"},
        {"a:operator@project=Bad Name", "viewer, operator"},
        {"\x01group:admin", "control"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = NULL;
        int rc = auth_rolemap_parse(bad[i][0], &m, err, sizeof err);
        if (rc == 0 || strstr(err, bad[i][1]) == NULL)
            printf("    # \"%s\": rc %d, err \"%s\"\n", bad[i][0], rc, rc ? err : "");
        CHECK(rc != 0 && m == NULL && strstr(err, bad[i][1]) != NULL);
    }
    char many[8192] = "";
    for (int i = 0; i <= ROLEMAP_MAX_ENTRIES; i++)
        strcat(many, i ? ",g:viewer" : "g:viewer");
    CHECK(auth_rolemap_parse(many, &m, err, sizeof err) != 0 && strstr(err, "at most"));
}

/* Entries with @project=NAME grant their role in that project only; the highest per
 * project wins; a reporter's pools and hosts still form its scope. */
static void rolemap_projects(void)
{
    struct auth_rolemap *m = NULL;
    char err[256];
    CHECK(auth_rolemap_parse("ml-serving-ops:operator@project=ml-serving,"
                             "ml-serving-view:viewer@project=ml-serving,"
                             "train:admin@project=training,all-view:viewer,"
                             "rep:reporter@project=training+pool=h100",
                             &m, err, sizeof err) == 0);
    json_t *scope = NULL;
    struct api_project_claim cl[API_MAX_PROJECT_CLAIMS];
    int n = -1;
    json_t *c = json_loads("[\"ml-serving-view\",\"ml-serving-ops\",\"train\"]", 0, NULL);
    CHECK(auth_rolemap_resolve(m, c, &scope, cl, API_MAX_PROJECT_CLAIMS, &n) == ROLE_NONE);
    json_decref(c);
    CHECK(n == 2 && scope == NULL);
    CHECK(!strcmp(cl[0].project, "ml-serving") && cl[0].role == ROLE_OPERATOR);
    CHECK(!strcmp(cl[1].project, "training") && cl[1].role == ROLE_ADMIN);
    c = json_loads("[\"all-view\",\"rep\"]", 0, NULL);
    CHECK(auth_rolemap_resolve(m, c, &scope, cl, 1, &n) == ROLE_VIEWER);
    json_decref(c);
    CHECK(n == 1 && !strcmp(cl[0].project, "training") && cl[0].role == ROLE_REPORTER);
    char *text = scope ? json_dumps(scope, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_STR(text, "{\"hosts\":[],\"pools\":[\"h100\"]}");
    free(text);
    json_decref(scope);
    auth_rolemap_free(m);
}

static void rolemap_resolution(void)
{
    struct auth_rolemap *m = NULL;
    char err[256];
    CHECK(auth_rolemap_parse("platform-admins:admin,platform:operator,readers:viewer,"
                             "rep-a:reporter@pool-a,rep-b:reporter@pool-b+host=gpu-07,"
                             "rep-all:reporter,"
                             "rep-id:reporter@0F9C3A52-7E1B-4C7D-9A0B-1C2D3E4F5A6B,"
                             "ops@corp:operator",
                             &m, err, sizeof err) == 0);
    char *scope = NULL;
    CHECK(resolve(m, "[\"platform\",\"platform-admins\"]", &scope) == ROLE_ADMIN && !scope);
    CHECK(resolve(m, "\"platform\"", &scope) == ROLE_OPERATOR && !scope);
    CHECK(resolve(m, "[\"readers\",\"rep-a\"]", &scope) == ROLE_VIEWER && !scope);
    CHECK(resolve(m, "[\"ops@corp\"]", &scope) == ROLE_OPERATOR);
    CHECK(resolve(m, "[\"nobody\", 7, null, {\"platform\":1}]", &scope) == ROLE_NONE);
    CHECK(resolve(m, "{\"platform\":true}", &scope) == ROLE_NONE);
    CHECK(resolve(m, "[]", &scope) == ROLE_NONE);
    CHECK(resolve(m, "null", &scope) == ROLE_NONE);
    CHECK(resolve(m, "\"PLATFORM\"", &scope) == ROLE_NONE); /* exact match */
    CHECK(resolve(m, "[\"rep-a\"]", &scope) == ROLE_REPORTER);
    CHECK_STR(scope, "{\"hosts\":[],\"pools\":[\"pool-a\"]}");
    free(scope);
    CHECK(resolve(m, "[\"rep-a\",\"rep-b\",\"rep-a\"]", &scope) == ROLE_REPORTER);
    CHECK_STR(scope, "{\"hosts\":[\"gpu-07\"],\"pools\":[\"pool-a\",\"pool-b\"]}");
    free(scope);
    CHECK(resolve(m, "[\"rep-id\"]", &scope) == ROLE_REPORTER);
    CHECK_STR(scope, "{\"hosts\":[],\"pools\":[\"0f9c3a52-7e1b-4c7d-9a0b-1c2d3e4f5a6b\"]}");
    free(scope);
    /* An unscoped reporter entry makes the reporter unscoped. */
    CHECK(resolve(m, "[\"rep-a\",\"rep-all\"]", &scope) == ROLE_REPORTER && scope == NULL);
    auth_rolemap_free(m);
    CHECK(auth_role_rank(ROLE_ADMIN) > auth_role_rank(ROLE_OPERATOR) &&
          auth_role_rank(ROLE_OPERATOR) > auth_role_rank(ROLE_VIEWER) &&
          auth_role_rank(ROLE_VIEWER) > auth_role_rank(ROLE_REPORTER) &&
          auth_role_rank(ROLE_REPORTER) > auth_role_rank(ROLE_NONE));
}

UNIT_SUITE(rolemap_tests) = {
    {"rolemap: syntax and refusals", rolemap_syntax},
    {"rolemap: resolution (highest wins, scope union, unscoped entries)", rolemap_resolution},
    {"rolemap: entries with @project=NAME grant roles per project", rolemap_projects},
    UNIT_END,
};
