/* ui.h — the built-in status page: static files embedded at build time
 * (scripts/embed ui, build/gen/ui_blob.c) and served under /ui/. */
#ifndef GPUFLEET_UI_H
#define GPUFLEET_UI_H

#include <stddef.h>

#include "api/http.h"

struct api_ui_file {
    const char *name;         /* "index.html": a file name, no directory */
    const char *content_type; /* with charset for text */
    const unsigned char *data;
    size_t len;
    const char *etag; /* quoted SHA-256 prefix of data */
};

/* The embedded table (generated). */
extern const struct api_ui_file api_ui_files[];
extern const size_t api_ui_files_count;

/* The embedded file with exactly this name, or NULL. Nothing else can be served. */
const struct api_ui_file *api_ui_find(const char *name);

/* True when path is /ui or under /ui/. */
int api_ui_path(const char *path);

enum MHD_Result api_ui_redirect(struct api_req *r); /* GET /ui → 308 /ui/ */
enum MHD_Result api_ui_index(struct api_req *r);    /* GET /ui/ → index.html */
enum MHD_Result api_ui_file(struct api_req *r);     /* GET /ui/{file} */

#endif
