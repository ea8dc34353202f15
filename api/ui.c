/* ui.c — serves the status page from the files embedded in the binary. A request names a
 * file; it is looked up by exact name in the embedded table, never on the file system, so
 * nothing outside that table can be served whatever the path holds (dot segments, encoded
 * slashes: MHD unescapes the path, and a name with a '/' matches no route). */
#include "api/ui.h"

#include <string.h>

const struct api_ui_file *api_ui_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < api_ui_files_count; i++)
        if (strcmp(api_ui_files[i].name, name) == 0)
            return &api_ui_files[i];
    return NULL;
}

int api_ui_path(const char *path)
{
    return path != NULL && strncmp(path, "/ui", 3) == 0 && (path[3] == '\0' || path[3] == '/');
}

static enum MHD_Result serve(struct api_req *r, const struct api_ui_file *f)
{
    unsigned status = MHD_HTTP_OK;
    struct MHD_Response *resp;
    if (api_etag_matches(api_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH), f->etag, 1)) {
        status = MHD_HTTP_NOT_MODIFIED;
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL)
        return MHD_NO;
    if (status == MHD_HTTP_OK)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, f->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, f->etag);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    return api_queue(r, status, resp);
}

enum MHD_Result api_ui_redirect(struct api_req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, "/ui/");
    return api_queue(r, MHD_HTTP_PERMANENT_REDIRECT, resp);
}

enum MHD_Result api_ui_index(struct api_req *r)
{
    const struct api_ui_file *f = api_ui_find("index.html");
    if (f == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "this build has no status page");
    return serve(r, f);
}

enum MHD_Result api_ui_file(struct api_req *r)
{
    const struct api_ui_file *f = api_ui_find(api_param(r, 0));
    if (f == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "the status page has no such file");
    return serve(r, f);
}
