/* jsonspec.c — see jsonspec.h. */
#include "api/jsonspec.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int spec_printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int fail(struct spec_error *err, enum api_error code, const char *path, const char *fmt,
                const char *a)
{
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", path);
    snprintf(err->detail, sizeof err->detail, fmt, path, a ? a : "");
    return -1;
}

static int in_enum(const char *s, const char *const *values)
{
    for (; *values; values++)
        if (strcmp(s, *values) == 0)
            return 1;
    return 0;
}

static void enum_list(const char *const *values, char *out, size_t outlen)
{
    out[0] = '\0';
    for (; *values; values++) {
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", used ? ", " : "", *values);
    }
}

/* Whether a field of type t may fill a destination of kind k. */
static int dst_fits(enum spec_type t, enum spec_dst_kind k)
{
    switch (k) {
    case SPEC_DST_NONE:
    case SPEC_DST_JSON: return 1;
    case SPEC_DST_STRING: return t == SPEC_STRING || t == SPEC_ENUM;
    case SPEC_DST_INT: return t == SPEC_INTEGER;
    case SPEC_DST_NUMBER: return t == SPEC_NUMBER || t == SPEC_INTEGER;
    case SPEC_DST_BOOL: return t == SPEC_BOOL;
    }
    return 0;
}

/* Writes the validated, non-null value v to f's destination in out. */
static void store(const json_t *v, const struct spec_field *f, void *out)
{
    const struct spec_dst *d = &f->to;
    assert(dst_fits(f->type, d->kind)); /* a table that names the wrong C type */
    if (out == NULL || d->kind == SPEC_DST_NONE)
        return;
    char *at = (char *)out + d->off;
    switch (d->kind) {
    case SPEC_DST_NONE: break;
    case SPEC_DST_STRING: *(const char **)at = json_string_value(v); break;
    case SPEC_DST_INT: *(json_int_t *)at = json_integer_value(v); break;
    case SPEC_DST_NUMBER: *(double *)at = json_number_value(v); break;
    case SPEC_DST_BOOL: *(int *)at = json_is_true(v); break;
    case SPEC_DST_JSON: *(const json_t **)at = v; break;
    }
    if (d->seen)
        *(int *)((char *)out + d->seen - 1) = 1;
}

static int check_obj(const json_t *obj, const struct spec_field *fields, const char *prefix,
                     void *out, struct spec_error *err);
static int check_value(const json_t *v, const struct spec_field *f, const char *path, void *out,
                       struct spec_error *err);

/* v is an array whose length is within the field's min..max (max 0: no limit). */
static int check_array(const json_t *v, const struct spec_field *f, const char *path,
                       struct spec_error *err)
{
    char buf[64];
    if (!json_is_array(v))
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an array%s", NULL);
    size_t n = json_array_size(v);
    if ((double)n < f->min || (f->max > 0 && (double)n > f->max)) {
        snprintf(buf, sizeof buf, " (%g to %g)", f->min, f->max);
        return fail(err, API_ERR_INVALID_FIELD, path, "%s has the wrong number of items%s", buf);
    }
    return 0;
}

/* Validates v and fills its destination. */
static int parse_value(const json_t *v, const struct spec_field *f, const char *path, void *out,
                       struct spec_error *err)
{
    if (json_is_null(v)) {
        if (f->flags & SPEC_NULLABLE)
            return 0;
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must not be null%s", NULL);
    }
    if (check_value(v, f, path, out, err) != 0)
        return -1;
    store(v, f, out);
    return 0;
}

static int check_string(const json_t *v, const struct spec_field *f, const char *path,
                        struct spec_error *err)
{
    char buf[200];
    if (!json_is_string(v))
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must be a string%s", NULL);
    if (f->flags & SPEC_RAW)
        return 0;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n != strlen(s))
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must not contain NUL%s", NULL);
    if ((double)n < f->min || (f->max > 0 && (double)n > f->max)) {
        snprintf(buf, sizeof buf, " (%g to %g characters)", f->min, f->max);
        return fail(err, API_ERR_INVALID_FIELD, path, "%s has the wrong length%s", buf);
    }
    if (!spec_printable(s))
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must not contain control characters%s",
                    NULL);
    if (f->check && !f->check(s)) {
        snprintf(buf, sizeof buf, ": %s", f->expect ? f->expect : "invalid format");
        return fail(err, API_ERR_INVALID_FIELD, path, "%s is not valid%s", buf);
    }
    return 0;
}

static int check_number(const json_t *v, const struct spec_field *f, const char *path,
                        struct spec_error *err)
{
    char buf[200];
    if (f->type == SPEC_INTEGER ? !json_is_integer(v) : !json_is_number(v))
        return fail(err, API_ERR_INVALID_FIELD, path,
                    f->type == SPEC_INTEGER ? "%s must be a whole number%s"
                                            : "%s must be a number%s",
                    NULL);
    double d = json_number_value(v);
    int below = (f->flags & SPEC_EXCLUSIVE_MIN) ? d <= f->min : d < f->min;
    if (!isfinite(d) || below || d > f->max) {
        snprintf(buf, sizeof buf, " %s %g and at most %g",
                 (f->flags & SPEC_EXCLUSIVE_MIN) ? "greater than" : "at least", f->min, f->max);
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must be%s", buf);
    }
    return 0;
}

static int check_enum_array(const json_t *v, const struct spec_field *f, const char *path,
                            struct spec_error *err)
{
    char buf[200];
    if (check_array(v, f, path, err) != 0)
        return -1;
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        const json_t *it = json_array_get(v, i);
        if (!json_is_string(it) || !in_enum(json_string_value(it), f->enum_values)) {
            enum_list(f->enum_values, buf, sizeof buf);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s items must be among: %s", buf);
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(v, j), it))
                return fail(err, API_ERR_INVALID_FIELD, path, "%s must not repeat an item%s", NULL);
    }
    return 0;
}

static int check_items(const json_t *v, const struct spec_field *f, const char *path,
                       struct spec_error *err)
{
    if (check_array(v, f, path, err) != 0)
        return -1;
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        char ipath[128];
        snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
        if (f->children != NULL &&
            parse_value(json_array_get(v, i), &f->children[0], ipath, NULL, err) != 0)
            return -1;
    }
    return 0;
}

static int check_map(const json_t *v, const struct spec_field *f, const char *path,
                     struct spec_error *err)
{
    char buf[200];
    if (!json_is_object(v))
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an object%s", NULL);
    if (f->max > 0 && (double)json_object_size(v) > f->max) {
        snprintf(buf, sizeof buf, " (at most %g)", f->max);
        return fail(err, API_ERR_INVALID_FIELD, path, "%s has too many entries%s", buf);
    }
    const char *key;
    const json_t *item;
    json_object_foreach((json_t *)v, key, item)
    {
        char kpath[128];
        snprintf(kpath, sizeof kpath, "%s.%s", path, key);
        if (!spec_printable(kpath) || (f->check && !f->check(key))) {
            snprintf(buf, sizeof buf, ": %s", f->expect ? f->expect : "invalid key");
            return fail(err, API_ERR_INVALID_FIELD, spec_printable(kpath) ? kpath : path,
                        "%s has an invalid key%s", buf);
        }
        if (parse_value(item, &f->children[0], kpath, NULL, err) != 0)
            return -1;
    }
    return 0;
}

/* Validates the non-null value v; members of a nested object fill out. */
static int check_value(const json_t *v, const struct spec_field *f, const char *path, void *out,
                       struct spec_error *err)
{
    char buf[200];
    switch (f->type) {
    case SPEC_STRING: return check_string(v, f, path, err);
    case SPEC_NUMBER:
    case SPEC_INTEGER: return check_number(v, f, path, err);
    case SPEC_BOOL:
        if (!json_is_boolean(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be true or false%s", NULL);
        return 0;
    case SPEC_ENUM:
        if (!json_is_string(v) || !in_enum(json_string_value(v), f->enum_values)) {
            enum_list(f->enum_values, buf, sizeof buf);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be one of: %s", buf);
        }
        return 0;
    case SPEC_ENUM_ARRAY: return check_enum_array(v, f, path, err);
    case SPEC_OBJECT:
        if (!json_is_object(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an object%s", NULL);
        return check_obj(v, f->children, path, out, err);
    case SPEC_ARRAY: return check_items(v, f, path, err);
    case SPEC_MAP: return check_map(v, f, path, err);
    }
    return fail(err, API_ERR_INVALID_FIELD, path, "%s has an unsupported type%s", NULL);
}

static int check_obj(const json_t *obj, const struct spec_field *fields, const char *prefix,
                     void *out, struct spec_error *err)
{
    char path[128];
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        const struct spec_field *f = fields;
        while (f->name && strcmp(f->name, key) != 0)
            f++;
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        if (f->name == NULL)
            return fail(err, API_ERR_UNKNOWN_FIELD, spec_printable(path) ? path : "?",
                        "%s is not a known field%s", NULL);
        if (parse_value(v, f, path, out, err) != 0)
            return -1;
    }
    for (const struct spec_field *f = fields; f->name; f++) {
        if ((f->flags & SPEC_REQUIRED) && json_object_get(obj, f->name) == NULL) {
            snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", f->name);
            return fail(err, API_ERR_MISSING_FIELD, path, "%s is required%s", NULL);
        }
    }
    return 0;
}

int spec_parse(const json_t *obj, const struct spec_field *fields, void *out,
               struct spec_error *err)
{
    return check_obj(obj, fields, "", out, err);
}

int api_spec_parse(struct api_req *r, const json_t *obj, const struct spec_field *fields, void *out)
{
    struct spec_error err;
    if (spec_parse(obj, fields, out, &err) == 0)
        return 0;
    api_reply_problem(r, err.code, err.field, "%s", err.detail);
    return -1;
}
