/* role.c — see role.h. */
#include "api/role.h"

#include <string.h>

enum api_role auth_role_parse(const char *s)
{
    if (s == NULL)
        return ROLE_NONE;
    if (strcmp(s, "viewer") == 0)
        return ROLE_VIEWER;
    if (strcmp(s, "operator") == 0)
        return ROLE_OPERATOR;
    if (strcmp(s, "admin") == 0)
        return ROLE_ADMIN;
    if (strcmp(s, "reporter") == 0)
        return ROLE_REPORTER;
    return ROLE_NONE;
}

const char *auth_role_name(enum api_role r)
{
    switch (r) {
    case ROLE_VIEWER: return "viewer";
    case ROLE_OPERATOR: return "operator";
    case ROLE_ADMIN: return "admin";
    case ROLE_REPORTER: return "reporter";
    default: return "none";
    }
}

int auth_role_rank(enum api_role r)
{
    switch (r) {
    case ROLE_ADMIN: return 4;
    case ROLE_OPERATOR: return 3;
    case ROLE_VIEWER: return 2;
    case ROLE_REPORTER: return 1;
    default: return 0;
    }
}
