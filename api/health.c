/* health.c — see health.h. */
#include "api/health.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gpu_models.h"
#include "api/list.h"
#include "api/resource.h"
#include "api/scope.h"
#include "common/util.h"

int api_valid_gpu_uuid(const char *s)
{
    size_t n = strlen(s);
    if (n < 8 || n > 79 || strncmp(s, "GPU-", 4) != 0)
        return 0;
    for (size_t i = 4; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
            return 0;
    return 1;
}

/* GET /v1/gpus's cursor key: "GPU-…/host id" (a UUID may be on two hosts). */
static int valid_gpu_key(const char *s)
{
    const char *slash = strchr(s, '/');
    if (slash == NULL || (size_t)(slash - s) > 79)
        return 0;
    char uuid[80];
    memcpy(uuid, s, (size_t)(slash - s));
    uuid[slash - s] = '\0';
    return api_valid_gpu_uuid(uuid) && api_valid_uuid(slash + 1);
}

static int valid_bool(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "false");
}

/* ---- GET /v1/hosts/{id}/health ---- */

enum MHD_Result api_hosts_health(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    return id ? api_get_document_in(r, id, "host", db_monitor_health) : MHD_YES;
}

/* ---- GET /v1/gpus ---- */

static int valid_gpu_name(const char *v)
{
    return strlen(v) <= 128;
}

static const struct list_filter gpu_filters[] = {
    {"host_id", api_valid_uuid, "a host id"},
    {"pool_id", api_valid_uuid, "a pool id"},
    {"gpu_model", api_valid_model_key, "a GPU model key"},
    {"name", valid_gpu_name, "a GPU name as nvidia-smi prints it (at most 128 characters)"},
    {"has_open_events", valid_bool, "true or false"},
    {"missing", valid_bool, "true or false"},
    {"project", NULL, "a project name or id"},
};
#define NGPU_FILTERS ((int)(sizeof gpu_filters / sizeof gpu_filters[0]))

static enum db_status gpu_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_gpu_filter f = {q->values[0], q->values[1], q->values[2], q->values[3], q->values[4],
                              q->values[5], q->after,     q->limit + 1, q->scope,     q->values[6]};
    return db_monitor_gpu_list(c, &f, page);
}

static const struct list_def gpu_list = {"gpu", gpu_filters, NGPU_FILTERS, valid_gpu_key,
                                         NULL,  NULL,        gpu_page};

enum MHD_Result api_gpus_list(struct api_req *r)
{
    return api_list_serve(r, &gpu_list);
}

/* ---- GET /v1/gpus/{uuid}/events ---- */

static int valid_event_kind(const char *v)
{
    static const char *const kinds[] = {"xid",           "sxid",        "fell_off_bus",
                                        "ecc",           "remap",       "fabric",
                                        "thermal",       "gpu_missing", "container_runtime",
                                        "unreachable",   "gpu_excess",  "gpu_uuid_duplicate",
                                        "kernel_log_gap"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(v, kinds[i]))
            return 1;
    return 0;
}

static const struct list_filter event_filters[] = {
    {"kind", valid_event_kind,
     "one of xid, sxid, fell_off_bus, ecc, remap, fabric, thermal, gpu_missing, "
     "container_runtime, unreachable, gpu_excess, gpu_uuid_duplicate, kernel_log_gap"},
    {"open", valid_bool, "true or false"},
};

struct events_arg {
    struct db_gpu_event_filter f;
    struct db_page page;
    int known;
};

static enum db_status events_fn(struct db_conn *c, void *arg)
{
    struct events_arg *a = arg;
    enum db_status s = db_monitor_gpu_events(c, &a->f, &a->page);
    a->known = 1;
    if (s == DB_NO_RESULTS)
        s = db_monitor_gpu_known(c, a->f.gpu_uuid, a->f.scope, &a->known);
    return s;
}

enum MHD_Result api_gpus_events(struct api_req *r)
{
    const char *uuid = api_param(r, 0);
    if (!api_valid_gpu_uuid(uuid))
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no GPU has this UUID");
    struct list_query q;
    if (api_list_parse(r, "gpu_event", event_filters, 2, &q) != 0)
        return MHD_YES;
    if (q.after != NULL && !api_valid_seq(q.after)) {
        api_list_query_free(&q);
        return api_reply_problem(r, API_ERR_INVALID_CURSOR, "cursor", "the cursor is not valid");
    }
    struct events_arg a = {
        {uuid, q.values[0], q.values[1], q.after, q.limit + 1, api_scope_read(r)}, {NULL}, 0};
    enum db_status s = db_run(events_fn, &a);
    long limit = q.limit;
    api_list_query_free(&q);
    return api_child_page_reply(r, s, a.known, &a.page, limit, "gpu_event", "no GPU has this UUID");
}

/* ---- GET /v1/hosts/{id}/samples ---- */

/* The width of a point of each grain, seconds. */
static const long grain_seconds[3] = {API_SAMPLES_RAW_SECONDS, 300, 3600};

/* Points per GPU series of a grain over [from, to): raw counts one per 10 s; a rollup
 * one per bucket that starts in the range, plus the one that holds from. */
static long points_of(int64_t from_us, int64_t to_us, enum db_monitor_grain g)
{
    int64_t w = (int64_t)grain_seconds[g] * 1000000;
    if (g == DB_GRAIN_RAW)
        return (long)((to_us - from_us + w - 1) / w);
    return (long)((util_ceil_us(to_us, w) - util_floor_us(from_us, w)) / w);
}

int api_samples_plan(const char *from, const char *to, const char *step, int64_t now_us,
                     struct api_samples_plan *out, const char **field, char *detail,
                     size_t detail_len)
{
    memset(out, 0, sizeof *out);
    out->to_us = now_us;
    if (to != NULL && util_parse_rfc3339(to, &out->to_us) != 0) {
        *field = "to";
        snprintf(detail, detail_len, "to must be an RFC 3339 time");
        return -1;
    }
    out->from_us = out->to_us - 3600LL * 1000000;
    if (from != NULL && util_parse_rfc3339(from, &out->from_us) != 0) {
        *field = "from";
        snprintf(detail, detail_len, "from must be an RFC 3339 time");
        return -1;
    }
    if (out->from_us >= out->to_us) {
        *field = "from";
        snprintf(detail, detail_len, "from must be before to");
        return -1;
    }
    if (step == NULL || !strcmp(step, "auto")) {
        int g = DB_GRAIN_RAW;
        while (g < DB_GRAIN_1H && points_of(out->from_us, out->to_us, (enum db_monitor_grain)g) >
                                      API_SAMPLES_MAX_POINTS)
            g++;
        out->grain = (enum db_monitor_grain)g;
        out->points = points_of(out->from_us, out->to_us, out->grain);
        if (out->points > API_SAMPLES_MAX_POINTS) {
            *field = "from";
            snprintf(detail, detail_len,
                     "from..to spans %ld hours; at most %d points of 1h per GPU are answered: "
                     "ask for a shorter range",
                     (long)((out->to_us - out->from_us) / 3600000000LL), API_SAMPLES_MAX_POINTS);
            return -1;
        }
        return 0;
    }
    int g = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(step, db_monitor_grain_names[i]))
            g = i;
    if (g < 0) {
        *field = "step";
        snprintf(detail, detail_len, "step must be raw, 5m, 1h or auto");
        return -1;
    }
    out->grain = (enum db_monitor_grain)g;
    out->points = points_of(out->from_us, out->to_us, out->grain);
    if (out->points > API_SAMPLES_MAX_POINTS) {
        *field = "step";
        snprintf(detail, detail_len,
                 "from..to holds up to %ld points of step %s per GPU%s; at most %d are answered: "
                 "choose a coarser step or a shorter range",
                 out->points, step, g == DB_GRAIN_RAW ? " (one per 10 s)" : "",
                 API_SAMPLES_MAX_POINTS);
        return -1;
    }
    return 0;
}

static int valid_step(const char *v)
{
    return !strcmp(v, "raw") || !strcmp(v, "5m") || !strcmp(v, "1h") || !strcmp(v, "auto");
}

static const struct list_filter sample_params[] = {
    {"from", api_valid_rfc3339, "an RFC 3339 time"},
    {"to", api_valid_rfc3339, "an RFC 3339 time"},
    {"step", valid_step, "raw, 5m, 1h or auto"},
};

struct samples_arg {
    const char *id, *scope;
    char from[40], to[40];
    enum db_monitor_grain grain;
    char *doc;
};

static enum db_status samples_fn(struct db_conn *c, void *arg)
{
    struct samples_arg *a = arg;
    return db_monitor_samples(c, a->id, a->from, a->to, a->grain, a->scope, &a->doc);
}

enum MHD_Result api_hosts_samples(struct api_req *r)
{
    const char *id = api_path_id(r, "host");
    if (id == NULL)
        return MHD_YES;
    struct list_query q;
    if (api_list_parse(r, NULL, sample_params, 3, &q) != 0)
        return MHD_YES;
    struct api_samples_plan plan;
    const char *field = NULL;
    char detail[256];
    int bad = api_samples_plan(q.values[0], q.values[1], q.values[2], util_now_us(), &plan, &field,
                               detail, sizeof detail);
    api_list_query_free(&q);
    if (bad)
        return api_reply_problem(r, API_ERR_INVALID_PARAMETER, field, "%s", detail);
    struct samples_arg a = {.id = id, .scope = api_scope_read(r), .grain = plan.grain};
    util_rfc3339(plan.from_us, a.from, sizeof a.from);
    util_rfc3339(plan.to_us, a.to, sizeof a.to);
    enum db_status s = db_run(samples_fn, &a);
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    if (a.doc == NULL)
        return api_reply_problem(r, API_ERR_NOT_FOUND, NULL, "no host has this id");
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
