/* jw.h — a small streaming JSON writer for hot paths where building a jansson tree and
 * dumping it costs more than the work itself (sizing answers). Keys are trusted literals;
 * string values are escaped. */
#ifndef GPUFLEET_JW_H
#define GPUFLEET_JW_H

#include "common/sbuf.h"

#define JW_MAX_DEPTH 16

struct jw {
    struct sbuf b;
    int depth;
    int count[JW_MAX_DEPTH]; /* members written at each level, for commas */
};

void jw_init(struct jw *w, size_t cap);
/* key is NULL inside arrays and for the top-level value. */
void jw_obj(struct jw *w, const char *key);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w, const char *key);
void jw_arr_end(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *val); /* NULL writes null */
void jw_int(struct jw *w, const char *key, long long v);
void jw_num(struct jw *w, const char *key, double v); /* shortest of %.15g */
void jw_bool(struct jw *w, const char *key, int v);
void jw_null(struct jw *w, const char *key);
/* The document (caller frees), or NULL after an allocation failure. */
char *jw_take(struct jw *w);

#endif
