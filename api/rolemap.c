/* rolemap.c — see rolemap.h. Pure: no I/O. */
#include "api/rolemap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/role.h"
#include "common/util.h"

#define ROLEMAP_MAX_GROUP 256
#define ROLEMAP_MAX_NAME  128

struct rm_entry {
    char *group;
    enum api_role role;
    char project[64]; /* @project=NAME: the role is held there; "" for none */
    int scoped;
    json_t *pools, *hosts; /* arrays of strings (scoped entries) */
};

struct auth_rolemap {
    size_t n;
    struct rm_entry e[];
};

void auth_rolemap_free(struct auth_rolemap *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].group);
        json_decref(m->e[i].pools);
        json_decref(m->e[i].hosts);
    }
    free(m);
}

size_t auth_rolemap_size(const struct auth_rolemap *m)
{
    return m ? m->n : 0;
}

static int scope_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-' || c == '=' || c == '+';
}

static int name_ok(const char *s, size_t len)
{
    if (len == 0 || len > ROLEMAP_MAX_NAME)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* A UUID is compared in its canonical lowercase form; names as they are. */
static json_t *scope_value(const char *s, size_t len)
{
    char buf[ROLEMAP_MAX_NAME + 1];
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (util_is_uuid(buf))
        for (char *p = buf; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    return json_string(buf);
}

/* Parses "ITEM+ITEM…" into e->pools and e->hosts. */
static int parse_scope(const char *s, struct rm_entry *e, const char *entry, char *err,
                       size_t errlen)
{
    e->pools = json_array();
    e->hosts = json_array();
    size_t count = 0;
    while (1) {
        const char *end = strchr(s, '+');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *name = s;
        json_t *into = e->pools;
        if (len > 8 && strncmp(s, "project=", 8) == 0) {
            if (e->project[0] != '\0' || len - 8 >= sizeof e->project || !name_ok(s + 8, len - 8)) {
                snprintf(err, errlen,
                         "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": one project=NAME at most, a name of "
                         "1-63 letters, digits, '.', '_' or '-'",
                         entry);
                return -1;
            }
            memcpy(e->project, s + 8, len - 8);
            e->project[len - 8] = '\0';
            if (end == NULL)
                break;
            s = end + 1;
            continue;
        }
        if (len > 5 && strncmp(s, "pool=", 5) == 0) {
            name = s + 5;
        } else if (len > 5 && strncmp(s, "host=", 5) == 0) {
            name = s + 5;
            into = e->hosts;
        }
        size_t nlen = len - (size_t)(name - s);
        if (!name_ok(name, nlen)) {
            snprintf(err, errlen,
                     "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": each scope item is a pool (NAME, or "
                     "pool=NAME) or host=NAME, names of 1-128 letters, digits, '.', '_' or '-' "
                     "(name a pool with other characters by its id)",
                     entry);
            return -1;
        }
        if (++count > ROLEMAP_MAX_ITEMS) {
            snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": at most %d scope items", entry,
                     ROLEMAP_MAX_ITEMS);
            return -1;
        }
        json_array_append_new(into, scope_value(name, nlen));
        e->scoped = 1;
        if (end == NULL)
            break;
        s = end + 1;
    }
    return 0;
}

/* Parses one trimmed entry (NUL-terminated, writable) into e. */
static int parse_entry(char *entry, struct rm_entry *e, char *err, size_t errlen)
{
    char *scope = NULL;
    char *at = strrchr(entry, '@');
    if (at != NULL && at[1] != '\0') {
        int all = 1;
        for (const char *p = at + 1; *p; p++)
            all = all && scope_char(*p);
        const char *colon = memrchr(entry, ':', (size_t)(at - entry));
        if (all && colon != NULL) {
            size_t rl = (size_t)(at - colon - 1);
            char role[16];
            if (rl < sizeof role) {
                memcpy(role, colon + 1, rl);
                role[rl] = '\0';
                if (auth_role_parse(role) != ROLE_NONE)
                    scope = at + 1;
            }
        }
    }
    char full[512];
    snprintf(full, sizeof full, "%s", entry);
    if (scope != NULL)
        scope[-1] = '\0'; /* entry is now GROUP:reporter */
    char *colon = strrchr(entry, ':');
    if (colon == NULL || colon == entry) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_ROLE_MAP: \"%.80s\" is not GROUP:ROLE (e.g. platform-admins:admin)",
                 full);
        return -1;
    }
    *colon = '\0';
    e->role = auth_role_parse(colon + 1);
    if (e->role == ROLE_NONE) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": the role must be viewer, operator, admin or "
                 "reporter",
                 full);
        return -1;
    }
    size_t glen = strlen(entry);
    while (glen > 0 && entry[glen - 1] == ' ')
        entry[--glen] = '\0';
    if (glen == 0 || glen > ROLEMAP_MAX_GROUP) {
        snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": the group must be 1-%d characters",
                 full, ROLEMAP_MAX_GROUP);
        return -1;
    }
    for (size_t i = 0; i < glen; i++)
        if ((unsigned char)entry[i] < 0x20 || entry[i] == 0x7f) {
            snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: a group holds a control character");
            return -1;
        }
    e->group = strdup(entry);
    if (e->group == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (scope != NULL && parse_scope(scope, e, full, err, errlen) != 0)
        return -1;
    if (e->scoped && e->role != ROLE_REPORTER) {
        snprintf(err, errlen,
                 "GPUFLEET_JWT_ROLE_MAP: \"%.80s\": only reporter entries take pools or hosts "
                 "(@project=NAME is for every role)",
                 full);
        return -1;
    }
    return 0;
}

int auth_rolemap_parse(const char *spec, struct auth_rolemap **out, char *err, size_t errlen)
{
    *out = NULL;
    if (spec == NULL || *spec == '\0') {
        snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP is empty");
        return -1;
    }
    size_t n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    if (n > ROLEMAP_MAX_ENTRIES) {
        snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: at most %d entries", ROLEMAP_MAX_ENTRIES);
        return -1;
    }
    struct auth_rolemap *m = calloc(1, sizeof *m + n * sizeof m->e[0]);
    char *copy = strdup(spec);
    if (m == NULL || copy == NULL) {
        free(m);
        free(copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    char *s = copy;
    for (size_t i = 0; i < n; i++) {
        char *end = strchr(s, ',');
        if (end != NULL)
            *end = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        size_t len = strlen(s);
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            s[--len] = '\0';
        if (len == 0) {
            snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: entry %zu is empty", i + 1);
            rc = -1;
            break;
        }
        if (len > 500) {
            snprintf(err, errlen, "GPUFLEET_JWT_ROLE_MAP: entry %zu is longer than 500 characters",
                     i + 1);
            rc = -1;
            break;
        }
        m->n++;
        if (parse_entry(s, &m->e[i], err, errlen) != 0) {
            rc = -1;
            break;
        }
        s = end ? end + 1 : s + len;
    }
    free(copy);
    if (rc != 0) {
        auth_rolemap_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

static int group_in_claim(const json_t *claim, const char *group)
{
    if (json_is_string(claim))
        return strcmp(json_string_value(claim), group) == 0;
    if (!json_is_array(claim))
        return 0;
    size_t i;
    const json_t *v;
    json_array_foreach(claim, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), group) == 0)
            return 1;
    }
    return 0;
}

static void union_into(json_t *dst, const json_t *src)
{
    size_t i, j;
    const json_t *v, *w;
    json_array_foreach(src, i, v)
    {
        int seen = 0;
        json_array_foreach(dst, j, w)
        {
            if (json_equal(v, w))
                seen = 1;
        }
        if (!seen)
            json_array_append(dst, (json_t *)v);
    }
}

/* The highest role of the entries without a project that match. */
static enum api_role global_role(const struct auth_rolemap *m, const json_t *claim)
{
    enum api_role best = ROLE_NONE;
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].project[0] == '\0' && auth_role_rank(m->e[i].role) > auth_role_rank(best) &&
            group_in_claim(claim, m->e[i].group))
            best = m->e[i].role;
    return best;
}

/* The union of the scopes of the matching reporter entries; NULL when one is unscoped. */
static json_t *reporter_scope(const struct auth_rolemap *m, const json_t *claim)
{
    json_t *pools = json_array(), *hosts = json_array();
    for (size_t i = 0; i < m->n; i++) {
        const struct rm_entry *e = &m->e[i];
        if (e->role != ROLE_REPORTER || !group_in_claim(claim, e->group))
            continue;
        if (!e->scoped) {
            json_decref(pools);
            json_decref(hosts);
            return NULL;
        }
        union_into(pools, e->pools);
        union_into(hosts, e->hosts);
    }
    return json_pack("{s:o, s:o}", "pools", pools, "hosts", hosts);
}

enum api_role auth_rolemap_resolve(const struct auth_rolemap *m, const json_t *claim,
                                   json_t **scope, struct api_project_claim *claims, int max,
                                   int *nclaims)
{
    *scope = NULL;
    *nclaims = 0;
    enum api_role best = global_role(m, claim);
    int reporter = best == ROLE_REPORTER;
    for (size_t i = 0; i < m->n; i++) {
        const struct rm_entry *e = &m->e[i];
        if (e->project[0] == '\0' || !group_in_claim(claim, e->group))
            continue;
        reporter |= e->role == ROLE_REPORTER;
        int k = 0;
        while (k < *nclaims && strcmp(claims[k].project, e->project) != 0)
            k++;
        if (k == *nclaims) {
            if (k >= max)
                continue; /* more projects than a token carries */
            snprintf(claims[k].project, sizeof claims[k].project, "%s", e->project);
            claims[k].role = ROLE_NONE;
            (*nclaims)++;
        }
        if (auth_role_rank(e->role) > auth_role_rank(claims[k].role))
            claims[k].role = e->role;
    }
    if (reporter)
        *scope = reporter_scope(m, claim);
    return best;
}
