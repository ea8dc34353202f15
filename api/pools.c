/* pools.c — host pools. Field rules are declared in pool_spec; the cross-field rules
 * (separate paths, stop command with auto_stop) follow, then defaults are filled in so
 * that the stored document is complete. Every string that reaches a remote command
 * (stop_command, the paths, the workload command) is held to a strict pattern here; the
 * provisioner single-quotes it again when it builds a command. */
#include "api/pools.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/resource.h"
#include "db/pools.h"
#include "planner/recommend.h"
#include "service/host_commands.h"

/* ---- patterns ---- */

int api_pool_valid_stop_command(const char *s)
{
    if (!(isalnum((unsigned char)s[0]) || s[0] == '/'))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr(" ._/=:-", *s) == NULL)
            return 0;
    return 1;
}

/* ^/[A-Za-z0-9._/-]+$, not "/", no empty, "." or ".." component, no trailing slash. */
int api_pool_valid_path(const char *s)
{
    if (s[0] != '/' || s[1] == '\0')
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && strchr("._/-", *p) == NULL)
            return 0;
    const char *c = s + 1;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (e == NULL)
            return 1;
        c = e + 1;
    }
}

static int valid_link_token(const char *t, size_t n)
{
    static const char *const words[] = {"NV*", "PIX", "PXB", "PHB", "NODE", "SYS"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (n == strlen(words[i]) && strncmp(t, words[i], n) == 0)
            return 1;
    if (n < 3 || n > 4 || t[0] != 'N' || t[1] != 'V' || t[2] == '0')
        return 0;
    int v = 0;
    for (size_t i = 2; i < n; i++) {
        if (!isdigit((unsigned char)t[i]))
            return 0;
        v = v * 10 + (t[i] - '0');
    }
    return v >= 1 && v <= 18;
}

/* "any", or a comma list of NV*, NV1..NV18, PIX, PXB, PHB, NODE, SYS. */
int api_pool_valid_link_class(const char *s)
{
    if (strcmp(s, "any") == 0)
        return 1;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (!valid_link_token(s, n))
            return 0;
        if (e == NULL)
            return 1;
        s = e + 1;
    }
}

/* ^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~/%-]*)?$ */
static int valid_url(const char *s)
{
    if (strncmp(s, "http://", 7) == 0)
        s += 7;
    else if (strncmp(s, "https://", 8) == 0)
        s += 8;
    else
        return 0;
    size_t host = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:[]-");
    if (host == 0)
        return 0;
    /* '[' and ']' only around an IPv6 literal ("[::1]:9400"): anything else is what curl
     * would expand as a glob ("h[1-9]"); the check runs curl -g as well */
    const char *open_b = memchr(s, '[', host), *close_b = memchr(s, ']', host);
    if (open_b != NULL || close_b != NULL) {
        size_t v6 = open_b == s ? strspn(s + 1, "0123456789abcdefABCDEF:.") : 0;
        if (v6 == 0 || close_b != s + 1 + v6 || memchr(close_b + 1, '[', host - v6 - 2) ||
            memchr(close_b + 1, ']', host - v6 - 2) ||
            (close_b + 1 < s + host && close_b[1] != ':'))
            return 0;
    }
    s += host;
    if (*s == '\0')
        return 1;
    if (*s != '/')
        return 0;
    return s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~/%-")] ==
           '\0';
}

static int valid_metric(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz_") == n;
}

static int valid_gpu_model(const char *s)
{
    size_t n = strlen(s);
    return n >= 2 && n <= 64 && (islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])) &&
           strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* ---- spec ---- */

static const char *const interconnects[] = {"any", "pcie", "nvlink", NULL};
static const char *const check_names[] = {"gpu_inventory", "container_gpu", "workload",  "topology",
                                          "storage",       "observability", "bandwidth", NULL};

/* What the cross-field rules read; the pool itself is stored whole (with defaults). */
struct pool_in {
    const char *durable_path, *scratch_path, *stop_command;
    int auto_stop;
    double scale_up, scale_down;
    int has_scale_up, has_scale_down;
};

#define TO(m) SPEC_TO(struct pool_in, m)
#define NUM_TO(name, flags, lo, hi, to)                              \
    {                                                                \
        name, SPEC_NUMBER, flags, lo, hi, NULL, NULL, NULL, NULL, to \
    }
#define NUM(name, flags, lo, hi) NUM_TO(name, flags, lo, hi, SPEC_NONE)
#define INT(name, flags, lo, hi)                                             \
    {                                                                        \
        name, SPEC_INTEGER, flags, lo, hi, NULL, NULL, NULL, NULL, SPEC_NONE \
    }
#define PATH(name, to)                                                                             \
    {                                                                                              \
        name, SPEC_STRING, SPEC_REQUIRED, 2, 512, api_pool_valid_path,                             \
            "an absolute path of letters, digits and ._-, without . or .. components", NULL, NULL, \
            to                                                                                     \
    }

static const struct spec_field command_item[] = {
    {"", SPEC_STRING, 0, 1, 1024, NULL, NULL, NULL, NULL, SPEC_NONE},
};
static const char *const workload_caches[] = {"warm", "cold", NULL};
static const struct spec_field workload_spec[] = {
    {"command", SPEC_ARRAY, SPEC_REQUIRED, 1, 64, NULL, NULL, NULL, command_item, SPEC_NONE},
    {"metric", SPEC_STRING, SPEC_REQUIRED, 1, 64, valid_metric, "lowercase letters and _", NULL,
     NULL, SPEC_NONE},
    NUM("min", SPEC_REQUIRED, -1e15, 1e15),
    INT("timeout_s", 0, 1, 3600),
    /* the conditions of the baseline it records (docs/rollouts.md §1) */
    {"input", SPEC_STRING, 0, 1, 200, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("concurrency", 0, 1, 1000000),
    {"cache", SPEC_ENUM, 0, 0, 0, NULL, NULL, workload_caches, NULL, SPEC_NONE},
    SPEC_END,
};
/* gate.storage: the storage_throughput check (docs/hosts-and-gates.md). The artifact is a
 * path relative to durable_path with the pattern of the paths. */
static int valid_artifact(const char *s)
{
    char abs[520];
    return s[0] != '/' && snprintf(abs, sizeof abs, "/%s", s) < (int)sizeof abs &&
           api_pool_valid_path(abs);
}
static const char *const storage_tools[] = {"auto", "dd", "fio", NULL};
static const struct spec_field storage_spec[] = {
    INT("read_size_mib", 0, 16, 1048576),
    INT("write_size_mib", 0, 16, 65536),
    {"artifact", SPEC_STRING, 0, 1, 500, valid_artifact,
     "a path relative to durable_path: letters, digits and ._-/, without . or .. components", NULL,
     NULL, SPEC_NONE},
    {"tool", SPEC_ENUM, 0, 0, 0, NULL, NULL, storage_tools, NULL, SPEC_NONE},
    NUM("min_read_mbps", SPEC_EXCLUSIVE_MIN, 0, 1e6),
    NUM("min_write_mbps", SPEC_EXCLUSIVE_MIN, 0, 1e6),
    {"require", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("timeout_s", 0, 1, 3600),
    SPEC_END,
};
static const char *const check_enum[] = {
    "gpu_inventory", "container_gpu", "workload",           "topology", "storage",
    "observability", "bandwidth",     "storage_throughput", NULL};
/* gate.bandwidth (issue 26; provisioner/jobs/gate_bandwidth.c, docs/hosts-and-gates.md) */
static const char *const bw_tools[] = {"nccl", "nvbandwidth", "both", NULL};
static const struct spec_field bandwidth_spec[] = {
    {"tool", SPEC_ENUM, 0, 0, 0, NULL, NULL, bw_tools, NULL, SPEC_NONE},
    {"path", SPEC_STRING, 0, 2, 256, api_pool_valid_path,
     "an absolute path of letters, digits and ._-, without . or .. components", NULL, NULL,
     SPEC_NONE},
    {"require", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"host_to_device", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    NUM("min_allreduce_busbw_gbps", SPEC_EXCLUSIVE_MIN, 0, 10000),
    NUM("min_d2d_gbps", SPEC_EXCLUSIVE_MIN, 0, 10000),
    INT("min_bytes_mib", 0, 1, 1024),
    INT("max_bytes_mib", 0, 1, 16384),
    INT("iterations", 0, 1, 100),
    INT("timeout_seconds", 0, 5, 3600),
    INT("expect_numa_nodes", 0, 1, 64),
    SPEC_END,
};
static const struct spec_field gate_spec[] = {
    {"storage", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, storage_spec, SPEC_NONE},
    NUM("storage_min_mbps", SPEC_EXCLUSIVE_MIN, 0, 1e6),
    {"workload", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, workload_spec, SPEC_NONE},
    {"link_class", SPEC_STRING, 0, 1, 128, api_pool_valid_link_class,
     "\"any\" or a comma list of NV*, NV1..NV18, PIX, PXB, PHB, NODE, SYS", NULL, NULL, SPEC_NONE},
    {"observability_url", SPEC_STRING, 0, 1, 256, valid_url,
     "an http(s) URL: letters, digits and .:- in the host (or an IPv6 literal in []), ._~/%- "
     "in the path",
     NULL, NULL, SPEC_NONE},
    {"checks", SPEC_ENUM_ARRAY, 0, 1, 8, NULL, NULL, check_enum, NULL, SPEC_NONE},
    {"bandwidth", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, bandwidth_spec, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field thresholds_spec[] = {
    NUM_TO("scale_up_utilization", SPEC_EXCLUSIVE_MIN, 0, 1,
           SPEC_TO_SEEN(struct pool_in, scale_up, has_scale_up)),
    NUM_TO("scale_down_utilization", 0, 0, 1,
           SPEC_TO_SEEN(struct pool_in, scale_down, has_scale_down)),
    NUM("investigate_failed_share", SPEC_EXCLUSIVE_MIN, 0, 1),
    NUM("investigate_cost_increase", SPEC_EXCLUSIVE_MIN, 0, 100),
    SPEC_END,
};
/* monitor.xid_policy: {"79": "record", "13": "isolate"} overrides the catalog's policy. */
static int valid_xid_code(const char *v)
{
    char *end;
    long code = strtol(v, &end, 10);
    return v[0] >= '1' && v[0] <= '9' && *end == '\0' && code >= 1 && code <= 65535;
}
static const char *const xid_policies[] = {"isolate", "record", NULL};
static const struct spec_field xid_policy_value[] = {
    {"", SPEC_ENUM, 0, 0, 0, NULL, NULL, xid_policies, NULL, SPEC_NONE},
};
static const struct spec_field monitor_spec[] = {
    {"enabled", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("interval_seconds", 0, 10, 3600),
    INT("unreachable_after", 0, 1, 100),
    {"xid_policy", SPEC_MAP, 0, 0, 64, valid_xid_code, "an Xid code from 1 to 65535", NULL,
     xid_policy_value, SPEC_NONE},
    /* drain → diagnostics → gate → ready after an isolation (planner/recovery.h) */
    {"auto_recover", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, SPEC_NONE},
    INT("recovery_diagnostics_level", 0, 1, 3),
    SPEC_END,
};
/* durable_state and drill (restore drills, issue 27; docs/hosts-and-gates.md): artifacts by
 * path relative to durable_path (the pattern of gate.storage.artifact), each with its
 * sha256 (64 lowercase hex digits), at most 16. */
static int valid_sha256(const char *s)
{
    return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}
static const struct spec_field durable_artifact_fields[] = {
    {"path", SPEC_STRING, SPEC_REQUIRED, 1, 200, valid_artifact,
     "a path relative to durable_path: letters, digits and ._-/, without . or .. components", NULL,
     NULL, SPEC_NONE},
    {"sha256", SPEC_STRING, SPEC_REQUIRED, 64, 64, valid_sha256, "64 lowercase hex digits", NULL,
     NULL, SPEC_NONE},
    SPEC_END,
};
static const struct spec_field durable_artifact_item[] = {
    {"", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, durable_artifact_fields, SPEC_NONE},
};
static const struct spec_field durable_state_spec[] = {
    {"artifacts", SPEC_ARRAY, SPEC_REQUIRED, 1, 16, NULL, NULL, NULL, durable_artifact_item,
     SPEC_NONE},
    SPEC_END,
};
static const struct spec_field drill_spec[] = {
    INT("max_recovery_seconds", SPEC_REQUIRED, 1, 86400),
    INT("every_days", 0, 1, 365),
    SPEC_END,
};
static const struct spec_field pool_spec[] = {
    {"name", SPEC_STRING, SPEC_REQUIRED, 1, 128, NULL, NULL, NULL, NULL, SPEC_NONE},
    {"gpu_model", SPEC_STRING, SPEC_REQUIRED, 2, 64, valid_gpu_model,
     "a GPU model key from /v1/gpu-models", NULL, NULL, SPEC_NONE},
    INT("gpu_count", SPEC_REQUIRED, 1, 64),
    {"interconnect", SPEC_ENUM, 0, 0, 0, NULL, NULL, interconnects, NULL, SPEC_NONE},
    NUM("price_per_hour", SPEC_REQUIRED, 0, 100000),
    NUM("storage_price_per_gb_month", 0, 0, 100000),
    NUM("egress_price_per_gb", 0, 0, 100000),
    NUM("overhead_pct", 0, 0, 100),
    INT("idle_stop_after_seconds", 0, 60, 2592000),
    NUM("idle_gpu_utilization_pct", 0, 0, 100),
    NUM("retry_budget_pct", SPEC_EXCLUSIVE_MIN, 0, 100), /* planner/recommend_retry.h */
    {"auto_stop", SPEC_BOOL, 0, 0, 0, NULL, NULL, NULL, NULL, TO(auto_stop)},
    {"recommendation_thresholds", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, thresholds_spec,
     SPEC_NONE},
    {"stop_command", SPEC_STRING, 0, 1, 512, api_pool_valid_stop_command,
     "letters, digits, spaces and ._/=:- only, starting with a letter, digit or / "
     "(e.g. sudo /usr/sbin/poweroff)",
     NULL, NULL, TO(stop_command)},
    PATH("durable_path", TO(durable_path)),
    PATH("scratch_path", TO(scratch_path)),
    {"gate", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, gate_spec, SPEC_NONE},
    {"monitor", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, monitor_spec, SPEC_NONE},
    {"durable_state", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, durable_state_spec, SPEC_NONE},
    {"drill", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, drill_spec, SPEC_NONE},
    SPEC_END,
};

/* True when path a is b or lies inside b. */
static int inside(const char *a, const char *b)
{
    size_t n = strlen(b);
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

static void set_default(json_t *obj, const char *key, json_t *value)
{
    if (json_object_get(obj, key) == NULL)
        json_object_set_new(obj, key, value);
    else
        json_decref(value);
}

/* Validates r->json and returns the document to store (defaults filled in; caller
 * decrefs), or NULL after replying 400. */
static json_t *pool_check(struct api_req *r)
{
    const json_t *body = r->json;
    struct pool_in in = {.scale_up = PLAN_REC_UTIL_HIGH, .scale_down = PLAN_REC_UTIL_LOW};
    if (api_spec_parse(r, body, pool_spec, &in) != 0)
        return NULL;
    const char *durable = in.durable_path, *scratch = in.scratch_path;
    if (strcmp(durable, scratch) == 0) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "scratch_path",
                          "scratch_path must differ from durable_path: durable state is kept "
                          "apart from scratch");
        return NULL;
    }
    if (inside(scratch, durable) || inside(durable, scratch)) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "scratch_path",
                          "scratch_path and durable_path must not lie inside one another");
        return NULL;
    }
    if (in.auto_stop && in.stop_command == NULL) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "stop_command",
                          "auto_stop needs a stop_command to run on the host");
        return NULL;
    }
    if ((in.has_scale_up || in.has_scale_down) && in.scale_down >= in.scale_up) {
        api_reply_problem(r, API_ERR_INVALID_FIELD,
                          in.has_scale_down ? "recommendation_thresholds.scale_down_utilization"
                                            : "recommendation_thresholds.scale_up_utilization",
                          "scale_down_utilization must be below scale_up_utilization");
        return NULL;
    }
    const json_t *bw = json_object_get(json_object_get(body, "gate"), "bandwidth");
    json_int_t bmin = json_integer_value(json_object_get(bw, "min_bytes_mib"));
    json_int_t bmax = json_integer_value(json_object_get(bw, "max_bytes_mib"));
    if (bmin > (bmax ? bmax : 1024) || (bmax && bmax < (bmin ? bmin : 8))) {
        api_reply_problem(r, API_ERR_INVALID_FIELD, "gate.bandwidth.max_bytes_mib",
                          "max_bytes_mib must not be below min_bytes_mib (defaults 8 and 1024)");
        return NULL;
    }
    json_t *doc = json_deep_copy(body);
    if (doc == NULL) {
        api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        return NULL;
    }
    set_default(doc, "interconnect", json_string("any"));
    set_default(doc, "storage_price_per_gb_month", json_integer(0));
    set_default(doc, "egress_price_per_gb", json_integer(0));
    set_default(doc, "overhead_pct", json_integer(0));
    set_default(doc, "idle_stop_after_seconds", json_integer((json_int_t)PLAN_REC_IDLE_DEFAULT_S));
    set_default(doc, "idle_gpu_utilization_pct", json_real(PLAN_REC_IDLE_GPU_PCT));
    set_default(doc, "auto_stop", json_false());
    set_default(doc, "recommendation_thresholds", json_object());
    json_t *tdoc = json_object_get(doc, "recommendation_thresholds");
    set_default(tdoc, "scale_up_utilization", json_real(PLAN_REC_UTIL_HIGH));
    set_default(tdoc, "scale_down_utilization", json_real(PLAN_REC_UTIL_LOW));
    set_default(tdoc, "investigate_failed_share", json_real(PLAN_REC_FAILED_SHARE));
    set_default(tdoc, "investigate_cost_increase", json_real(PLAN_REC_COST_RISE));
    set_default(doc, "gate", json_object());
    json_t *gate = json_object_get(doc, "gate");
    set_default(gate, "storage_min_mbps", json_integer(200));
    /* The expected interconnect decides the default link class between GPU pairs. */
    const char *ic = json_string_value(json_object_get(doc, "interconnect"));
    set_default(gate, "link_class",
                json_string(ic && !strcmp(ic, "nvlink") ? "NV*"
                            : ic && !strcmp(ic, "pcie") ? "PIX,PXB,PHB,NODE,SYS"
                                                        : "any"));
    json_t *checks = json_array();
    for (const char *const *c = check_names; *c; c++)
        json_array_append_new(checks, json_string(*c));
    set_default(gate, "checks", checks);
    json_t *workload = json_object_get(gate, "workload");
    if (workload != NULL)
        set_default(workload, "timeout_s", json_integer(300));
    json_t *bwdoc = json_object_get(gate, "bandwidth");
    if (bwdoc != NULL) {
        set_default(bwdoc, "tool", json_string("nccl"));
        set_default(bwdoc, "require", json_false());
        set_default(bwdoc, "timeout_seconds", json_integer(300));
    }
    return doc;
}

/* ---- create / read / list ---- */

/* A duplicate name in the project, or a gpu_model the pool's project may not use: one
 * outside the catalog and another project's unshared model get the same answer. */
static const struct api_violation pool_duplicate = {
    API_ERR_ALREADY_EXISTS, "name", "a pool with this name already exists in the project"};
static const struct api_violation pool_unknown_model = {
    API_ERR_INVALID_FIELD, "gpu_model",
    "gpu_model must be a GPU model the pool's project may use: a shared one or one of its "
    "own (GET /v1/gpu-models)"};

/* A PUT that adds GPUs to the project (gpu_count up, or another model) meets its quota. */
static enum db_status pool_quota(struct db_conn *c, const char *id, const json_t *spec,
                                 enum plan_cmd_refusal *why, struct svc_host_limit *out)
{
    return svc_pool_quota(c, id, json_string_value(json_object_get(spec, "gpu_model")),
                          (long)json_integer_value(json_object_get(spec, "gpu_count")), why, out);
}

static const struct api_document_def pool_document = {
    .what = "pool",
    .collection = "/v1/pools",
    .prepare = pool_check,
    .insert = db_pool_insert,
    .get = db_pool_get,
    .update = db_pool_update,
    .unique = &pool_duplicate,
    .fk = &pool_unknown_model,
    .refused = &pool_unknown_model,
    .limit = pool_quota,
};

enum MHD_Result api_pools_create(struct api_req *r)
{
    return api_create_document(r, &pool_document);
}

static enum db_status fetch_pool(struct db_conn *c, const char *id, const char *scope, char **doc)
{
    return db_pool_get(c, id, scope, 0, doc);
}

enum MHD_Result api_pools_get(struct api_req *r)
{
    const char *id = api_path_id(r, "pool");
    return id ? api_get_document_in(r, id, "pool", fetch_pool) : MHD_YES;
}

static const struct list_filter pool_filters[] = {
    {"gpu_model", valid_gpu_model, "a GPU model key"},
    {"name_prefix", api_valid_name_prefix, "1-128 characters"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    struct db_pool_filter f = {q->values[0], q->values[1], q->after,
                               q->limit + 1, q->scope,     q->values[2]};
    return db_pool_list(c, &f, page);
}

static const struct list_def pool_list = {"pool", pool_filters, 3,        api_valid_seq,
                                          NULL,   NULL,         list_page};

enum MHD_Result api_pools_list(struct api_req *r)
{
    return api_list_serve(r, &pool_list);
}

/* ---- replace (If-Match) / delete ---- */

enum MHD_Result api_pools_replace(struct api_req *r)
{
    return api_replace_document(r, &pool_document);
}

static const struct api_delete_in_def pool_delete = {
    "pool", "pool.delete", db_pool_delete, API_ERR_POOL_IN_USE,
    "hosts belong to this pool; move or delete them first"};

enum MHD_Result api_pools_delete(struct api_req *r)
{
    const char *id = api_path_id(r, "pool");
    return id ? api_delete_resource_in(r, id, &pool_delete) : MHD_YES;
}
