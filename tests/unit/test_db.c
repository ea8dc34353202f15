/* test_db.c — db/ without a server: the statement registry, the decoders (fed results
 * built in memory with PQmakeEmptyPGresult, their columns in another order than the
 * statements', to show that they read by name) and who owns what. Leaks show under
 * SANITIZE=address. */
#include <libpq-fe.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "db/db_pg.h"
#include "db/decode.h"
#include "service/catalog.h"
#include "tests/unit/unit.h"

#define MAX_COLS 48
#define TEXT_OID 25

/* Fault injection: while strdup_countdown > 0, the countdown-th strdup from now fails
 * (this definition stands in for the C library's in the unit-test binary; db/ copies
 * strings with strdup). */
static int strdup_countdown;

char *strdup(const char *s)
{
    if (strdup_countdown > 0 && --strdup_countdown == 0)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

/* A result with the given columns and rows (vals row-major; NULL is SQL NULL). */
static PGresult *fake(int ncols, const char *const *names, int nrows, const char *const *vals)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc att[MAX_COLS];
    if (r == NULL || ncols > MAX_COLS)
        abort();
    memset(att, 0, sizeof att);
    for (int i = 0; i < ncols; i++) {
        att[i].name = (char *)names[i];
        att[i].typid = TEXT_OID;
        att[i].typlen = -1;
        att[i].atttypmod = -1;
    }
    if (!PQsetResultAttrs(r, ncols, att))
        abort();
    for (int row = 0; row < nrows; row++)
        for (int c = 0; c < ncols; c++) {
            const char *v = vals[row * ncols + c];
            if (!PQsetvalue(r, row, c, (char *)v, v ? (int)strlen(v) : -1))
                abort();
        }
    return r;
}

#define FAKE(names, vals)                              \
    fake((int)(sizeof names / sizeof names[0]), names, \
         (int)(sizeof vals / sizeof vals[0] / (sizeof names / sizeof names[0])), vals)

/* Every registered statement is found by its name, and is itself (no two share a name,
 * none is shadowed in the hash table); unknown names are not found. */
static void registry(void)
{
    static const struct {
        const struct db_stmt *stmts;
        const size_t *n;
    } groups[] = {
#define DB_STMT_GROUP(m) {db_##m##_stmts, &db_##m##_nstmts},
#include "db/statements.def"
#undef DB_STMT_GROUP
    };
    size_t total = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (size_t i = 0; i < *groups[g].n; i++, total++)
            CHECK(db_statement_sql(groups[g].stmts[i].name) == groups[g].stmts[i].sql);
    CHECK(total > 50);
    CHECK_STR(db_statement_sql("db_ping"), "SELECT 1");
    CHECK(db_statement_sql("no_such_statement") == NULL);
    CHECK(db_statement_sql("") == NULL);
    CHECK(db_statement_sql("cost_hostsx") == NULL);
}

/* Hosts (prices, held seconds) and usage rows read by name; the rows of a host missing
 * from the hosts are left out; SQL NULL briefs are NULL. */
static void cost_decode(void)
{
    static const char *const hn[] = {"held_seconds", "overhead",   "egress",      "storage",
                                     "hour",         "pool_name",  "pool_id",     "name",
                                     "id",           "project_id", "project_name"};
    static const char *const hv[] = {
        "3600", "10", "0.05", "0.1", "4", "P", "p1", "gpu-a", "a", "j1", "J",
        "0",    "0",  "0",    "0",   "2", "Q", "q1", "gpu-c", "c", "k1", "K",
    };
    static const char *const un[] = {"bytes",      "ss",       "sgs",       "covered", "busy",
                                     "retried",    "failed",   "completed", "reports", "unit",
                                     "brief_name", "brief_id", "host_id"};
    /* clang-format off */
    static const char *const uv[] = {
        "5e9", "3600", "7200000", "3600", "2880", "0", "6000", "120000", "1", "tokens",
        NULL, NULL, "a",
        "0", "0", "0", "60", "30", "1", "2", "3", "2", "requests", "B", "b1", "a",
        /* host b is not among the hosts (deleted meanwhile): left out */
        "0", "0", "0", "60", "30", "0", "0", "5", "1", "tokens", NULL, NULL, "b",
        "0", "0", "0", "60", "30", "0", "0", "7", "1", "items", NULL, NULL, "c",
    };
    /* clang-format on */
    struct db_cost_input in = {0};
    CHECK(db_cost_decode(FAKE(hn, hv), FAKE(un, uv), &in) == DB_MANY_RESULTS);
    CHECK(in.nhosts == 2 && in.nrows == 3);
    CHECK_STR(in.hosts[0].id, "a");
    CHECK_STR(in.hosts[0].name, "gpu-a");
    CHECK_STR(in.hosts[0].pool_id, "p1");
    CHECK_STR(in.hosts[0].pool_name, "P");
    CHECK_STR(in.hosts[0].project_id, "j1");
    CHECK_STR(in.hosts[1].project_name, "K");
    CHECK(in.hosts[0].prices.per_hour == 4 && in.hosts[0].prices.storage_per_gb_month == 0.1 &&
          in.hosts[0].prices.egress_per_gb == 0.05 && in.hosts[0].prices.overhead_pct == 10);
    CHECK(in.hosts[0].held_seconds == 3600 && in.hosts[1].held_seconds == 0);
    const struct usage_row *w = &in.rows[0];
    CHECK(w->host == 0 && w->brief_id == NULL && w->brief_name == NULL);
    CHECK(w->unit == USAGE_UNIT_TOKENS && w->reports == 1 && w->completed == 120000);
    CHECK(w->failed == 6000 && w->retried == 0 && w->busy_seconds == 2880);
    CHECK(w->covered_seconds == 3600 && w->storage_gb_seconds == 7200000);
    CHECK(w->storage_seconds == 3600 && w->bytes_moved == 5e9);
    CHECK(in.rows[1].host == 0 && in.rows[1].unit == USAGE_UNIT_REQUESTS);
    CHECK_STR(in.rows[1].brief_id, "b1");
    CHECK_STR(in.rows[1].brief_name, "B");
    CHECK(in.rows[2].host == 1 && in.rows[2].unit == USAGE_UNIT_ITEMS && in.rows[2].completed == 7);
    db_cost_input_free(&in);
    CHECK(in.hosts == NULL && in.rows == NULL && in.nhosts == 0 && in.res[0] == NULL);
    db_cost_input_free(&in); /* twice: harmless */
}

/* The recommendations' inputs: held seconds per window, usage rows with their extras
 * (shared usage decoding, DB_NO_HOST for a host not held), pool settings set or not. */
static void rec_decode(void)
{
    static const char *const hn[] = {"held_prev", "held_day",   "held_hour",   "id",      "name",
                                     "pool_id",   "pool_name",  "hour",        "storage", "egress",
                                     "overhead",  "project_id", "project_name"};
    static const char *const hv[] = {"86400", "43200", "3600", "a", "gpu-a", "p1", "P",
                                     "4",     "0",     "0",    "0", "j1",    "J"};
    static const char *const un[] = {"queue", "p95",     "max_end",   "min_start", "useful_end",
                                     "lb",    "part",    "host_id",   "brief_id",  "brief_name",
                                     "unit",  "reports", "completed", "failed",    "retried",
                                     "busy",  "covered", "sgs",       "ss",        "bytes"};
    /* clang-format off */
    static const char *const uv[] = {
        NULL, "600", "1000", "100", "900", "t", "0", "a", "b1", "B", "tokens", "2", "10",
        "0", "0", "30", "60", "0", "0", "0",
        "5", NULL, "2000", "50", NULL, "f", "2", "z", NULL, NULL, "requests", "1", "0",
        "0", "0", "0", "60", "0", "0", "0",
    };
    /* clang-format on */
    static const char *const rn[] = {"rise",      "share",   "down", "up",         "gpu_count",
                                     "gpu_model", "price",   "idle", "active_job", "accepted",
                                     "state",     "pool_id", "id",   "project_id", "project_name"};
    static const char *const rv[] = {NULL, "0.1", NULL,    "0.75", "8", "h100_sxm", "4",     "1800",
                                     "f",  "t",   "ready", "p1",   "a", "j1",       "team-a"};
    static const char *const bn[] = {"spec", "id", "project_id"};
    static const char *const bv[] = {"{\"name\":\"b\"}", "b1", "k1"};
    struct db_rec_input in = {0};
    CHECK(db_rec_decode(FAKE(hn, hv), FAKE(un, uv), FAKE(rn, rv), FAKE(bn, bv), &in) ==
          DB_ONE_RESULT);
    CHECK(in.nheld == 1 && in.nusage == 2 && in.nhosts == 1 && in.nbriefs == 1);
    CHECK_STR(in.held[0].id, "a");
    CHECK(in.held[0].prices.per_hour == 4 && in.held[0].held_seconds == 0);
    CHECK(in.held_seconds[0][DB_REC_HOUR] == 3600 && in.held_seconds[0][DB_REC_DAY] == 43200 &&
          in.held_seconds[0][DB_REC_PREV] == 86400);
    const struct db_rec_usage *u = &in.usage[0];
    CHECK(u->row.host == 0 && u->part == 0 && u->lb == 1);
    CHECK_STR(u->host_id, "a");
    CHECK_STR(u->row.brief_id, "b1");
    CHECK(u->row.reports == 2 && u->row.completed == 10 && u->row.busy_seconds == 30);
    CHECK(u->has_useful_end && u->useful_end == 900 && u->min_start == 100 && u->max_end == 1000);
    CHECK(u->has_p95 && u->p95_ms == 600 && !u->has_queue);
    u = &in.usage[1];
    CHECK(u->row.host == DB_NO_HOST && u->part == 2 && u->lb == 0 && u->row.brief_id == NULL);
    CHECK(!u->has_useful_end && !u->has_p95 && u->has_queue && u->queue_delay_ms == 5);
    const struct db_rec_host *h = &in.hosts[0];
    CHECK_STR(h->id, "a");
    CHECK_STR(h->project_id, "j1");
    CHECK_STR(h->project_name, "team-a");
    CHECK_STR(in.held[0].project_id, "j1");
    CHECK_STR(h->state, "ready");
    CHECK_STR(h->gpu_model, "h100_sxm");
    CHECK(h->accepted == 1 && h->active_job == 0 && h->price_per_hour == 4 && h->gpu_count == 8);
    CHECK(h->idle_stop_after_s.set && h->idle_stop_after_s.value == 1800);
    CHECK(h->scale_up_utilization.set && h->scale_up_utilization.value == 0.75);
    CHECK(!h->scale_down_utilization.set && !h->cost_increase.set);
    CHECK(h->failed_share.set && h->failed_share.value == 0.1);
    CHECK_STR(in.briefs[0].id, "b1");
    CHECK_STR(in.briefs[0].project_id, "k1");
    CHECK_STR(in.briefs[0].spec, "{\"name\":\"b\"}");
    /* the documents' text dropped, the ids kept (copied), the briefs' result freed */
    CHECK(db_rec_briefs_keep_ids(&in) == 0);
    CHECK(in.res[3] == NULL && in.brief_ids != NULL && in.briefs[0].spec == NULL);
    CHECK_STR(in.briefs[0].id, "b1");
    CHECK_STR(in.briefs[0].project_id, "k1");
    CHECK(in.res[2] != NULL && in.nbriefs == 1);
    CHECK(db_rec_briefs_keep_ids(&in) == 0); /* again: nothing left to drop */
    CHECK_STR(in.briefs[0].id, "b1");
    db_rec_input_free(&in);
    CHECK(in.held == NULL && in.usage == NULL && in.res[3] == NULL && in.brief_ids == NULL);
}

/* host_target: by name; db_host_target_free empties it and may run again; a struct
 * emptied by it can be filled again (no leak under ASan). */
static void host_target(void)
{
    static const char *const n[] = {"held",         "gpu_count",     "gpu_model",
                                    "stop_command", "scratch_path",  "durable_path",
                                    "port",         "state",         "host_key_sha256",
                                    "pool_id",      "credential_id", "ssh_user",
                                    "address",      "name",          "id"};
    static const char *const v[] = {"t",     "8",        "h100_sxm", "poweroff", NULL,
                                    "/data", "2222",     "ready",    NULL,       "p1",
                                    "c1",    "gpufleet", "10.0.0.1", "gpu-1",    "h1"};
    PGresult *r = FAKE(n, v);
    struct db_host_target t;
    CHECK(db_host_target_decode(r, &t) == DB_ONE_RESULT);
    CHECK_STR(t.id, "h1");
    CHECK_STR(t.name, "gpu-1");
    CHECK_STR(t.address, "10.0.0.1");
    CHECK_STR(t.user, "gpufleet");
    CHECK_STR(t.credential_id, "c1");
    CHECK_STR(t.pool_id, "p1");
    CHECK(t.host_key_sha256 == NULL && t.scratch_path == NULL);
    CHECK_STR(t.state, "ready");
    CHECK_STR(t.durable_path, "/data");
    CHECK_STR(t.stop_command, "poweroff");
    CHECK_STR(t.pool_gpu_model, "h100_sxm");
    CHECK(t.port == 2222 && t.pool_gpu_count == 8 && t.held == 1);
    db_host_target_free(&t);
    CHECK(t.id == NULL && t.state == NULL && t.port == 0);
    db_host_target_free(&t);
    CHECK(db_host_target_decode(r, &t) == DB_ONE_RESULT);
    db_host_target_free(&t);
    PQclear(r);
}

/* Out of memory at each copy in turn: never a half-filled target (a NULL that would
 * read as "no pin"), nothing leaked. */
static void host_target_oom(void)
{
    static const char *const n[] = {"held",         "gpu_count",     "gpu_model",
                                    "stop_command", "scratch_path",  "durable_path",
                                    "port",         "state",         "host_key_sha256",
                                    "pool_id",      "credential_id", "ssh_user",
                                    "address",      "name",          "id"};
    static const char *const v[] = {"f",   "1",  "l4", "x", "/s",       "/d", "22", "ready",
                                    "pin", "p1", "c1", "u", "10.0.0.1", "n",  "h1"};
    PGresult *r = FAKE(n, v);
    int failures = 0;
    for (int k = 1; k <= 20; k++) {
        struct db_host_target t;
        strdup_countdown = k;
        enum db_status s = db_host_target_decode(r, &t);
        int failed = strdup_countdown == 0;
        strdup_countdown = 0;
        if (failed) {
            failures++;
            CHECK(s == DB_HARD_ERROR);
            CHECK(t.id == NULL && t.host_key_sha256 == NULL && t.pool_gpu_model == NULL);
        } else {
            CHECK(s == DB_ONE_RESULT);
            CHECK_STR(t.host_key_sha256, "pin");
            db_host_target_free(&t);
        }
    }
    CHECK(failures == 12); /* every string column */
    PQclear(r);
}

/* The readiness facts: strings by name (NULL stays NULL), the numbers and flags; an
 * absent idle_stop_after_seconds reads as absent, not 0; free empties it. */
static void readiness_facts(void)
{
    static const char *const n[] = {"drill_every_days",
                                    "drill_age_seconds",
                                    "drill_max_recovery_seconds",
                                    "drill_recovery_seconds",
                                    "drill_finished_at",
                                    "drill_reason",
                                    "drill_verdict",
                                    "drill_host_id",
                                    "drill_id",
                                    "successful_provisionings",
                                    "accepted_gate_runs",
                                    "observability_message",
                                    "observability_status",
                                    "last_gate_id",
                                    "workload_values",
                                    "workload_status",
                                    "topology_values",
                                    "topology_status",
                                    "gate_stack_id",
                                    "gate_id",
                                    "cuda_version",
                                    "driver_version",
                                    "image_digest",
                                    "stack_id",
                                    "idle_stop_after_seconds",
                                    "auto_stop",
                                    "stop_command",
                                    "scratch_path",
                                    "durable_path",
                                    "pool_id",
                                    "key_type",
                                    "credential_id",
                                    "filesystems",
                                    "current_stack_id",
                                    "host_key_sha256",
                                    "state",
                                    "project",
                                    "host_id"};
    /* clang-format off */
    static const char *const v[] = {
        "7", "86400", "900", "61.5", "2026-01-01T00:00:00.000000Z", "recovered", "pass", "h9", "d1",
        "1",    "2",        NULL,    "skip", "g2",  "{\"value\":2400}", "pass", "null",
        "pass", "s1",       "g1",    "12.4", "550", "sha256:a",         "s1",   "1800",
        "t",    "poweroff", "/s",    "/d",   "p1",  "ssh-ed25519",      "c1",   "df lines",
        "s1",   NULL,       "ready", "{\"id\":\"j1\",\"name\":\"a\"}",   "h1"};
    /* clang-format on */
    PGresult *r = FAKE(n, v);
    struct db_readiness_facts f;
    CHECK(db_readiness_facts_decode(r, &f) == DB_ONE_RESULT);
    CHECK_STR(f.host_id, "h1");
    CHECK_STR(f.state, "ready");
    CHECK_STR(f.project, "{\"id\":\"j1\",\"name\":\"a\"}");
    CHECK(f.host_key_sha256 == NULL && f.observability_message == NULL);
    CHECK_STR(f.current_stack_id, "s1");
    CHECK_STR(f.filesystems, "df lines");
    CHECK_STR(f.credential_id, "c1");
    CHECK_STR(f.key_type, "ssh-ed25519");
    CHECK_STR(f.pool_id, "p1");
    CHECK_STR(f.durable_path, "/d");
    CHECK_STR(f.scratch_path, "/s");
    CHECK_STR(f.stop_command, "poweroff");
    CHECK(f.auto_stop == 1 && f.has_idle_stop_after == 1 && f.idle_stop_after_seconds == 1800);
    CHECK_STR(f.stack_id, "s1");
    CHECK_STR(f.image_digest, "sha256:a");
    CHECK_STR(f.driver_version, "550");
    CHECK_STR(f.cuda_version, "12.4");
    CHECK_STR(f.gate_id, "g1");
    CHECK_STR(f.gate_stack_id, "s1");
    CHECK_STR(f.topology_status, "pass");
    CHECK_STR(f.topology_values, "null");
    CHECK_STR(f.workload_status, "pass");
    CHECK_STR(f.workload_values, "{\"value\":2400}");
    CHECK_STR(f.last_gate_id, "g2");
    CHECK_STR(f.observability_status, "skip");
    CHECK(f.accepted_gate_runs == 2 && f.successful_provisionings == 1);
    CHECK_STR(f.drill_id, "d1");
    CHECK_STR(f.drill_host_id, "h9");
    CHECK_STR(f.drill_verdict, "pass");
    CHECK(f.drill_recovery_seconds == 61.5 && f.drill_max_recovery_seconds == 900);
    CHECK(f.drill_age_seconds == 86400 && f.drill_every_days == 7);
    db_readiness_facts_free(&f);
    CHECK(f.host_id == NULL && f.workload_values == NULL && f.accepted_gate_runs == 0);
    db_readiness_facts_free(&f);
    PQclear(r);

    static const char *const v2[] = {
        "0",  NULL, "-1", "-1", NULL, NULL, NULL, NULL, NULL, "0",          "0",  NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,         NULL, NULL, "f",
        NULL, NULL, NULL, "p1", NULL, NULL, NULL, NULL, NULL, "registered", "{}", "h1"};
    r = FAKE(n, v2);
    CHECK(db_readiness_facts_decode(r, &f) == DB_ONE_RESULT);
    CHECK(f.auto_stop == 0 && f.has_idle_stop_after == 0);
    CHECK(f.gate_id == NULL && f.stack_id == NULL && f.credential_id == NULL);
    CHECK(f.drill_id == NULL && f.drill_age_seconds == 0 && f.drill_recovery_seconds == -1);
    db_readiness_facts_free(&f);
    PQclear(r);
}

/* The catalog: one block with its strings and owners; formats as a mask; unknown formats
 * ignored; a catalog row has no project, a custom one its project. */
static void gpu_catalog(void)
{
    static const char *const n[] = {
        "supported_formats", "smi_memory_mib", "memory_gib", "display_name", "key",
        "project_id",        "shared"};
    static const char *const v[] = {"{fp8,bf16,weird}",
                                    "81559",
                                    "80",
                                    "NVIDIA H100",
                                    "h100",
                                    NULL,
                                    "t",
                                    "{}",
                                    "0",
                                    "24",
                                    "L4",
                                    "l4",
                                    "9c3f0e2a-1b2c-4d5e-8f90-a1b2c3d4e5f6",
                                    "f"};
    PGresult *r = FAKE(n, v);
    struct db_gpu_catalog cat = {0};
    CHECK(db_gpu_catalog_decode(r, &cat) == DB_MANY_RESULTS);
    PQclear(r); /* the catalog owns copies */
    CHECK(cat.n == 2);
    CHECK_STR(cat.gpus[0].key, "h100");
    CHECK_STR(cat.gpus[0].display_name, "NVIDIA H100");
    CHECK(cat.gpus[0].memory_gib == 80 && cat.gpus[0].smi_memory_mib == 81559);
    int fp8 = util_lookup(gpu_precision_names, "fp8");
    int bf16 = util_lookup(gpu_precision_names, "bf16");
    CHECK(fp8 >= 0 && bf16 >= 0);
    CHECK(cat.gpus[0].formats == ((1u << fp8) | (1u << bf16)));
    CHECK_STR(cat.gpus[1].key, "l4");
    CHECK(cat.gpus[1].formats == 0 && cat.gpus[1].smi_memory_mib == 0);
    CHECK(cat.owners[0].project_id == NULL && cat.owners[0].shared == 1);
    CHECK_STR(cat.owners[1].project_id, "9c3f0e2a-1b2c-4d5e-8f90-a1b2c3d4e5f6");
    CHECK(cat.owners[1].shared == 0);
    /* What a scope may use: the shared models and its projects' own. */
    struct svc_catalog sc = {.n = cat.n, .gpus = cat.gpus, .owners = cat.owners};
    struct gpu_model out[2];
    CHECK(svc_catalog_usable(&sc, NULL, out) == 2);
    CHECK(svc_catalog_usable(&sc, "{}", out) == 1);
    CHECK_STR(out[0].key, "h100");
    CHECK(svc_catalog_usable(&sc,
                             "{00000000-0000-4000-8000-000000000001,"
                             "9c3f0e2a-1b2c-4d5e-8f90-a1b2c3d4e5f6}",
                             out) == 2);
    CHECK_STR(out[1].key, "l4");
    CHECK(svc_catalog_usable(&sc, "{9c3f0e2a-1b2c-4d5e-8f90-a1b2c3d4e5f7}", out) == 1);
    CHECK(svc_catalog_usable(&sc, "{9c3f0e2a-1b2c-4d5e-8f90-a1b2c3d4e5f6}", out) == 2);
    db_gpu_catalog_free(&cat);
    CHECK(cat.gpus == NULL && cat.n == 0);
}

/* Baselines for the comparison: every condition by its name, integers as integers, SQL
 * NULL as is_null; the strings borrow from the result the struct owns. */
static void baselines(void)
{
    static const char *const n[] = {"value",     "cache",          "concurrency",   "input",
                                    "metric",    "stack_id",       "workload_hash", "gpu_count",
                                    "gpu_model", "model_revision", "framework",     "id"};
    static const char *const v[] = {
        "2350.5",
        "warm",
        "16",
        NULL,
        "tokens_per_second",
        "s1",
        "sha256:aa",
        "8",
        "H100",
        "0e9e39f",
        "vllm",
        "b1",
        "12",
        NULL,
        NULL,
        "sharegpt",
        "items_per_second",
        "s1",
        NULL,
        NULL,
        "L4",
        NULL,
        "tgi",
        "b2",
    };
    struct db_baselines b = {0};
    CHECK(db_baselines_decode(FAKE(n, v), &b) == DB_MANY_RESULTS);
    CHECK(b.n == 2);
    const struct baseline *x = &b.rows[0];
    CHECK_STR(x->id, "b1");
    CHECK(x->value == 2350.5);
    CHECK_STR(x->cond[BL_FRAMEWORK].s, "vllm");
    CHECK_STR(x->cond[BL_MODEL_REVISION].s, "0e9e39f");
    CHECK_STR(x->cond[BL_GPU_MODEL].s, "H100");
    CHECK(!x->cond[BL_GPU_COUNT].is_null && x->cond[BL_GPU_COUNT].i == 8);
    CHECK(x->cond[BL_GPU_COUNT].s == NULL);
    CHECK_STR(x->cond[BL_WORKLOAD_HASH].s, "sha256:aa");
    CHECK_STR(x->cond[BL_METRIC].s, "tokens_per_second");
    CHECK(x->cond[BL_INPUT].is_null && x->cond[BL_INPUT].s == NULL);
    CHECK(x->cond[BL_CONCURRENCY].i == 16);
    CHECK_STR(x->cond[BL_CACHE].s, "warm");
    const struct baseline *y = &b.rows[1];
    CHECK_STR(y->id, "b2");
    CHECK(y->cond[BL_GPU_COUNT].is_null && y->cond[BL_CONCURRENCY].is_null);
    CHECK(y->cond[BL_MODEL_REVISION].is_null && y->cond[BL_CACHE].is_null);
    CHECK_STR(y->cond[BL_INPUT].s, "sharegpt");
    db_baselines_free(&b);
    CHECK(b.rows == NULL && b.n == 0 && b.res == NULL);
    db_baselines_free(&b); /* twice: harmless */
    static const char *const none[1] = {NULL};
    CHECK(db_baselines_decode(fake(12, n, 0, none), &b) == DB_NO_RESULTS);
    CHECK(b.n == 0 && b.rows != NULL);
    db_baselines_free(&b);
}

/* Events read back: by name, "" pool and host kept as such; freeing empties. */
static void event_rows(void)
{
    static const char *const n[] = {"doc", "host_id", "pool_id", "type", "id", "project_id"};
    static const char *const v[] = {"{\"id\":7}", "",   "p1", "host.state", "7", "",
                                    "{\"id\":9}", "h1", "",   "job.state",  "9", "j1"};
    struct db_event_rows ev = {0};
    CHECK(db_event_rows_decode(FAKE(n, v), &ev) == DB_MANY_RESULTS);
    CHECK(ev.n == 2 && ev.rows[0].id == 7 && ev.rows[1].id == 9);
    CHECK_STR(ev.rows[0].type, "host.state");
    CHECK_STR(ev.rows[0].pool_id, "p1");
    CHECK_STR(ev.rows[0].host_id, "");
    CHECK_STR(ev.rows[1].doc, "{\"id\":9}");
    CHECK_STR(ev.rows[0].project_id, "");
    CHECK_STR(ev.rows[1].project_id, "j1");
    db_event_rows_free(&ev);
    CHECK(ev.n == 0 && ev.rows == NULL && ev.res == NULL);
    db_event_rows_free(&ev);
}

/* The pool refuses a second init (it would lose the first's connections and URL), and
 * can be made again after a shutdown. Nothing connects: connections open lazily. */
static void pool_init_twice(void)
{
    CHECK(db_pool_init("host=/nonexistent dbname=x", 2) == 0);
    CHECK(db_pool_init("host=/nonexistent dbname=y", 3) == -1);
    struct db_pool_stats st;
    db_pool_stats(&st);
    CHECK(st.size == 2 && st.in_use == 0 && st.connected == 0);
    db_pool_shutdown();
    CHECK(db_pool_init("host=/nonexistent dbname=x", 1) == 0);
    db_pool_shutdown();
    db_pool_stats(&st);
    CHECK(st.size == 0);
}

/* db_try_acquire (a second connection beside the caller's, db_send) never waits: without
 * a reachable server it answers NULL at once and gives the slot back. */
static void try_acquire(void)
{
    enum log_level lvl = log_get_level();
    log_set_level(LOG_ERROR); /* the failed connection logs a warning */
    CHECK(db_pool_init("host=/nonexistent dbname=x", 1) == 0);
    int64_t t0 = util_mono_us();
    CHECK(db_try_acquire() == NULL);
    CHECK(db_try_acquire() == NULL); /* within the reconnect backoff */
    CHECK(util_mono_us() - t0 < 2000000);
    struct db_pool_stats st;
    db_pool_stats(&st);
    CHECK(st.in_use == 0);
    db_pool_shutdown();
    log_set_level(lvl);
}

/* A pool or listener whose strings cannot be copied is not made, and leaks nothing. */
static void pool_listener_oom(void)
{
    strdup_countdown = 1;
    CHECK(db_pool_init("host=/nonexistent dbname=x", 1) == -1);
    strdup_countdown = 0;
    CHECK(db_pool_init("host=/nonexistent dbname=x", 1) == 0); /* it was not half-made */
    db_pool_shutdown();
    for (int k = 1; k <= 2; k++) {
        strdup_countdown = k;
        struct db_listener *l = db_listen("host=/nonexistent dbname=x", "gpufleet_events");
        strdup_countdown = 0;
        CHECK(l == NULL);
    }
}

/* A listener whose server is not there yet: no socket, nothing leaks when freed. */
static void listener_unreachable(void)
{
    enum log_level lvl = log_get_level();
    log_set_level(LOG_ERROR); /* the failed connection logs a warning */
    struct db_listener *l = db_listen("host=/nonexistent dbname=x", "gpufleet_events");
    log_set_level(lvl);
    CHECK(l != NULL);
    CHECK(db_listener_fd(l) == -1); /* within the reconnect backoff */
    db_listener_free(l);
    db_listener_free(NULL);
}

UNIT_SUITE(db_tests) = {
    {"db: every statement is found by name", registry},
    {"db: try_acquire never waits for a slot", try_acquire},
    {"db: cost inputs decoded by column name", cost_decode},
    {"db: recommendation inputs decoded by column name", rec_decode},
    {"db: host target decoded, freed, filled again", host_target},
    {"db: host target out of memory at each copy", host_target_oom},
    {"db: readiness facts decoded by column name", readiness_facts},
    {"db: GPU catalog in one block", gpu_catalog},
    {"db: baselines decoded by column name", baselines},
    {"db: events read back", event_rows},
    {"db: the pool is made once", pool_init_twice},
    {"db: pool and listener out of memory", pool_listener_oom},
    {"db: a listener without a server", listener_unreachable},
    UNIT_END,
};
