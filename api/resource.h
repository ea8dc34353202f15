/* resource.h — request patterns shared by resource families. */
#ifndef GPUFLEET_RESOURCE_H
#define GPUFLEET_RESOURCE_H

#include "api/http.h"

/* DELETE of one row: 204 and an audit event in the same transaction, 404 when absent,
 * 409 when a foreign key still references it. */
struct api_delete_def {
    const char *what;          /* "brief": for the 404 detail */
    const char *action;        /* "brief.delete" */
    enum db_status (*del)(struct db_conn *c, const char *id);
    enum api_error in_use;     /* the 409 code */
    const char *in_use_detail; /* what to do about it */
};
/* id must already be validated (a UUID). */
enum MHD_Result api_delete_resource(struct api_req *r, const char *id,
                                    const struct api_delete_def *d);

/* GET of one document rendered by PostgreSQL: 200 with an ETag (304 on If-None-Match), 404
 * when absent, 503/500 for database failures. id must already be validated. */
typedef enum db_status (*api_doc_fetch)(struct db_conn *c, const char *id, char **doc);
enum MHD_Result api_get_document(struct api_req *r, const char *id, const char *what,
                                 api_doc_fetch fetch);

#endif
