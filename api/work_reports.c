/* work_reports.c — work reports. Every record of a batch is checked (fields by
 * record_spec, then the window rules); the first bad record is answered with its index in
 * `field` (records[3].busy_seconds) and the detail says how many are bad. A good batch is
 * stored in one transaction by one INSERT: a conflicting re-send (same host, window and
 * unit, other figures) rolls all of it back with 409 work_report_conflict. A record that
 * names a baseline ("baseline": {input, concurrency, cache}) also records its window as a
 * baseline of its host's current stack (db/baselines.h), in the same transaction; a host
 * without a current stack refuses the batch (422 no_current_stack). */
#include "api/work_reports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "api/list.h"
#include "api/scope.h"
#include "common/sbuf.h"
#include "common/usage.h"
#include "common/util.h"
#include "db/baselines.h"
#include "db/projects.h"
#include "db/work_reports.h"

/* One record, as parsed (strings borrowed from the request). */
struct wr_record {
    const char *host_id, *brief_id, *window_start, *window_end, *unit; /* brief_id: or NULL */
    json_int_t completed, failed, retried, bytes_moved;
    double busy_seconds, p95_latency_ms, queue_delay_ms, storage_gb;
    int has_bytes_moved, has_p95_latency_ms, has_queue_delay_ms, has_storage_gb;
    /* "baseline": its window is a baseline under these conditions (each optional) */
    const json_t *baseline;
    const char *bl_input, *bl_cache;
    json_int_t bl_concurrency;
    int has_baseline, has_bl_concurrency;
    /* "phases": seconds per phase, any subset (each has_ph_* says it was given) */
    const json_t *phases;
    int has_phases;
    double ph_queue, ph_load, ph_preprocess, ph_compute, ph_communication, ph_write;
    int has_ph_queue, has_ph_load, has_ph_preprocess, has_ph_compute, has_ph_communication,
        has_ph_write;
    /* "failures": failed and retried units per class, any subset (has_fl_* says given) */
    const json_t *failures;
    int has_failures;
    double fl_oom, fl_timeout, fl_data, fl_hardware, fl_preempted, fl_other;
    int has_fl_oom, has_fl_timeout, has_fl_data, has_fl_hardware, has_fl_preempted, has_fl_other;
};

#define TO(m)   SPEC_TO(struct wr_record, m)
#define SEEN(m) SPEC_TO_SEEN(struct wr_record, m, has_##m)
#define UUID(name, flags, to)                                                      \
    {                                                                              \
        name, SPEC_STRING, flags, 36, 36, api_valid_uuid, "a UUID", NULL, NULL, to \
    }
#define TIME(name, to)                                                                        \
    {                                                                                         \
        name, SPEC_STRING, SPEC_REQUIRED, 20, 64, api_valid_rfc3339, "an RFC 3339 date-time", \
            NULL, NULL, to                                                                    \
    }
#define INT(name, flags, hi, to)                                     \
    {                                                                \
        name, SPEC_INTEGER, flags, 0, hi, NULL, NULL, NULL, NULL, to \
    }
#define NUM(name, flags, hi, to)                                    \
    {                                                               \
        name, SPEC_NUMBER, flags, 0, hi, NULL, NULL, NULL, NULL, to \
    }

static const char *const bl_caches[] = {"warm", "cold", NULL};
static const struct spec_field baseline_spec[] = {
    {"input", SPEC_STRING, 0, 1, 200, NULL, NULL, NULL, NULL, TO(bl_input)},
    {"concurrency", SPEC_INTEGER, 0, 1, 1000000, NULL, NULL, NULL, NULL,
     SPEC_TO_SEEN(struct wr_record, bl_concurrency, has_bl_concurrency)},
    {"cache", SPEC_ENUM, 0, 0, 0, NULL, NULL, bl_caches, NULL, TO(bl_cache)},
    SPEC_END,
};

/* Phases: seconds, each finite and ≥ 0 (the sum is checked against the window × the
 * host's GPUs in the transaction: db_wr_phase_excess). The bound per phase is the largest
 * window × 1024 GPUs. */
#define PHASE(name, m) NUM(name, 0, WR_MAX_WINDOW_S * 1024.0, SEEN(m))
static const struct spec_field phases_spec[] = {
    PHASE("queue", ph_queue),
    PHASE("load", ph_load),
    PHASE("preprocess", ph_preprocess),
    PHASE("compute", ph_compute),
    PHASE("communication", ph_communication),
    PHASE("write", ph_write),
    SPEC_END,
};

/* Failures: units per class, each finite and ≥ 0; together at most failed + retried
 * (check_failures). */
#define FAILURE(name, m) NUM(name, 0, 2e15, SEEN(m))
static const struct spec_field failures_spec[] = {
    FAILURE("oom", fl_oom),
    FAILURE("timeout", fl_timeout),
    FAILURE("data", fl_data),
    FAILURE("hardware", fl_hardware),
    FAILURE("preempted", fl_preempted),
    FAILURE("other", fl_other),
    SPEC_END,
};

static const struct spec_field record_spec[] = {
    UUID("host_id", SPEC_REQUIRED, TO(host_id)),
    UUID("brief_id", SPEC_NULLABLE, TO(brief_id)),
    TIME("window_start", TO(window_start)),
    TIME("window_end", TO(window_end)),
    {"unit", SPEC_ENUM, SPEC_REQUIRED, 0, 0, NULL, NULL, usage_unit_names, NULL, TO(unit)},
    INT("completed", SPEC_REQUIRED, 1e15, TO(completed)),
    INT("failed", SPEC_REQUIRED, 1e15, TO(failed)),
    INT("retried", SPEC_REQUIRED, 1e15, TO(retried)),
    NUM("busy_seconds", SPEC_REQUIRED, WR_MAX_WINDOW_S, TO(busy_seconds)),
    NUM("p95_latency_ms", SPEC_NULLABLE, 1e9, SEEN(p95_latency_ms)),
    NUM("queue_delay_ms", SPEC_NULLABLE, 1e9, SEEN(queue_delay_ms)),
    INT("bytes_moved", SPEC_NULLABLE, 1e18, SEEN(bytes_moved)),
    NUM("storage_gb", SPEC_NULLABLE, 1e9, SEEN(storage_gb)),
    {"baseline", SPEC_OBJECT, 0, 0, 0, NULL, NULL, NULL, baseline_spec, SEEN(baseline)},
    {"phases", SPEC_OBJECT, SPEC_NULLABLE, 0, 0, NULL, NULL, NULL, phases_spec, SEEN(phases)},
    {"failures", SPEC_OBJECT, SPEC_NULLABLE, 0, 0, NULL, NULL, NULL, failures_spec, SEEN(failures)},
    SPEC_END,
};

/* The first problem of a batch, and how many records have one. */
struct batch_check {
    int bad;
    int first; /* index, or -1 for the batch itself */
    enum api_error code;
    char field[160];
    char detail[512];
};

static void record_error(struct batch_check *b, int i, enum api_error code, const char *sub,
                         const char *detail)
{
    if (b->bad++ > 0)
        return;
    b->first = i;
    b->code = code;
    snprintf(b->field, sizeof b->field, "records[%d]%s%s", i, *sub ? "." : "", sub);
    snprintf(b->detail, sizeof b->detail, "records[%d]%s", i, detail); /* detail: ".x …" */
}

/* The window rules of one record whose fields passed record_spec. */
static void check_window(struct batch_check *b, int i, const struct wr_record *w)
{
    int64_t start, end;
    util_parse_rfc3339(w->window_start, &start);
    util_parse_rfc3339(w->window_end, &end);
    double busy = w->busy_seconds;
    char msg[256];
    if (end <= start) {
        record_error(b, i, API_ERR_INVALID_FIELD, "window_end",
                     ".window_end must be after window_start");
    } else if (end - start > (int64_t)WR_MAX_WINDOW_S * 1000000) {
        record_error(b, i, API_ERR_INVALID_FIELD, "window_end",
                     ".window_end must be at most 24 h after window_start");
    } else if (busy * 1e6 > (double)(end - start)) {
        snprintf(msg, sizeof msg, ".busy_seconds (%g) must not exceed the window (%g s)", busy,
                 (double)(end - start) / 1e6);
        record_error(b, i, API_ERR_INVALID_FIELD, "busy_seconds", msg);
    }
}

/* The failure classes of one record whose fields passed record_spec: a non-empty object
 * whose counts add up to at most failed + retried (each failed unit failed once for good,
 * each retried unit failed once before it ran again), with a relative tolerance of 1e-9
 * for float rounding. */
static void check_failures(struct batch_check *b, int i, const struct wr_record *w)
{
    if (!w->has_failures || w->failures == NULL)
        return;
    if (json_object_size(w->failures) == 0) {
        record_error(b, i, API_ERR_INVALID_FIELD, "failures",
                     ".failures names no class: give at least one of oom, timeout, data, "
                     "hardware, preempted, other (units), or leave failures out");
        return;
    }
    double sum =
        w->fl_oom + w->fl_timeout + w->fl_data + w->fl_hardware + w->fl_preempted + w->fl_other;
    double bad = (double)w->failed + (double)w->retried;
    if (sum > bad * (1 + 1e-9) + 1e-9) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 ".failures add up to %.17g units, more than failed + retried (%lld + %lld = "
                 "%.17g)",
                 sum, (long long)w->failed, (long long)w->retried, bad);
        record_error(b, i, API_ERR_INVALID_FIELD, "failures", msg);
    }
}

/* The batch's one member, records: 1 to WR_MAX_RECORDS items. Sets *records, or b. */
static int check_envelope(const json_t *body, struct batch_check *b, const json_t **records)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "records") != 0) {
            b->bad = 1;
            b->code = API_ERR_UNKNOWN_FIELD;
            snprintf(b->field, sizeof b->field, "%s", spec_printable(key) ? key : "?");
            snprintf(b->detail, sizeof b->detail, "%s is not a known field", b->field);
            return -1;
        }
    }
    *records = json_object_get(body, "records");
    if (*records == NULL || !json_is_array(*records) || json_array_size(*records) < 1 ||
        json_array_size(*records) > WR_MAX_RECORDS) {
        b->bad = 1;
        b->code = *records == NULL ? API_ERR_MISSING_FIELD : API_ERR_INVALID_FIELD;
        snprintf(b->field, sizeof b->field, "records");
        snprintf(b->detail, sizeof b->detail,
                 *records == NULL ? "records is required"
                                  : "records must be an array of 1 to 1000 work reports");
        return -1;
    }
    return 0;
}

/* Checks every record of records, parsing each into rec[i]. Returns 0, or -1 with b. */
static int check_records(const json_t *records, struct wr_record *rec, struct batch_check *b)
{
    size_t i;
    const json_t *v;
    json_array_foreach(records, i, v)
    {
        if (!json_is_object(v)) {
            record_error(b, (int)i, API_ERR_INVALID_FIELD, "", " must be an object");
            continue;
        }
        struct spec_error err;
        if (spec_parse(v, record_spec, &rec[i], &err) != 0) {
            char detail[600];
            snprintf(detail, sizeof detail, ".%s", err.detail);
            record_error(b, (int)i, err.code, err.field, detail);
            continue;
        }
        if (rec[i].has_phases && json_object_size(rec[i].phases) == 0) {
            record_error(b, (int)i, API_ERR_INVALID_FIELD, "phases",
                         ".phases names no phase: give at least one of queue, load, preprocess, "
                         "compute, communication, write (seconds), or leave phases out");
            continue;
        }
        int before = b->bad;
        check_window(b, (int)i, &rec[i]);
        if (b->bad == before)
            check_failures(b, (int)i, &rec[i]);
    }
    return b->bad ? -1 : 0;
}

static enum MHD_Result reply_batch_problem(struct api_req *r, const struct batch_check *b, size_t n)
{
    if (b->first < 0)
        return api_reply_problem(r, b->code, b->field, "%s", b->detail);
    if (b->bad == 1)
        return api_reply_problem(r, b->code, b->field, "%s; nothing was stored", b->detail);
    return api_reply_problem(r, b->code, b->field,
                             "%s; %d of %zu records are invalid (the first is shown); nothing "
                             "was stored",
                             b->detail, b->bad, n);
}

/* ---- the batch as array literals ---- */

static void add_time(struct sbuf *s, const char *v)
{
    int64_t us;
    char ts[40];
    util_parse_rfc3339(v, &us);
    util_rfc3339(us, ts, sizeof ts);
    sbuf_adds(s, ts);
}

static void add_int(struct sbuf *s, json_int_t v, int has)
{
    if (has)
        sbuf_printf(s, "%lld", (long long)v);
    else
        sbuf_adds(s, "NULL");
}

static void add_num(struct sbuf *s, double v, int has)
{
    if (has)
        sbuf_printf(s, "%.17g", v);
    else
        sbuf_adds(s, "NULL");
}

/* Column c (in db_wr_insert's order) of one record. UUIDs and units need no quoting. */
static void add_column(struct sbuf *s, const struct wr_record *w, int c)
{
    switch (c) {
    case 0: sbuf_adds(s, w->host_id); break;
    case 1: sbuf_adds(s, w->brief_id ? w->brief_id : "NULL"); break;
    case 2: add_time(s, w->window_start); break;
    case 3: add_time(s, w->window_end); break;
    case 4: sbuf_adds(s, w->unit); break;
    case 5: add_int(s, w->completed, 1); break;
    case 6: add_int(s, w->failed, 1); break;
    case 7: add_int(s, w->retried, 1); break;
    case 8: add_num(s, w->busy_seconds, 1); break;
    case 9: add_num(s, w->p95_latency_ms, w->has_p95_latency_ms); break;
    case 10: add_num(s, w->queue_delay_ms, w->has_queue_delay_ms); break;
    case 11: add_int(s, w->bytes_moved, w->has_bytes_moved); break;
    case 12: add_num(s, w->storage_gb, w->has_storage_gb); break;
    case 13: add_num(s, w->ph_queue, w->has_ph_queue); break;
    case 14: add_num(s, w->ph_load, w->has_ph_load); break;
    case 15: add_num(s, w->ph_preprocess, w->has_ph_preprocess); break;
    case 16: add_num(s, w->ph_compute, w->has_ph_compute); break;
    case 17: add_num(s, w->ph_communication, w->has_ph_communication); break;
    case 18: add_num(s, w->ph_write, w->has_ph_write); break;
    case 19: add_num(s, w->fl_oom, w->has_fl_oom); break;
    case 20: add_num(s, w->fl_timeout, w->has_fl_timeout); break;
    case 21: add_num(s, w->fl_data, w->has_fl_data); break;
    case 22: add_num(s, w->fl_hardware, w->has_fl_hardware); break;
    case 23: add_num(s, w->fl_preempted, w->has_fl_preempted); break;
    case 24: add_num(s, w->fl_other, w->has_fl_other); break;
    }
}

/* Whether a record's phases may add up to more than its window × its host's GPUs: only
 * then does the batch need db_wr_phase_excess. A host has at least one GPU there, and its
 * limit is window × GPUs × (1 + 1e-9) + 1e-6 s, so phases that add up to at most the
 * window itself always fit. The sum and the window are the statement's own figures: the
 * phases in its order, the window from the microseconds add_time sends. */
static int phases_may_exceed(const struct wr_record *w)
{
    if (!w->has_phases)
        return 0;
    double sum =
        (w->has_ph_queue ? w->ph_queue : 0) + (w->has_ph_load ? w->ph_load : 0) +
        (w->has_ph_preprocess ? w->ph_preprocess : 0) + (w->has_ph_compute ? w->ph_compute : 0) +
        (w->has_ph_communication ? w->ph_communication : 0) + (w->has_ph_write ? w->ph_write : 0);
    int64_t start, end;
    util_parse_rfc3339(w->window_start, &start);
    util_parse_rfc3339(w->window_end, &end);
    return sum > (double)(end - start) / 1e6;
}

static int build_batch(const struct wr_record *rec, size_t n, char *text[DB_WR_COLUMNS])
{
    for (int c = 0; c < DB_WR_COLUMNS; c++) {
        struct sbuf s;
        sbuf_init(&s, 64 * n + 16);
        sbuf_adds(&s, "{");
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                sbuf_adds(&s, ",");
            add_column(&s, &rec[i], c);
        }
        sbuf_adds(&s, "}");
        text[c] = sbuf_take(&s, NULL);
        if (text[c] == NULL)
            return -1;
    }
    return 0;
}

/* The records that name a baseline, as db_baseline_reports_*() take them (NULL when none;
 * *oom set when out of memory). */
static char *baseline_records(const struct wr_record *rec, size_t n, int *oom)
{
    json_t *arr = json_array();
    *oom = arr == NULL;
    for (size_t i = 0; arr != NULL && i < n; i++) {
        const struct wr_record *w = &rec[i];
        if (!w->has_baseline)
            continue;
        /* the times as the batch stores them (add_time) */
        char start[40], end[40];
        int64_t us;
        util_parse_rfc3339(w->window_start, &us);
        util_rfc3339(us, start, sizeof start);
        util_parse_rfc3339(w->window_end, &us);
        util_rfc3339(us, end, sizeof end);
        json_t *o =
            json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "idx", (json_int_t)i, "host_id",
                      w->host_id, "window_start", start, "window_end", end, "unit", w->unit,
                      "input", w->bl_input ? json_string(w->bl_input) : json_null(), "concurrency",
                      w->has_bl_concurrency ? json_integer(w->bl_concurrency) : json_null(),
                      "cache", w->bl_cache ? json_string(w->bl_cache) : json_null());
        if (o == NULL || json_array_append_new(arr, o) != 0)
            *oom = 1;
    }
    char *text = NULL;
    if (!*oom && json_array_size(arr) > 0) {
        text = json_dumps(arr, JSON_COMPACT);
        *oom = text == NULL;
    }
    json_decref(arr);
    return text;
}

/* ---- ingestion ---- */

static int allow_unscoped;

void api_work_reports_configure(int allow_unscoped_reporters)
{
    allow_unscoped = allow_unscoped_reporters;
}

struct ingest_arg {
    struct api_req *r;
    struct db_wr_batch batch;
    long n, inserted;
    int bad_ref_first, bad_ref_is_host, bad_ref_count;
    int ref_vanished;
    int conflict_first, conflict_count;
    int scope_first, scope_count; /* records outside a scoped reporter's pools and hosts */
    char scope_host[UTIL_UUID_LEN + 1];
    const char *baselines;                /* baseline_records(), or NULL */
    int has_phases;                       /* a record's phases may exceed (phases_may_exceed) */
    struct db_wr_phase_excess phase;      /* the first record whose phases overflow */
    int unstacked_first, unstacked_count; /* baseline records whose host has no stack */
    long baselines_recorded;
};

/* The batch against the caller's scope: the projects where it may report (its route's
 * roles: reporter, operator, admin; a platform admin: all) and, for a reporter with pools
 * or hosts, those. Records outside it refuse the batch: nothing is inserted; the refusal
 * is audited (committed) and the handler answers 403. */
static enum db_status scope_fn(struct db_conn *c, struct ingest_arg *a)
{
    a->scope_count = 0;
    const char *reporter = a->r->principal.role == ROLE_REPORTER ? a->r->principal.scope : NULL;
    const char *projects = api_scope_route(a->r);
    if (reporter == NULL && projects == NULL)
        return DB_NO_RESULTS;
    enum db_status s = db_wr_out_of_scope(c, &a->batch, reporter, projects, &a->scope_first,
                                          a->scope_host, &a->scope_count);
    if (s < 0 || a->scope_count == 0)
        return s;
    char reason[128];
    snprintf(reason, sizeof reason, "records[%d].host_id %s is outside the caller's scope",
             a->scope_first, a->scope_host);
    return api_audit_reason(c, a->r, "work_report.denied", "work_report", NULL, MHD_HTTP_FORBIDDEN,
                            reason);
}

/* The insert relies on the foreign keys to find unknown hosts and briefs: only when one
 * fails is the batch looked at again (refs_fn) to name the first bad record. Likewise
 * the records are compared with the stored ones only when some were not inserted. */
static enum db_status ingest_fn(struct db_conn *c, void *arg)
{
    struct ingest_arg *a = arg;
    a->inserted = 0;
    a->ref_vanished = 0;
    a->conflict_count = 0;
    a->unstacked_count = 0;
    a->baselines_recorded = 0;
    a->phase.count = 0;
    enum db_status s = scope_fn(c, a);
    if (s < 0 || a->scope_count > 0)
        return s;
    if (a->has_phases) {
        s = db_wr_phase_excess(c, &a->batch, &a->phase);
        if (s < 0 || a->phase.count > 0)
            return s < 0 ? s : DB_NO_RESULTS; /* nothing stored; the handler answers 400 */
    }
    if (a->baselines != NULL) {
        s = db_baseline_reports_unstacked(c, a->baselines, &a->unstacked_first,
                                          &a->unstacked_count);
        if (s < 0 || a->unstacked_count > 0)
            return s < 0 ? s : DB_NO_RESULTS; /* nothing stored; the handler answers 422 */
    }
    s = db_wr_insert(c, &a->batch, a->r->principal.sub, &a->inserted);
    if (s == DB_HARD_ERROR && db_conn_fk_violation(c)) {
        a->ref_vanished = 1;
        return s;
    }
    if (s < 0)
        return s;
    if (a->inserted < a->n) {
        s = db_wr_conflicts(c, &a->batch, &a->conflict_first, &a->conflict_count);
        if (s < 0)
            return s;
        if (a->conflict_count > 0)
            return DB_HARD_ERROR; /* rolls the insert back; the handler answers 409 */
    }
    if (a->baselines != NULL) {
        s = db_baseline_reports_insert(c, a->baselines, &a->baselines_recorded);
        if (s < 0)
            return s;
    }
    return api_audit(c, a->r, "work_report.ingest", "work_report", NULL,
                     a->inserted > 0 ? MHD_HTTP_CREATED : MHD_HTTP_OK);
}

static enum db_status refs_fn(struct db_conn *c, void *arg)
{
    struct ingest_arg *a = arg;
    return db_wr_check_refs(c, &a->batch, &a->bad_ref_first, &a->bad_ref_is_host,
                            &a->bad_ref_count);
}

static enum db_status unscoped_fn(struct db_conn *c, void *arg)
{
    return api_audit_reason(c, arg, "work_report.denied", "work_report", NULL, MHD_HTTP_FORBIDDEN,
                            "unscoped reporter token");
}

/* The answer to an ingest: what refused the batch (scope, a baseline without a stack, an
 * unknown or vanished host or brief, a conflicting record, the database), else what was
 * stored. s: the transaction's status; rec, n: the batch. */
static enum MHD_Result reply_ingest(struct api_req *r, const struct ingest_arg *a, enum db_status s,
                                    const struct wr_record *rec, size_t n)
{
    enum MHD_Result ret;
    if (a->scope_count > 0 && s >= 0) {
        char field[48];
        snprintf(field, sizeof field, "records[%d].host_id", a->scope_first);
        if (a->scope_count == 1)
            ret = api_reply_problem(r, API_ERR_HOST_OUT_OF_SCOPE, field,
                                    "%s: host %s is outside this token's scope (its projects; a "
                                    "reporter's pools and hosts); nothing was stored",
                                    field, a->scope_host);
        else
            ret = api_reply_problem(r, API_ERR_HOST_OUT_OF_SCOPE, field,
                                    "%s: host %s is outside this token's scope (its projects; a "
                                    "reporter's pools and hosts); %d of %zu records name hosts "
                                    "outside it (the first is shown); nothing was stored",
                                    field, a->scope_host, a->scope_count, n);
        return ret;
    }
    if (a->phase.count > 0 && s >= 0) {
        const struct db_wr_phase_excess *e = &a->phase;
        char field[48];
        snprintf(field, sizeof field, "records[%d].phases", e->first);
        return api_reply_problem(
            r, API_ERR_INVALID_FIELD, field,
            "%s add up to %.6g s, more than the window (%.6g s) × the host's %.0f GPU(s) = "
            "%.6g s%s; nothing was stored",
            field, e->phase_seconds, e->window_seconds, e->gpus, e->window_seconds * e->gpus,
            e->count > 1 ? " (and so do other records)" : "");
    }
    if (a->unstacked_count > 0 && s >= 0) {
        char field[48];
        snprintf(field, sizeof field, "records[%d].baseline", a->unstacked_first);
        return api_reply_problem(r, API_ERR_NO_CURRENT_STACK, field,
                                 "%s: host %s has no current stack, so its window cannot be a "
                                 "baseline (provision it first)%s; nothing was stored",
                                 field, rec[a->unstacked_first].host_id,
                                 a->unstacked_count > 1 ? " (and so do other records)" : "");
    }
    if (a->bad_ref_count > 0) {
        int i = a->bad_ref_first;
        const char *noun = a->bad_ref_is_host ? "host" : "brief";
        char field[48];
        snprintf(field, sizeof field, "records[%d].%s_id", i, noun);
        if (a->bad_ref_count == 1)
            ret = api_reply_problem(r, API_ERR_INVALID_FIELD, field,
                                    "%s: no %s has this id; nothing was stored", field, noun);
        else
            ret = api_reply_problem(r, API_ERR_INVALID_FIELD, field,
                                    "%s: no %s has this id; %d of %zu records name an unknown "
                                    "host or brief (the first is shown); nothing was stored",
                                    field, noun, a->bad_ref_count, n);
        return ret;
    }
    if (a->ref_vanished)
        return api_reply_problem(r, API_ERR_INVALID_FIELD, "records",
                                 "a host or brief named by the batch was deleted while it was "
                                 "stored; nothing was stored");
    if (a->conflict_count > 0) {
        char field[32];
        snprintf(field, sizeof field, "records[%d]", a->conflict_first);
        return api_reply_problem(
            r, API_ERR_WORK_REPORT_CONFLICT, field,
            "records[%d] has the host, window and unit of a stored report (or of an earlier "
            "record in this batch) with different figures%s; nothing was stored",
            a->conflict_first, a->conflict_count > 1 ? " (and so do other records)" : "");
    }
    if (s < 0)
        return api_reply_db(r, s);
    json_t *body = json_pack("{s:I,s:I}", "accepted", (json_int_t)a->inserted, "duplicates",
                             (json_int_t)((long)n - a->inserted));
    if (a->baselines != NULL) /* only for a batch that names baselines */
        json_object_set_new(body, "baselines", json_integer((json_int_t)a->baselines_recorded));
    return api_reply_json(r, a->inserted > 0 ? MHD_HTTP_CREATED : MHD_HTTP_OK, body, NULL);
}

/* A reporter token that names no pools or hosts and reports only for the project named
 * default (a token minted before projects, or one without --project): it could report for
 * every host of the legacy fleet. A reporter of another project is scoped by it. */
static int unscoped_reporter(const struct api_req *r)
{
    if (r->principal.role != ROLE_REPORTER || r->principal.scope != NULL)
        return 0;
    for (int i = 0; i < r->ngrants; i++)
        if ((r->grants[i].role & ROLE_REPORTER) &&
            strcmp(r->grants[i].project_id, DB_DEFAULT_PROJECT_ID) != 0)
            return 0;
    return 1;
}

enum MHD_Result api_work_reports_create(struct api_req *r)
{
    if (unscoped_reporter(r) && !allow_unscoped) {
        db_run_tx(unscoped_fn, r);
        return api_reply_problem(
            r, API_ERR_REPORTER_SCOPE_REQUIRED, NULL,
            "this reporter token names no pools or hosts; mint one with gpufleetd token --role "
            "reporter --pool NAME (or scope the role-map entry: GROUP:reporter@POOL), or set "
            "GPUFLEET_ALLOW_UNSCOPED_REPORTERS=1");
    }
    struct batch_check b = {.first = -1};
    const json_t *records;
    if (check_envelope(r->json, &b, &records) != 0)
        return reply_batch_problem(r, &b, 0);
    size_t n = json_array_size(records);
    struct wr_record *rec = calloc(n, sizeof *rec);
    char *text[DB_WR_COLUMNS] = {0};
    char *bl_text = NULL;
    struct ingest_arg a = {.r = r, .n = (long)n};
    enum MHD_Result ret;
    if (rec == NULL) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    if (check_records(records, rec, &b) != 0) {
        ret = reply_batch_problem(r, &b, n);
        goto out;
    }
    if (build_batch(rec, n, text) != 0) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    for (int c = 0; c < DB_WR_COLUMNS; c++)
        a.batch.col[c] = text[c];
    int oom;
    bl_text = baseline_records(rec, n, &oom);
    if (oom) {
        ret = api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "out of memory");
        goto out;
    }
    a.baselines = bl_text;
    for (size_t i = 0; i < n && !a.has_phases; i++)
        a.has_phases = phases_may_exceed(&rec[i]);
    enum db_status s = db_run_tx(ingest_fn, &a);
    if (a.ref_vanished) {
        enum db_status rs = db_run_tx(refs_fn, &a);
        if (rs < 0) {
            ret = api_reply_db(r, rs);
            goto out;
        }
    }
    ret = reply_ingest(r, &a, s, rec, n);
out:
    for (int c = 0; c < DB_WR_COLUMNS; c++)
        free(text[c]);
    free(bl_text);
    free(rec);
    return ret;
}

/* ---- list ---- */

static int valid_unit(const char *v)
{
    return util_lookup(usage_unit_names, v) >= 0;
}

static const struct list_filter wr_filters[] = {
    {"host_id", api_valid_uuid, "a UUID"},
    {"unit", valid_unit, "one of tokens, requests, items, samples, vectors"},
    {"since", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"until", api_valid_rfc3339, "an RFC 3339 date-time"},
    {"project", NULL, "a project name or id"},
};

static enum db_status list_page(struct db_conn *c, const struct list_query *q, struct db_page *page)
{
    const char *const *v = q->values;
    struct db_wr_filter f = {v[0], v[1], v[2], v[3], q->after, q->limit + 1, q->scope, v[4]};
    return db_wr_list(c, &f, page);
}

static const struct list_def wr_list = {"work_report", wr_filters, 5,        api_valid_seq,
                                        NULL,          NULL,       list_page};

enum MHD_Result api_work_reports_list(struct api_req *r)
{
    return api_list_serve(r, &wr_list);
}
