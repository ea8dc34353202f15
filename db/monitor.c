/* monitor.c — see monitor.h. */
#include "db/monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_pg.h"
#include "db/scope_sql.h"

#define ORIGIN "timestamptz '2000-01-01 00:00Z'"

// clang-format off
/* The readings of row x (gpus or gpu_samples), as json_build_object members. */
#define READINGS(x)                                                                          \
    "'util_gpu', " x ".util_gpu, 'util_mem', " x ".util_mem,"                                \
    " 'mem_used_mib', " x ".mem_used_mib, 'mem_total_mib', " x ".mem_total_mib,"             \
    " 'temp_c', " x ".temp_c, 'power_w', " x ".power_w,"                                     \
    " 'clock_event_reasons', " x ".clock_event_reasons,"                                     \
    " 'ecc_uncorrected_volatile', " x ".ecc_uncorrected_volatile,"                           \
    " 'retired_pages_pending', " x ".retired_pages_pending,"                                 \
    " 'remapped_rows_pending', " x ".remapped_rows_pending,"                                 \
    " 'remapped_rows_failure', " x ".remapped_rows_failure"

/* The Gpu document of gpus row g on host h. */
#define GPU_DOC(g, h)                                                                        \
    "json_build_object('uuid', " g ".uuid, 'host_id', " g ".host_id,"                        \
    " 'host_name', " h ".name, 'pool_id', " h ".pool_id,"                                    \
    " 'project', " DB_PROJECT_JSON(h ".project_id") ", 'index', " g ".index,"                \
    " 'name', " g ".name, 'pci_bus_id', " g ".pci_bus_id,"                                   \
    " 'first_seen', " DB_TS(g ".first_seen") ", 'last_seen', " DB_TS(g ".last_seen") ","     \
    " 'missing_since', " DB_TS(g ".missing_since") ","                                       \
    " 'open_events', (SELECT count(*) FROM gpu_events e"                                     \
    "   WHERE e.host_id = " g ".host_id AND e.gpu_uuid = " g ".uuid AND e.closed_at IS NULL),"\
    " 'latest', json_build_object('at', " DB_TS(g ".last_seen") ", " READINGS(g) "))"

/* The GpuEvent document of gpu_events row e. */
#define EVENT_DOC(e)                                                                         \
    "json_build_object('id', " e ".id, 'host_id', " e ".host_id,"                            \
    " 'project', " DB_HOST_PROJECT_JSON(e ".host_id") ","                                     \
    " 'gpu_uuid', " e ".gpu_uuid, 'pci_bus_id', " e ".pci_bus_id, 'kind', " e ".kind,"       \
    " 'code', " e ".code, 'category', " e ".category, 'policy', " e ".policy,"               \
    " 'raw', " e ".raw, 'message', " e ".message, 'count', " e ".count,"                     \
    " 'first_seen', " DB_TS(e ".first_seen") ", 'last_seen', " DB_TS(e ".last_seen") ","     \
    " 'open', " e ".closed_at IS NULL, 'closed_at', " DB_TS(e ".closed_at") ")"

/* The HostHealth document of host h (m: its host_monitor row). Open events: the newest
 * 100 (the summary counts them all). */
#define HEALTH_DOC                                                                           \
    "json_build_object('host_id', h.id, 'host_name', h.name, 'pool_id', h.pool_id,"          \
    " 'project', " DB_PROJECT_JSON("h.project_id") ","                                       \
    " 'host_state', h.state, 'last_sample_at', " DB_TS("m.last_sample_at") ","               \
    " 'monitor', json_build_object('state', coalesce(m.state, 'unknown'),"                   \
    "   'missed', coalesce(m.missed, 0), 'last_sample_at', " DB_TS("m.last_sample_at") ","   \
    "   'reason', m.health_reason, 'kmsg_cursor', m.kmsg_cursor),"                           \
    " 'summary', json_build_object("                                                         \
    "   'gpus', (SELECT count(*) FROM gpus g WHERE g.host_id = h.id),"                       \
    "   'missing_gpus', (SELECT count(*) FROM gpus g WHERE g.host_id = h.id"                 \
    "     AND g.missing_since IS NOT NULL),"                                                 \
    "   'open_events', (SELECT count(*) FROM gpu_events e WHERE e.host_id = h.id"            \
    "     AND e.closed_at IS NULL),"                                                         \
    "   'isolating_open_events', (SELECT count(*) FROM gpu_events e WHERE e.host_id = h.id"  \
    "     AND e.closed_at IS NULL AND e.policy = 'isolate')),"                               \
    " 'gpus', coalesce((SELECT json_agg(" GPU_DOC("g", "h") " ORDER BY g.index NULLS LAST,"  \
    "   g.uuid) FROM gpus g WHERE g.host_id = h.id), '[]'::json),"                           \
    " 'open_events', coalesce((SELECT json_agg(" EVENT_DOC("e") " ORDER BY e.id DESC)"       \
    "   FROM (SELECT * FROM gpu_events WHERE host_id = h.id AND closed_at IS NULL"           \
    "   ORDER BY id DESC LIMIT 100) e), '[]'::json))::text"

/* The HostSamples document of host h over [$2, $3): series is the SQL of its series,
 * (gpu_uuid, points) rows. */
#define SAMPLES_DOC(grain, rolled_up_to, series)                                             \
    "SELECT json_build_object('host_id', h.id,"                                              \
    " 'project', " DB_PROJECT_JSON("h.project_id") ", 'from', " DB_TS("$2::timestamptz") "," \
    " 'to', " DB_TS("$3::timestamptz") ", 'step', '" grain "',"                              \
    " 'rolled_up_to', " rolled_up_to ","                                                     \
    " 'series', coalesce((SELECT json_agg(json_build_object('gpu_uuid', s.gpu_uuid,"        \
    "   'index', gg.index, 'points', s.points) ORDER BY gg.index NULLS LAST, s.gpu_uuid)"    \
    "   FROM (" series ") s LEFT JOIN gpus gg ON gg.host_id = h.id"                      \
    "   AND gg.uuid = s.gpu_uuid), '[]'::json))::text"                                        \
    " AS doc FROM hosts h WHERE h.id = $1::uuid"                                             \
    " AND ($4::uuid[] IS NULL OR h.project_id = ANY ($4::uuid[]))"

/* The raw series: every sample in [$2, $3). */
#define RAW_SERIES                                                                           \
    "SELECT x.gpu_uuid, json_agg(json_build_object('at', " DB_TS("x.at") ", "                \
    READINGS("x") ") ORDER BY x.at) AS points FROM gpu_samples x WHERE x.host_id = h.id"     \
    " AND x.at >= $2::timestamptz AND x.at < $3::timestamptz GROUP BY x.gpu_uuid"

/* One metric of a rollup point: its minimum, mean (2 decimals) and maximum. */
#define MMA(m)                                                                               \
    "'" m "', json_build_object('min', x." m "_min,"                                         \
    " 'avg', round(x." m "_avg::numeric, 2), 'max', x." m "_max)"

/* A rollup series: the buckets of table that start in [$2, $3), the first one
 * included when it starts before $2. */
#define ROLLUP_SERIES(table, width)                                                          \
    "SELECT x.gpu_uuid, json_agg(json_build_object('at', " DB_TS("x.bucket") ","             \
    " 'samples', x.samples, " MMA("util_gpu") ", " MMA("util_mem") ","                       \
    " " MMA("mem_used_mib") ", 'mem_total_mib', json_build_object('max', x.mem_total_mib_max),"\
    " " MMA("temp_c") ", " MMA("power_w") ","                                                \
    " 'clock_event_reasons', x.clock_event_reasons_any,"                                     \
    " 'ecc_uncorrected_volatile', json_build_object('max', x.ecc_uncorrected_volatile_max)," \
    " 'retired_pages_pending', x.retired_pages_pending_any,"                                 \
    " 'remapped_rows_pending', x.remapped_rows_pending_any,"                                 \
    " 'remapped_rows_failure', x.remapped_rows_failure_any) ORDER BY x.bucket) AS points"    \
    " FROM " table " x WHERE x.host_id = h.id"                                               \
    " AND x.bucket >= date_bin(interval '" width "', $2::timestamptz, " ORIGIN ")"           \
    " AND x.bucket < $3::timestamptz GROUP BY x.gpu_uuid"

/* How far a grain is rolled up (null before the first sample). */
#define ROLLED_UP_TO(grain)                                                                  \
    "(SELECT " DB_TS("done_upto") " FROM gpu_samples_rollup_state"                           \
    " WHERE grain = '" grain "' AND isfinite(done_upto))"

const struct db_stmt db_monitor_stmts[] = {
    {"monitor_store", "SELECT monitor_store($1::uuid, $2::jsonb)::text AS result"},
    {"monitor_health",
     "SELECT " HEALTH_DOC " AS doc FROM hosts h LEFT JOIN host_monitor m ON m.host_id = h.id"
     " WHERE h.id = $1::uuid AND ($2::uuid[] IS NULL OR h.project_id = ANY ($2::uuid[]))"},
    {"monitor_gpu_list",
     "SELECT " GPU_DOC("g", "h") "::text AS doc, g.uuid || '/' || g.host_id AS key"
     " FROM gpus g JOIN hosts h ON h.id = g.host_id"
     " WHERE ($1::uuid IS NULL OR g.host_id = $1::uuid)"
     "   AND ($2::uuid IS NULL OR h.pool_id = $2::uuid)"
     "   AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM pools p"
     "        WHERE p.id = h.pool_id AND p.gpu_model = $3))"
     "   AND ($4::text IS NULL OR g.name = $4)"
     "   AND ($5::bool IS NULL OR EXISTS (SELECT 1 FROM gpu_events e"
     "        WHERE e.host_id = g.host_id AND e.gpu_uuid = g.uuid"
     "          AND e.closed_at IS NULL) = $5::bool)"
     "   AND ($6::bool IS NULL OR (g.missing_since IS NOT NULL) = $6::bool)"
     /* the keyset (uuid, host): a UUID may be on two hosts (migrations/0027) */
     "   AND (g.uuid, g.host_id) > (split_part(coalesce($7::text, ''), '/', 1),"
     "        coalesce(nullif(split_part(coalesce($7::text, ''), '/', 2), '')::uuid,"
     "                 '00000000-0000-0000-0000-000000000000'::uuid))"
     "   AND ($9::uuid[] IS NULL OR h.project_id = ANY ($9::uuid[]))"
     "   AND ($10::uuid IS NULL OR h.project_id = $10::uuid)"
     " ORDER BY g.uuid, g.host_id LIMIT $8::int"},
    {"monitor_gpu_events",
     "SELECT " EVENT_DOC("e") "::text AS doc, e.id::text AS key FROM gpu_events e"
     " WHERE e.gpu_uuid = $1 AND ($2::text IS NULL OR e.kind = $2)"
     "   AND ($3::bool IS NULL OR (e.closed_at IS NULL) = $3::bool)"
     "   AND e.id < coalesce($4::bigint, 9223372036854775807)"
     "   AND " DB_HOST_IN_SCOPE("e.host_id", "$6", "NULL")
     " ORDER BY e.id DESC LIMIT $5::int"},
    {"monitor_gpu_known",
     "SELECT (EXISTS (SELECT 1 FROM gpus g WHERE g.uuid = $1"
     "   AND " DB_HOST_IN_SCOPE("g.host_id", "$2", "NULL") ")"
     " OR EXISTS (SELECT 1 FROM gpu_events e WHERE e.gpu_uuid = $1"
     "   AND " DB_HOST_IN_SCOPE("e.host_id", "$2", "NULL") ")) AS known"},
    {"monitor_samples_raw", SAMPLES_DOC("raw", "NULL::text", RAW_SERIES)},
    {"monitor_samples_5m",
     SAMPLES_DOC("5m", ROLLED_UP_TO("5m"), ROLLUP_SERIES("gpu_samples_5m", "5 minutes"))},
    {"monitor_samples_1h",
     SAMPLES_DOC("1h", ROLLED_UP_TO("1h"), ROLLUP_SERIES("gpu_samples_1h", "1 hour"))},
    {"monitor_rollup",
     "SELECT gpu_samples_rollup(coalesce($1::timestamptz, now() - interval '2 minutes'))::text"
     " AS result"},
    {"monitor_prune",
     "SELECT gpu_samples_prune(make_interval(secs => $1::float8),"
     " make_interval(secs => $2::float8), make_interval(secs => $3::float8), $4::int)::text"
     " AS result"},
};
// clang-format on
const size_t db_monitor_nstmts = sizeof db_monitor_stmts / sizeof db_monitor_stmts[0];

const char *const db_monitor_grain_names[3] = {"raw", "5m", "1h"};

/* Runs a statement whose one row has a "result" column; copies it into *out. */
static enum db_status exec_result(struct db_conn *c, const char *stmt, int n, const char *const *p,
                                  char **out)
{
    PGresult *r;
    *out = NULL;
    enum db_status s = db_exec(c, stmt, n, p, &r);
    if (s < 0)
        return s;
    if (s == DB_ONE_RESULT) {
        int oom = 0;
        *out = db_dup(r, 0, "result", &oom);
        if (oom)
            s = DB_HARD_ERROR;
    }
    PQclear(r);
    return s;
}

enum db_status db_monitor_store(struct db_conn *c, const char *host_id, const char *doc_json,
                                char **result_json)
{
    const char *p[2] = {host_id, doc_json};
    return exec_result(c, "monitor_store", 2, p, result_json);
}

int db_monitor_bad_document(const struct db_conn *c)
{
    return strcmp(db_conn_sqlstate(c), "22023") == 0;
}

enum db_status db_monitor_health(struct db_conn *c, const char *host_id, const char *scope,
                                 char **doc)
{
    const char *p[2] = {host_id, scope};
    return db_exec_doc(c, "monitor_health", 2, p, doc);
}

enum db_status db_monitor_gpu_list(struct db_conn *c, const struct db_gpu_filter *f,
                                   struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[10] = {f->host_id, f->pool_id,    f->gpu_model, f->name,  f->has_open_events,
                         f->missing, f->after_uuid, limit,        f->scope, f->project_id};
    return db_exec_page(c, "monitor_gpu_list", 10, p, page);
}

enum db_status db_monitor_gpu_events(struct db_conn *c, const struct db_gpu_event_filter *f,
                                     struct db_page *page)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", f->limit);
    const char *p[6] = {f->gpu_uuid, f->kind, f->open, f->before_id, limit, f->scope};
    return db_exec_page(c, "monitor_gpu_events", 6, p, page);
}

enum db_status db_monitor_gpu_known(struct db_conn *c, const char *gpu_uuid, const char *scope,
                                    int *known)
{
    const char *p[2] = {gpu_uuid, scope};
    PGresult *r;
    *known = 0;
    enum db_status s = db_exec(c, "monitor_gpu_known", 2, p, &r);
    if (s == DB_ONE_RESULT)
        *known = db_bool(r, 0, "known");
    PQclear(r);
    return s;
}

enum db_status db_monitor_samples(struct db_conn *c, const char *host_id, const char *from,
                                  const char *to, enum db_monitor_grain grain, const char *scope,
                                  char **doc)
{
    static const char *const stmts[3] = {"monitor_samples_raw", "monitor_samples_5m",
                                         "monitor_samples_1h"};
    const char *p[4] = {host_id, from, to, scope};
    return db_exec_doc(c, stmts[grain], 4, p, doc);
}

enum db_status db_monitor_rollup(struct db_conn *c, const char *upto, char **result_json)
{
    const char *p[1] = {upto};
    return exec_result(c, "monitor_rollup", 1, p, result_json);
}

enum db_status db_monitor_prune(struct db_conn *c, long raw_keep_s, long m5_keep_s, long h1_keep_s,
                                int batch, char **result_json)
{
    char raw[24], m5[24], h1[24], b[16];
    snprintf(raw, sizeof raw, "%ld", raw_keep_s);
    snprintf(m5, sizeof m5, "%ld", m5_keep_s);
    snprintf(h1, sizeof h1, "%ld", h1_keep_s);
    snprintf(b, sizeof b, "%d", batch);
    const char *p[4] = {raw, m5, h1, b};
    return exec_result(c, "monitor_prune", 4, p, result_json);
}
