/* list.h — query parameters and keyset cursor pagination shared by every list.
 * Reply shape: {"items": [...], "next_cursor": "..." | null}. */
#ifndef GPUFLEET_LIST_H
#define GPUFLEET_LIST_H

#include "api/http.h"

#define LIST_DEFAULT_LIMIT 50
#define LIST_MAX_LIMIT     500
#define LIST_MAX_FILTERS   8
#define LIST_MAX_VALUE     256

/* A filter: name and, optionally, a validator for its value (NULL accepts any printable
 * text up to LIST_MAX_VALUE bytes). */
struct list_filter {
    const char *name;
    int (*valid)(const char *value);
    const char *expect; /* words for the problem detail, e.g. "an RFC 3339 time" */
};

struct list_query {
    long limit;
    char *after;                          /* decoded cursor position, or NULL (owned) */
    const char *values[LIST_MAX_FILTERS]; /* MHD-owned, index as in the filter table */
    /* Set by api_list_serve: the caller's scope for the route (api_scope_route: the projects
     * where it holds one of the route's roles, as a uuid[] literal; NULL for every
     * project), and the ?project= filter as a project id (a list whose filter table has a
     * "project" entry; its value is then this id). */
    const char *scope;
    char project_id[37];
};

/* Parses limit, cursor (of the given kind) and the filters. Unknown or repeated
 * parameters are refused. With cursor_kind NULL only the filters are accepted (routes
 * that take query options but do not paginate). Returns 0, or -1 after queueing a 400 problem. */
int api_list_parse(struct api_req *r, const char *cursor_kind, const struct list_filter *filters,
                   int nfilters, struct list_query *q);
void api_list_query_free(struct list_query *q);

/* Opaque cursor: base64url("kind:value"). Caller frees. */
char *api_cursor_encode(const char *kind, const char *value);
/* Returns the decoded value (caller frees) or NULL when the cursor is not ours/valid. */
char *api_cursor_decode(const char *kind, const char *cursor);

/* Builds the envelope from items (stolen). When items holds more than limit entries,
 * the extra one is dropped and next_cursor is made from the last kept item's key field.
 * A key_field starting with '_' is a hidden keyset value and is removed from every item.
 * Then replies 200 (with ETag / 304). */
enum MHD_Result api_list_reply(struct api_req *r, json_t *items, long limit,
                               const char *cursor_kind, const char *key_field);

/* A list endpoint, declared: the cursor kind, the filters, how the keyset is checked,
 * and how one page is fetched. fetch appends up to q->limit + 1 rows (the extra one
 * tells that a next page exists) to items. */
struct list_def {
    const char *kind;
    const struct list_filter *filters;
    int nfilters;
    int (*valid_key)(const char *key); /* keyset value check for decoded cursors */
    const char *key_field;             /* see api_list_reply */
    /* One of the two: rows built as JSON here, or documents rendered by PostgreSQL. */
    enum db_status (*fetch)(struct db_conn *c, const struct list_query *q, json_t *items);
    enum db_status (*fetch_page)(struct db_conn *c, const struct list_query *q,
                                 struct db_page *page);
};
/* Parses the query, fetches a page on a pooled connection and replies. */
enum MHD_Result api_list_serve(struct api_req *r, const struct list_def *def);

/* Builds {"items":[docs…],"next_cursor":…} from a page of at most limit + 1 rows and
 * replies 200. With a cursor kind of NULL, no next_cursor member is written. */
enum MHD_Result api_page_reply(struct api_req *r, const struct db_page *page, long limit,
                               const char *cursor_kind);

/* The answer to a page of rows under a parent (a GPU's events, a webhook's deliveries)
 * fetched with status s: the database problem, 404 with not_found when the parent is not
 * known (or not in the caller's scope), else the page. Clears page in every case. */
enum MHD_Result api_child_page_reply(struct api_req *r, enum db_status s, int parent_known,
                                     struct db_page *page, long limit, const char *cursor_kind,
                                     const char *not_found);

/* Validators usable in filter tables. */
int api_valid_rfc3339(const char *v);
int api_valid_uuid(const char *v);
int api_valid_seq(const char *v);         /* a keyset sequence number */
int api_valid_name_prefix(const char *v); /* a name_prefix filter: at most 128 bytes */

#endif
