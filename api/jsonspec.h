/* jsonspec.h — declarative validation of JSON request bodies. One table per body, one
 * call, and a 400 that names the field; no ad-hoc json_object_get chains in handlers. */
#ifndef GPUFLEET_JSONSPEC_H
#define GPUFLEET_JSONSPEC_H

#include <jansson.h>
#include <stddef.h>

#include "api/http.h"

enum spec_type {
    SPEC_STRING,
    SPEC_NUMBER,
    SPEC_INTEGER,
    SPEC_BOOL,
    SPEC_ENUM,       /* string from enum_values */
    SPEC_ENUM_ARRAY, /* array of unique strings from enum_values */
    SPEC_OBJECT,     /* nested object described by children */
    SPEC_ARRAY,      /* array of min..max items, each described by children[0] */
    SPEC_MAP,        /* object of ≤ max entries: keys pass check, values children[0] */
};

struct spec_field {
    const char *name;
    enum spec_type type;
    unsigned flags;
    double min, max;          /* numbers: inclusive range; strings/arrays: length range */
    int (*check)(const char *); /* strings: extra validator (pattern) */
    const char *expect;       /* words for the detail, e.g. "lowercase letters, digits, _" */
    const char *const *enum_values; /* NULL-terminated */
    const struct spec_field *children; /* terminated by {NULL}; one item for ARRAY/MAP */
};

enum spec_flags {
    SPEC_REQUIRED = 1,
    SPEC_NULLABLE = 2,  /* JSON null accepted for an optional field */
    SPEC_EXCLUSIVE_MIN = 4,
};

struct spec_error {
    enum api_error code;  /* MISSING_FIELD, UNKNOWN_FIELD or INVALID_FIELD */
    char field[128];      /* dotted path, e.g. "dense_tflops.fp8" */
    char detail[512];
};

/* Validates obj against fields (terminated by {NULL}). Returns 0, or -1 with *err. */
int spec_check(const json_t *obj, const struct spec_field *fields, struct spec_error *err);
/* spec_check, then a 400 problem on failure. Returns 0, or -1 after queueing the reply. */
int api_spec_check(struct api_req *r, const json_t *obj, const struct spec_field *fields);

/* Printable text without control characters (any UTF-8; jansson already checked it). */
int spec_printable(const char *s);

#endif
