/* jsonspec.c — see jsonspec.h. */
#include "api/jsonspec.h"

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

static int check_obj(const json_t *obj, const struct spec_field *fields, const char *prefix,
                     struct spec_error *err);

static int check_value(const json_t *v, const struct spec_field *f, const char *path,
                       struct spec_error *err)
{
    char buf[200];
    if (json_is_null(v)) {
        if (f->flags & SPEC_NULLABLE)
            return 0;
        return fail(err, API_ERR_INVALID_FIELD, path, "%s must not be null%s", NULL);
    }
    switch (f->type) {
    case SPEC_STRING: {
        if (!json_is_string(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be a string%s", NULL);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n != strlen(s))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must not contain NUL%s", NULL);
        if ((double)n < f->min || (f->max > 0 && (double)n > f->max)) {
            snprintf(buf, sizeof buf, " (%g to %g characters)", f->min, f->max);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s has the wrong length%s", buf);
        }
        if (!spec_printable(s))
            return fail(err, API_ERR_INVALID_FIELD, path,
                        "%s must not contain control characters%s", NULL);
        if (f->check && !f->check(s)) {
            snprintf(buf, sizeof buf, ": %s", f->expect ? f->expect : "invalid format");
            return fail(err, API_ERR_INVALID_FIELD, path, "%s is not valid%s", buf);
        }
        return 0;
    }
    case SPEC_NUMBER:
    case SPEC_INTEGER: {
        if (f->type == SPEC_INTEGER ? !json_is_integer(v) : !json_is_number(v))
            return fail(err, API_ERR_INVALID_FIELD, path,
                        f->type == SPEC_INTEGER ? "%s must be a whole number%s"
                                                : "%s must be a number%s",
                        NULL);
        double d = json_number_value(v);
        int below = (f->flags & SPEC_EXCLUSIVE_MIN) ? d <= f->min : d < f->min;
        if (!isfinite(d) || below || d > f->max) {
            snprintf(buf, sizeof buf, " %s %g and at most %g",
                     (f->flags & SPEC_EXCLUSIVE_MIN) ? "greater than" : "at least", f->min,
                     f->max);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be%s", buf);
        }
        return 0;
    }
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
    case SPEC_ENUM_ARRAY: {
        if (!json_is_array(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an array%s", NULL);
        size_t n = json_array_size(v);
        if ((double)n < f->min || (f->max > 0 && (double)n > f->max)) {
            snprintf(buf, sizeof buf, " (%g to %g)", f->min, f->max);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s has the wrong number of items%s",
                        buf);
        }
        for (size_t i = 0; i < n; i++) {
            const json_t *it = json_array_get(v, i);
            if (!json_is_string(it) || !in_enum(json_string_value(it), f->enum_values)) {
                enum_list(f->enum_values, buf, sizeof buf);
                return fail(err, API_ERR_INVALID_FIELD, path, "%s items must be among: %s",
                            buf);
            }
            for (size_t j = 0; j < i; j++)
                if (json_equal(json_array_get(v, j), it))
                    return fail(err, API_ERR_INVALID_FIELD, path,
                                "%s must not repeat an item%s", NULL);
        }
        return 0;
    }
    case SPEC_OBJECT:
        if (!json_is_object(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an object%s", NULL);
        return check_obj(v, f->children, path, err);
    case SPEC_ARRAY: {
        if (!json_is_array(v))
            return fail(err, API_ERR_INVALID_FIELD, path, "%s must be an array%s", NULL);
        size_t n = json_array_size(v);
        if ((double)n < f->min || (f->max > 0 && (double)n > f->max)) {
            snprintf(buf, sizeof buf, " (%g to %g)", f->min, f->max);
            return fail(err, API_ERR_INVALID_FIELD, path, "%s has the wrong number of items%s",
                        buf);
        }
        for (size_t i = 0; i < n; i++) {
            char ipath[128];
            snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
            if (check_value(json_array_get(v, i), &f->children[0], ipath, err) != 0)
                return -1;
        }
        return 0;
    }
    case SPEC_MAP: {
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
            if (check_value(item, &f->children[0], kpath, err) != 0)
                return -1;
        }
        return 0;
    }
    }
    return fail(err, API_ERR_INVALID_FIELD, path, "%s has an unsupported type%s", NULL);
}

static int check_obj(const json_t *obj, const struct spec_field *fields, const char *prefix,
                     struct spec_error *err)
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
        if (check_value(v, f, path, err) != 0)
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

int spec_check(const json_t *obj, const struct spec_field *fields, struct spec_error *err)
{
    return check_obj(obj, fields, "", err);
}

int api_spec_check(struct api_req *r, const json_t *obj, const struct spec_field *fields)
{
    struct spec_error err;
    if (spec_check(obj, fields, &err) == 0)
        return 0;
    api_reply_problem(r, err.code, err.field, "%s", err.detail);
    return -1;
}
