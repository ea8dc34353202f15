/* stack.c — see stack.h. */
#include "planner/stack.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plan_version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        long x = strtol(a, (char **)&a, 10);
        long y = strtol(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
        if (!isdigit((unsigned char)*a) && *a)
            break;
        if (!isdigit((unsigned char)*b) && *b)
            break;
    }
    return 0;
}

/* One path component of a repository name: [a-z0-9]+ separated by one of . _ __ - */
static int valid_component(const char *s, size_t n)
{
    if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/* registry host (may hold ':' port and uppercase), then lowercase components. */
static int valid_repository(const char *s, size_t n)
{
    size_t start = 0, comp = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '/') {
            size_t len = i - start;
            int first_is_host = comp == 0 && i < n &&
                                (memchr(s + start, '.', len) || memchr(s + start, ':', len) ||
                                 (len == 9 && strncmp(s + start, "localhost", 9) == 0));
            if (first_is_host) {
                for (size_t k = start; k < i; k++)
                    if (!(isalnum((unsigned char)s[k]) || s[k] == '.' || s[k] == '-' ||
                          s[k] == ':'))
                        return 0;
                if (len == 0)
                    return 0;
            } else if (!valid_component(s + start, len)) {
                return 0;
            }
            start = i + 1;
            comp++;
        }
    }
    return comp > 0;
}

static int valid_tag(const char *s, size_t n)
{
    if (n == 0 || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

/* 1 if the reference or any of its components (after '/', ':', '@' or a host's '.') starts
 * with '-': such a word could be read as an option by the tool it is handed to. */
static int dash_component(const char *image)
{
    for (const char *p = image; *p; p++)
        if (*p == '-' && (p == image || strchr("/:@.", p[-1]) != NULL))
            return 1;
    return 0;
}

enum plan_stack_err plan_image_check(const char *image, char *name, size_t namelen, char *digest,
                                     size_t digestlen, char *detail, size_t detaillen)
{
    if (dash_component(image)) {
        snprintf(detail, detaillen,
                 "no component of the image reference (registry host, path, tag) may start "
                 "with '-'");
        return PLAN_STACK_INVALID_FIELD;
    }
    const char *at = strchr(image, '@');
    if (at == NULL) {
        snprintf(detail, detaillen,
                 "the image must be pinned by digest: name[:tag]@sha256:<64 lowercase hex>; a "
                 "tag alone (or latest) can change under you");
        return PLAN_STACK_IMAGE_NOT_PINNED;
    }
    const char *d = at + 1;
    int ok = strncmp(d, "sha256:", 7) == 0 && strlen(d + 7) == 64;
    for (int i = 0; ok && i < 64; i++)
        ok = isdigit((unsigned char)d[7 + i]) || (d[7 + i] >= 'a' && d[7 + i] <= 'f');
    if (!ok) {
        snprintf(detail, detaillen,
                 "the digest must be sha256: followed by 64 lowercase hex characters");
        return PLAN_STACK_IMAGE_NOT_PINNED;
    }
    /* name[:tag] — the tag is after the last ':' that follows the last '/'. */
    size_t nlen = (size_t)(at - image);
    const char *slash = memrchr(image, '/', nlen);
    const char *colon =
        memrchr(slash ? slash : image, ':', nlen - (size_t)((slash ? slash : image) - image));
    size_t repo_len = colon ? (size_t)(colon - image) : nlen;
    if (!valid_repository(image, repo_len) ||
        (colon && !valid_tag(colon + 1, nlen - repo_len - 1))) {
        snprintf(detail, detaillen,
                 "the image name is not a valid repository[:tag] (lowercase path components, "
                 "optional registry host)");
        return PLAN_STACK_INVALID_FIELD;
    }
    snprintf(name, namelen, "%.*s", (int)nlen, image);
    snprintf(digest, digestlen, "%s", d);
    return PLAN_STACK_OK;
}

static const struct plan_cuda_toolkit *find_toolkit(const char *cuda)
{
    int dots = 0;
    for (const char *p = cuda; *p; p++)
        dots += *p == '.';
    for (size_t i = 0; i < plan_cuda_toolkits_count; i++) {
        const struct plan_cuda_toolkit *t = &plan_cuda_toolkits[i];
        if (dots == 2 && strcmp(t->triplet, cuda) == 0)
            return t;
        /* "12.4" means the GA release of 12.4 */
        size_t n = strlen(cuda);
        if (dots == 1 && t->ga && strncmp(t->triplet, cuda, n) == 0 && t->triplet[n] == '.')
            return t;
    }
    return NULL;
}

static void set(struct plan_stack_result *r, enum plan_stack_err e, const char *field,
                const char *detail)
{
    r->err = e;
    snprintf(r->field, sizeof r->field, "%s", field);
    snprintf(r->detail, sizeof r->detail, "%s", detail);
}

void plan_stack_check(const json_t *stack, struct plan_stack_result *res)
{
    memset(res, 0, sizeof *res);
    res->warnings = json_array();
    char detail[320];
    const char *image = json_string_value(json_object_get(stack, "image"));
    enum plan_stack_err e =
        plan_image_check(image, res->image_name, sizeof res->image_name, res->image_digest,
                         sizeof res->image_digest, detail, sizeof detail);
    if (e != PLAN_STACK_OK) {
        set(res, e, "image", detail);
        return;
    }
    const char *tag = strrchr(res->image_name, ':');
    if (tag && strchr(tag, '/') == NULL && strcmp(tag + 1, "latest") == 0)
        json_array_append_new(res->warnings,
                              json_pack("{s:s, s:s}", "code", "latest_tag_ignored", "message",
                                        "the tag latest says nothing; the digest pins the image"));

    const char *driver = json_string_value(json_object_get(stack, "driver_version"));
    const char *branch = json_string_value(json_object_get(stack, "driver_branch"));
    if (strncmp(driver, branch, strlen(branch)) != 0 || driver[strlen(branch)] != '.') {
        snprintf(detail, sizeof detail,
                 "driver_branch %s does not match driver_version %s (branch %.*s)", branch, driver,
                 (int)strcspn(driver, "."), driver);
        set(res, PLAN_STACK_INVALID_FIELD, "driver_branch", detail);
        return;
    }
    const char *cuda = json_string_value(json_object_get(stack, "cuda_version"));
    const struct plan_cuda_toolkit *tk = find_toolkit(cuda);
    if (tk == NULL) {
        snprintf(detail, sizeof detail,
                 "CUDA %s is not a toolkit release in NVIDIA's table (for example 12.4 or "
                 "12.4.1; there is no 12.7)",
                 cuda);
        set(res, PLAN_STACK_UNKNOWN_CUDA, "cuda_version", detail);
        return;
    }
    int major = atoi(cuda);
    const struct plan_cuda_family *fam = NULL;
    for (size_t i = 0; i < plan_cuda_families_count; i++)
        if (plan_cuda_families[i].major == major)
            fam = &plan_cuda_families[i];
    const char *floor_driver = fam ? fam->min_driver : tk->linux_driver;
    if (plan_version_cmp(driver, floor_driver) < 0) {
        snprintf(detail, sizeof detail,
                 "CUDA %s needs at least driver %s (the CUDA %d.x minor-version-compatibility "
                 "minimum; the toolkit itself ships with %s); driver %s is older",
                 cuda, floor_driver, major, tk->linux_driver, driver);
        set(res, PLAN_STACK_CUDA_INCOMPATIBLE, "cuda_version", detail);
        return;
    }
    if (plan_version_cmp(driver, tk->linux_driver) < 0) {
        snprintf(detail, sizeof detail,
                 "driver %s runs CUDA %s only through minor version compatibility: features "
                 "that need the newer driver, such as PTX JIT compilation, are unavailable; "
                 "CUDA %s ships with driver %s",
                 driver, cuda, tk->label, tk->linux_driver);
        json_array_append_new(
            res->warnings,
            json_pack("{s:s, s:s}", "code", "cuda_minor_version_compatibility", "message", detail));
    }
}
