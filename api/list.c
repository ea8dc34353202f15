/* list.c — see list.h. */
#include "api/list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/scope.h"
#include "common/sbuf.h"
#include "common/util.h"

int api_valid_rfc3339(const char *v)
{
    int64_t t;
    return util_parse_rfc3339(v, &t) == 0;
}

int api_valid_uuid(const char *v)
{
    return util_is_uuid(v);
}

int api_valid_name_prefix(const char *v)
{
    return strlen(v) <= 128;
}

int api_valid_seq(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int printable_utf8ish(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > LIST_MAX_VALUE)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return 0;
    return 1;
}

char *api_cursor_encode(const char *kind, const char *value)
{
    size_t n = strlen(kind) + 1 + strlen(value);
    char *plain = malloc(n + 1);
    if (plain == NULL)
        return NULL;
    snprintf(plain, n + 1, "%s:%s", kind, value);
    char *out = util_b64url_encode((const unsigned char *)plain, n);
    free(plain);
    return out;
}

char *api_cursor_decode(const char *kind, const char *cursor)
{
    unsigned char *raw;
    size_t len;
    if (cursor == NULL || strlen(cursor) > 1024 ||
        util_b64url_decode(cursor, strlen(cursor), &raw, &len) != 0)
        return NULL;
    size_t klen = strlen(kind);
    char *value = NULL;
    if (len > klen + 1 && memcmp(raw, kind, klen) == 0 && raw[klen] == ':' &&
        memchr(raw, '\0', len) == NULL && printable_utf8ish((const char *)raw + klen + 1))
        value = strdup((const char *)raw + klen + 1);
    free(raw);
    return value;
}

struct parse_state {
    struct api_req *r;
    const char *cursor_kind;
    const struct list_filter *filters;
    int nfilters;
    struct list_query *q;
    const char *limit_s, *cursor_s;
    int failed;
};

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    struct parse_state *st = cls;
    struct api_req *r = st->r;
    const char *v = value ? value : "";
    if (st->cursor_kind != NULL && (strcmp(key, "limit") == 0 || strcmp(key, "cursor") == 0)) {
        const char **slot = key[0] == 'l' ? &st->limit_s : &st->cursor_s;
        if (*slot != NULL) {
            api_reply_problem(r, API_ERR_INVALID_PARAMETER, key, "%s is given more than once", key);
            goto fail;
        }
        *slot = v;
        return MHD_YES;
    }
    for (int i = 0; i < st->nfilters; i++) {
        if (strcmp(key, st->filters[i].name) != 0)
            continue;
        if (st->q->values[i] != NULL) {
            api_reply_problem(r, API_ERR_INVALID_PARAMETER, key, "%s is given more than once", key);
            goto fail;
        }
        if (!printable_utf8ish(v) || (st->filters[i].valid && !st->filters[i].valid(v))) {
            api_reply_problem(r, API_ERR_INVALID_PARAMETER, key, "%s must be %s", key,
                              st->filters[i].expect ? st->filters[i].expect
                                                    : "1-256 printable characters");
            goto fail;
        }
        st->q->values[i] = v;
        return MHD_YES;
    }
    {
        char known[256] = "";
        if (st->cursor_kind != NULL)
            snprintf(known, sizeof known, "limit, cursor");
        for (int i = 0; i < st->nfilters; i++) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
                     st->filters[i].name);
        }
        if (known[0] == '\0')
            snprintf(known, sizeof known, "none");
        json_t *probe = json_string(key); /* the name is echoed only if it is valid UTF-8 */
        api_reply_problem(r, API_ERR_UNKNOWN_PARAMETER, probe ? key : "?",
                          "unknown query parameter \"%.64s\"; this route accepts: %s",
                          probe ? key : "?", known);
        json_decref(probe);
    }
fail:
    st->failed = 1;
    return MHD_NO;
}

int api_list_parse(struct api_req *r, const char *cursor_kind, const struct list_filter *filters,
                   int nfilters, struct list_query *q)
{
    memset(q, 0, sizeof *q);
    q->limit = LIST_DEFAULT_LIMIT;
    struct parse_state st = {r, cursor_kind, filters, nfilters, q, NULL, NULL, 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, each_arg, &st);
    if (st.failed)
        return -1;
    if (st.limit_s != NULL && util_parse_long(st.limit_s, 1, LIST_MAX_LIMIT, &q->limit) != 0) {
        api_reply_problem(r, API_ERR_INVALID_PARAMETER, "limit",
                          "limit must be a whole number from 1 to %d", LIST_MAX_LIMIT);
        return -1;
    }
    if (st.cursor_s != NULL) {
        q->after = api_cursor_decode(cursor_kind, st.cursor_s);
        if (q->after == NULL) {
            api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor",
                              "the cursor is not one this list returned; start again "
                              "without it");
            return -1;
        }
    }
    return 0;
}

void api_list_query_free(struct list_query *q)
{
    free(q->after);
    q->after = NULL;
}

enum MHD_Result api_list_reply(struct api_req *r, json_t *items, long limit,
                               const char *cursor_kind, const char *key_field)
{
    json_t *next = json_null();
    if ((long)json_array_size(items) > limit) {
        json_array_remove(items, (size_t)limit);
        json_t *last = json_array_get(items, (size_t)limit - 1);
        json_t *k = json_object_get(last, key_field);
        char buf[64];
        const char *kv = json_string_value(k);
        if (kv == NULL && json_is_integer(k)) {
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(k));
            kv = buf;
        }
        char *c = kv ? api_cursor_encode(cursor_kind, kv) : NULL;
        if (c != NULL) {
            json_decref(next);
            next = json_string(c);
            free(c);
        }
    }
    if (key_field[0] == '_') { /* a hidden keyset column, not part of the item */
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) json_object_del(it, key_field);
    }
    json_t *env = json_object();
    json_object_set_new(env, "items", items);
    json_object_set_new(env, "next_cursor", next);
    return api_reply_json(r, MHD_HTTP_OK, env, NULL);
}

enum MHD_Result api_page_reply(struct api_req *r, const struct db_page *page, long limit,
                               const char *cursor_kind)
{
    int n = db_page_count(page);
    int shown = (long)n > limit ? (int)limit : n;
    struct sbuf b;
    sbuf_init(&b, 4096 + (size_t)shown * 768);
    sbuf_adds(&b, "{\"items\":[");
    for (int i = 0; i < shown; i++) {
        if (i > 0)
            sbuf_add(&b, ",", 1);
        sbuf_adds(&b, db_page_doc(page, i));
    }
    sbuf_adds(&b, "]");
    if (cursor_kind != NULL) {
        char *c = shown < n ? api_cursor_encode(cursor_kind, db_page_key(page, shown - 1)) : NULL;
        if (c != NULL)
            sbuf_printf(&b, ",\"next_cursor\":\"%s\"}", c);
        else
            sbuf_adds(&b, ",\"next_cursor\":null}");
        free(c);
    } else {
        sbuf_adds(&b, "}");
    }
    return api_reply_text(r, MHD_HTTP_OK, sbuf_take(&b, NULL), NULL);
}

enum MHD_Result api_child_page_reply(struct api_req *r, enum db_status s, int parent_known,
                                     struct db_page *page, long limit, const char *cursor_kind,
                                     const char *not_found)
{
    enum MHD_Result ret;
    if (s < 0)
        ret = api_reply_db(r, s);
    else if (!parent_known)
        ret = api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "%s", not_found);
    else
        ret = api_page_reply(r, page, limit, cursor_kind);
    db_page_clear(page);
    return ret;
}

struct serve_arg {
    const struct list_def *def;
    const struct list_query *q;
    json_t *items;
    struct db_page page;
};

static enum db_status serve_fn(struct db_conn *c, void *arg)
{
    struct serve_arg *a = arg;
    if (a->def->fetch_page != NULL)
        return a->def->fetch_page(c, a->q, &a->page);
    return a->def->fetch(c, a->q, a->items);
}

enum MHD_Result api_list_serve(struct api_req *r, const struct list_def *def)
{
    struct list_query q;
    if (api_list_parse(r, def->kind, def->filters, def->nfilters, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && def->valid_key != NULL && !def->valid_key(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    /* The projects where the caller holds one of the route's roles: what it may read (an
     * admin-only list, such as credentials, shows only the projects it administers). */
    q.scope = api_scope_route(r);
    for (int i = 0; i < def->nfilters; i++) {
        if (strcmp(def->filters[i].name, "project") != 0 || q.values[i] == NULL)
            continue;
        if (api_filter_project(r, q.values[i], q.project_id) != 0) {
            api_list_query_free(&q);
            return MHD_YES;
        }
        q.values[i] = q.project_id;
    }
    struct serve_arg a = {def, &q, def->fetch ? json_array() : NULL, {NULL}};
    enum db_status s = db_run(serve_fn, &a);
    long limit = q.limit;
    api_list_query_free(&q);
    if (s < 0) {
        json_decref(a.items);
        db_page_clear(&a.page);
        return api_reply_db(r, s);
    }
    if (def->fetch_page != NULL) {
        enum MHD_Result ret = api_page_reply(r, &a.page, limit, def->kind);
        db_page_clear(&a.page);
        return ret;
    }
    return api_list_reply(r, a.items, limit, def->kind, def->key_field);
}
