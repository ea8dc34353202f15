/* jsonspec.h — declarative validation and extraction of JSON request bodies, after GNU
 * Taler's JSON specs. One table per body and one call, which validates every member
 * (a 400 that names the field) and fills the caller's typed fields in the same pass, so
 * that handlers never walk the body with json_object_get chains. */
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
    SPEC_ARRAY,      /* array of min..max items, each described by children[0] (if any) */
    SPEC_MAP,        /* object of ≤ max entries: keys pass check, values children[0] */
};

/* Where a member's value goes: a field of the caller's output struct, whose C type
 * gives the kind (see SPEC_TO). */
enum spec_dst_kind {
    SPEC_DST_NONE = 0, /* validated only */
    SPEC_DST_STRING,   /* const char *: STRING, ENUM */
    SPEC_DST_INT,      /* json_int_t: INTEGER */
    SPEC_DST_NUMBER,   /* double: NUMBER, INTEGER */
    SPEC_DST_BOOL,     /* int (0 or 1): BOOL */
    SPEC_DST_JSON,     /* const json_t *: any type (objects, arrays, maps, raw strings) */
};

struct spec_dst {
    enum spec_dst_kind kind;
    size_t off;  /* offset of the field in the output struct */
    size_t seen; /* 1 + offset of an int set to 1 when the member has a value; 0: none */
};

/* The kind of destination that a field of this C type is. Any other type is a compile
 * error. */
#define SPEC_DST_KIND(x) \
    _Generic((x), const char *: SPEC_DST_STRING, json_int_t: SPEC_DST_INT,                      \
             double: SPEC_DST_NUMBER, int: SPEC_DST_BOOL, const json_t *: SPEC_DST_JSON)
/* The value goes to field m of struct type T. */
#define SPEC_TO(T, m)                                 \
    {                                                 \
        SPEC_DST_KIND(((T *)0)->m), offsetof(T, m), 0 \
    }
/* The same, and the int field seen of T is set to 1 when the member has a value. */
#define SPEC_TO_SEEN(T, m, seen)                                                  \
    {                                                                             \
        SPEC_DST_KIND(((T *)0)->m), offsetof(T, m),                               \
            offsetof(T, seen) + 1 + 0 * sizeof(_Generic(((T *)0)->seen, int : 1)) \
    }
/* Validated only. */
#define SPEC_NONE           \
    {                       \
        SPEC_DST_NONE, 0, 0 \
    }

struct spec_field {
    const char *name;
    enum spec_type type;
    unsigned flags;
    double min, max;                /* numbers: inclusive range; strings/arrays: length range */
    int (*check)(const char *);     /* strings: extra validator (pattern) */
    const char *expect;             /* words for the detail, e.g. "lowercase letters, digits, _" */
    const char *const *enum_values; /* NULL-terminated */
    const struct spec_field *children; /* terminated by SPEC_END; one item for ARRAY/MAP */
    struct spec_dst to;                /* SPEC_TO(…), SPEC_TO_SEEN(…) or SPEC_NONE */
};
#define SPEC_END                                            \
    {                                                       \
        NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE \
    }

enum spec_flags {
    SPEC_REQUIRED = 1,
    SPEC_NULLABLE = 2, /* JSON null accepted for an optional field */
    SPEC_EXCLUSIVE_MIN = 4,
    SPEC_RAW = 8, /* STRING: only the type is checked; the caller checks length and content
                   * (text with newlines, such as a PEM key) */
};

struct spec_error {
    enum api_error code; /* MISSING_FIELD, UNKNOWN_FIELD or INVALID_FIELD */
    char field[128];     /* dotted path, e.g. "dense_tflops.fp8" */
    char detail[512];
};

/* Validates obj against fields (terminated by SPEC_END) and, when out is not NULL, fills
 * the destinations the fields name in the struct out points to. Members of a nested
 * OBJECT fill the same struct; the items of an ARRAY or MAP are validated only (parse
 * each item with its own call when its members are needed). An absent member, or a null
 * one, leaves its destination as the caller set it (a default) and its seen flag alone.
 * Strings and json_t values are borrowed from obj: valid while obj lives (for a request
 * body, until the request ends). Returns 0, or -1 with *err (the destinations are then
 * partly filled and must not be used). */
int spec_parse(const json_t *obj, const struct spec_field *fields, void *out,
               struct spec_error *err);
/* spec_parse, then a 400 problem on failure. Returns 0, or -1 after queueing the reply. */
int api_spec_parse(struct api_req *r, const json_t *obj, const struct spec_field *fields,
                   void *out);

/* Printable text without control characters (any UTF-8; jansson already checked it). */
int spec_printable(const char *s);

#endif
