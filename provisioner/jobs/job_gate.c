/* job_gate.c — the gate and diagnostics job kinds: load the host, its pool and its current
 * stack (the host goes gating, or diagnosing), connect, then each check in order, each of
 * its commands recorded as a job step before the next runs; each check is judged in
 * memory as soon as its commands are in, and the verdict is computed from those outcomes
 * and written with every check's evidence. A query that times out twice stops the gate:
 * that check is a timeout, the rest are recorded as not run, and the job fails
 * timed_out with the evidence written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "db/gates.h"
#include "planner/gate.h"
#include "provisioner/jobs/gate_bandwidth.h"
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/jobs/gate_storage.h"
#include "provisioner/jobs/gate_targeted.h"
#include "provisioner/jobs/job.h"

struct gate_job {
    struct job_task t; /* first: the core's part */
    int is_diag;
    struct prov_targeted tg; /* targeted diagnostics: the tests' checks (tg.n 0: dcgmi) */
    json_t *previous;        /* their previous accepted values (gate_targeted.h) */
    json_t *baselines;       /* the pool's workload baselines (gate_targeted.h) */
    struct prov_gate gate;
    struct db_gate_context gctx;
    json_t *pool;  /* pool spec (owns strings the gate points into) */
    json_t *stack; /* current stack doc */
    char *image_ref;
    int check;  /* index into the job's checks */
    int cmd_i;  /* command within the check */
    int cmd_no; /* commands run so far (job step index) */
    struct prov_cmd_result res[GATE_MAX_CMDS];
    char *res_out[GATE_MAX_CMDS], *res_err[GATE_MAX_CMDS];
    double check_command_ms;
    int check_timed_out, check_timeout_s; /* the timeout of the command that ran past it */
    json_t *checks;                       /* recorded entries so far */
    struct plan_check_outcome outs[PROV_CHECK__COUNT]; /* the outcomes, in memory */
    int nouts;
    char timed_out_msg[320]; /* a query timed out twice: the gate stops here */
    char started_at[40];
    /* the last command's outcome, acted on once it is recorded */
    int ran, timed_out, was_query, kept;
    /* the verdict, for the finishing transaction */
    const char *verdict;
    char reason[400];
};

static struct gate_job *gj_of(struct job_task *t)
{
    return (struct gate_job *)t;
}

static const int gate_order[] = {PROV_CHECK_GPU_INVENTORY, PROV_CHECK_CONTAINER_GPU,
                                 PROV_CHECK_WORKLOAD,      PROV_CHECK_TOPOLOGY,
                                 PROV_CHECK_STORAGE,       PROV_CHECK_STORAGE_THROUGHPUT,
                                 PROV_CHECK_OBSERVABILITY, PROV_CHECK_BANDWIDTH};
#define NGATE (int)(sizeof gate_order / sizeof gate_order[0])

static int gate_total(const struct gate_job *g)
{
    return g->is_diag ? (g->tg.n ? g->tg.n : 1) : NGATE;
}
/* -1: a targeted test whose check this build does not have */
static int gate_check_at(const struct gate_job *g, int i)
{
    return g->is_diag ? (g->tg.n ? g->tg.id[i] : PROV_CHECK_DIAGNOSTICS) : gate_order[i];
}

static void free_outputs(struct gate_job *g)
{
    for (int i = 0; i < GATE_MAX_CMDS; i++) {
        free(g->res_out[i]);
        free(g->res_err[i]);
        g->res_out[i] = g->res_err[i] = NULL;
    }
}

/* Records one check: the outcome in memory (what the verdict is computed from) and its
 * JSON entry (what is stored). An entry that cannot be built or kept leaves the outcome
 * marked unrecorded, and the verdict names it (investigate). */
static void record_check(struct gate_job *g, int check, const struct prov_check_out *o, int ncmds,
                         double parse_ms)
{
    if (g->nouts >= PROV_CHECK__COUNT)
        return;
    struct plan_check_outcome *out = &g->outs[g->nouts++];
    out->name = check >= 0 ? prov_check_names[check] : g->tg.check[g->check];
    out->status = o->status;
    out->hardware_evidence = o->hardware_evidence;
    out->recorded = 0;
    struct sbuf b;
    sbuf_init(&b, 1024);
    for (int i = 0; i < ncmds; i++) {
        if (g->res_out[i] && *g->res_out[i])
            sbuf_adds(&b, g->res_out[i]);
        if (g->res_err[i] && *g->res_err[i]) {
            sbuf_adds(&b, "[stderr] ");
            sbuf_adds(&b, g->res_err[i]);
        }
    }
    size_t len = 0;
    char *text = sbuf_take(&b, &len);
    json_t *entry = prov_check_entry(out->name, o, text ? text : "", text ? len : 0,
                                     g->check_command_ms, parse_ms);
    free(text);
    if (entry != NULL && g->tg.n > 0) { /* targeted: compared with the accepted gate */
        json_t *cmp = prov_targeted_compare(g->tg.test[g->check], out->name, o->values, g->previous,
                                            g->gctx.current_stack_id, g->baselines);
        if (cmp == NULL || json_object_set_new(entry, "comparison", cmp) != 0) {
            json_decref(entry);
            entry = NULL;
        }
    }
    out->recorded = entry != NULL && json_array_append_new(g->checks, entry) == 0;
    if (!out->recorded)
        log_msg(LOG_ERROR, "job %s: check %s ran but could not be recorded", g->t.job.id,
                out->name);
}

/* A check that runs no command: recorded with a status and a message. */
static void record_bare(struct gate_job *g, int check, enum plan_check_status status,
                        const char *message)
{
    struct prov_check_out o = {status, 0, "", NULL};
    snprintf(o.message, sizeof o.message, "%s", message);
    record_check(g, check, &o, 0, 0);
}

/* Runs the current check's current command, skipping (and recording) the checks that do
 * not apply; after the last check, the verdict. */
static void run_current(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    while (g->check < gate_total(g)) {
        int check = gate_check_at(g, g->check);
        char why[160];
        if (check < 0) {
            record_bare(g, check, PLAN_CHECK_SKIP,
                        "this version of gpufleet has no such gate check");
            g->check++;
            continue;
        }
        if (g->cmd_i == 0) {
            g->check_command_ms = 0;
            g->check_timed_out = 0;
            free_outputs(g);
            int applies = prov_check_applies(&g->gate, (enum prov_check)check, why, sizeof why);
            if (!applies && check == PROV_CHECK_STORAGE_THROUGHPUT) {
                g->check++; /* opt-in (gate.storage): not recorded when the pool has none */
                continue;
            }
            if (!applies || g->timed_out_msg[0]) {
                record_bare(g, check, PLAN_CHECK_SKIP,
                            applies ? "not run: an earlier query did not answer" : why);
                g->check++;
                continue;
            }
        }
        t->cmd = prov_check_cmd(&g->gate, (enum prov_check)check, g->cmd_i);
        if (t->cmd == NULL) {
            record_bare(g, check, PLAN_CHECK_FAIL,
                        "a value failed validation while building the command");
            g->check++;
            g->cmd_i = 0;
            continue;
        }
        enum prov_cmd_class k = prov_check_cmd_class(&g->gate, (enum prov_check)check, g->cmd_i);
        int own = check == PROV_CHECK_DIAGNOSTICS
                      ? t->w->cfg->diag_timeout_s[g->gate.diag_level - 1]
                      : prov_check_timeout(&g->gate, (enum prov_check)check, g->cmd_i);
        job_exec(t, k, own);
        return;
    }
    job_finish(t);
}

/* Every command of the check is in: judge it (in memory), then the next check. */
static void judge_check(struct gate_job *g, int check, int ncmds)
{
    struct prov_check_out o;
    int64_t p0 = util_mono_us();
    if (g->check_timed_out) {
        memset(&o, 0, sizeof o);
        o.status = PLAN_CHECK_TIMEOUT;
        if (g->timed_out_msg[0])
            snprintf(o.message, sizeof o.message, "%s", g->timed_out_msg);
        else
            snprintf(o.message, sizeof o.message, "a command exceeded its timeout (%d s)",
                     g->check_timeout_s);
    } else if (!g->kept) {
        memset(&o, 0, sizeof o);
        o.status = PLAN_CHECK_FAIL;
        snprintf(o.message, sizeof o.message, "out of memory keeping the command output");
    } else {
        prov_check_eval(&g->gate, (enum prov_check)check, g->res, ncmds, &o);
    }
    record_check(g, check, &o, ncmds, (double)(util_mono_us() - p0) / 1000.0);
    json_decref(o.values);
    g->check++;
    g->cmd_i = 0;
}

/* The command's result is recorded: the next command, or the check's judgement. */
static void recorded(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    int check = gate_check_at(g, g->check);
    int ncmds = prov_check_ncmds(&g->gate, (enum prov_check)check);
    if (g->timed_out && g->was_query) {
        /* A query that timed out twice: the host does not answer. Record this check as
         * timed out and the rest as not run, then end with the evidence. */
        g->cmd_i = ncmds;
    } else if (!g->ran && !g->timed_out) {
        /* the session is gone: the remaining commands of this check cannot run */
        for (int k = g->cmd_i + 1; k < ncmds; k++)
            g->res[k] = (struct prov_cmd_result){0, -1, "", "not run"};
        g->cmd_i = ncmds;
    } else {
        g->cmd_i++;
    }
    if (g->cmd_i >= ncmds)
        judge_check(g, check, ncmds);
    run_current(t);
}

static char *keep_output(const char *s)
{
    return strdup(s ? s : "");
}

static void on_exec(struct job_task *t, const struct prov_ssh_exec_result *r)
{
    struct gate_job *g = gj_of(t);
    int check = gate_check_at(g, g->check);
    int i = g->cmd_i;
    g->ran = r->err == PROV_SSH_OK;
    free(g->res_out[i]);
    free(g->res_err[i]);
    g->res_out[i] = keep_output(r->out_tail);
    g->res_err[i] = keep_output(g->ran ? r->err_tail : r->message);
    g->kept = g->res_out[i] != NULL && g->res_err[i] != NULL;
    g->res[i] = (struct prov_cmd_result){g->kept && g->ran && r->exit_status >= 0, r->exit_status,
                                         g->res_out[i] ? g->res_out[i] : "",
                                         g->res_err[i] ? g->res_err[i] : "out of memory"};
    int64_t took = r->duration_us + (t->cmd_retried ? t->first_try_us : 0);
    g->check_command_ms += (double)took / 1000.0;
    g->timed_out = job_timed_out(r);
    g->was_query = t->cmd_class == PROV_CMD_QUERY;
    if (g->timed_out && !g->check_timed_out)
        g->check_timeout_s = t->cmd_timeout_s;
    if (g->timed_out)
        g->check_timed_out = 1;
    /* the command, for the job's step list */
    char msg[300];
    if (g->timed_out)
        job_timeout_message(t, r, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s command %d: %s", prov_check_names[check], i + 1,
                 g->ran ? "ran" : prov_ssh_err_name(r->err));
    if (g->timed_out && g->was_query)
        snprintf(g->timed_out_msg, sizeof g->timed_out_msg, "%s", msg);
    struct db_job_step st = {++g->cmd_no,
                             "check",
                             prov_check_names[check],
                             t->cmd,
                             g->ran ? "ok" : "error",
                             r->out_tail,
                             r->err_tail,
                             msg,
                             r->exit_status >= 0,
                             r->exit_status,
                             (double)took / 1000.0};
    job_record(t, &st, r, prov_provision_nsteps, "a command's result", recorded);
}

static void on_connect(struct job_task *t, const struct prov_ssh_conn_status *st)
{
    job_contact(t, st, run_current);
}

static enum db_status gate_finish_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    struct gate_job *g = gj_of(t);
    /* a query that timed out twice: the evidence is written, and the job fails */
    enum db_status s =
        job_mark_done(c, t, g->timed_out_msg[0] ? "timed_out" : NULL, g->timed_out_msg);
    if (s <= 0)
        return s;
    char *checks = json_dumps(g->checks, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (checks == NULL)
        return DB_HARD_ERROR; /* not recorded: the lease expires and the gate runs again */
    struct db_gate_run_new run = {g->is_diag ? "diagnostics" : "gate",
                                  t->job.host_id,
                                  t->job.id,
                                  g->gctx.current_stack_id,
                                  g->gctx.pool_id,
                                  g->verdict,
                                  g->reason,
                                  checks,
                                  NULL,
                                  g->started_at,
                                  g->is_diag ? 0 : g->gctx.gate_version,
                                  g->is_diag && g->tg.n == 0 ? g->gate.diag_level : 0,
                                  t->connect_ms};
    char run_id[37] = "";
    s = db_gate_run_insert(c, &run, run_id);
    free(checks);
    if (s < 0)
        return s;
    char reason[600];
    snprintf(reason, sizeof reason, "%s verdict %s: %s", g->is_diag ? "diagnostics" : "gate",
             g->verdict, g->reason);
    enum plan_host_event ev = plan_host_verdict_event(g->is_diag, g->verdict);
    if (ev == HE_GATE_ACCEPTED && !g->gctx.has_current_stack) {
        ev = HE_GATE_INVESTIGATE; /* gated against the desired stack: evidence only */
        snprintf(reason, sizeof reason,
                 "gate verdict accept on the desired stack, but provisioning has not succeeded: "
                 "provision the host, then gate it again");
    }
    s = job_host_event(c, t, ev, -1, reason, ev == HE_GATE_ACCEPTED ? run_id : NULL);
    if (s < 0)
        return s;
    return db_host_seen(c, t->job.host_id);
}

static void verdict_logged(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:s, s:s}", "msg", "gate verdict", "job_id",
                                       t->job.id, "host_id", t->job.host_id, "verdict", g->verdict,
                                       "reason", g->reason));
}

/* The verdict, from the outcomes in memory; then the fenced transaction that writes it. */
static void finish(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    enum plan_verdict v = plan_gate_verdict(g->outs, g->nouts, g->reason, sizeof g->reason);
    if (g->timed_out_msg[0] && v == PLAN_ACCEPT)
        v = PLAN_INVESTIGATE; /* cannot happen (a timed-out check fails); fail closed anyway */
    g->verdict = plan_verdict_names[v];
    job_end(t, gate_finish_fn, "the verdict", verdict_logged);
}

static unsigned checks_mask(const json_t *arr)
{
    unsigned m = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        for (int k = 0; k < PROV_CHECK__COUNT; k++)
            if (json_string_value(v) && !strcmp(json_string_value(v), prov_check_names[k]))
                m |= 1u << k;
    }
    return m;
}

static enum db_status reads(struct db_conn *c, struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    db_gate_context_free(&g->gctx);
    return db_gate_context(c, t->job.host_id, t->job.id, &g->gctx);
}

static void loaded(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    if (g->gctx.current_stack_id == NULL || g->gctx.stack_doc == NULL) {
        job_fail(t, "step_failed", "the host has no current stack: provision it first", 0);
        return;
    }
    g->pool = json_loads(g->gctx.pool_spec ? g->gctx.pool_spec : "{}", 0, NULL);
    g->stack = json_loads(g->gctx.stack_doc, 0, NULL);
    char digest[80];
    g->image_ref = prov_image_ref(json_string_value(json_object_get(g->stack, "image")), digest,
                                  sizeof digest);
    if (g->pool == NULL || g->image_ref == NULL) {
        job_fail(t, "step_failed", "the pool or stack document does not pass validation", 0);
        return;
    }
    const json_t *gate = json_object_get(g->pool, "gate");
    const json_t *wl = json_object_get(gate, "workload");
    g->gate = (struct prov_gate){
        .image_ref = g->image_ref,
        .driver_version = json_string_value(json_object_get(g->stack, "driver_version")),
        .expected_gpus = (int)json_integer_value(json_object_get(g->pool, "gpu_count")),
        .expected_gpu_name = g->gctx.gpu_name,
        .expected_memory_mib = g->gctx.gpu_memory_mib,
        .na_fields = g->gctx.na_fields,
        .link_class = json_string_value(json_object_get(gate, "link_class")),
        .storage_min_mbps = json_number_value(json_object_get(gate, "storage_min_mbps")),
        .durable_path = t->host.durable_path,
        .scratch_path = t->host.scratch_path,
        .workload_command = json_object_get(wl, "command"),
        .workload_metric = json_string_value(json_object_get(wl, "metric")),
        .workload_min = json_number_value(json_object_get(wl, "min")),
        .workload_timeout_s = (int)json_integer_value(json_object_get(wl, "timeout_s")),
        .observability_url = json_string_value(json_object_get(gate, "observability_url")),
        .checks = checks_mask(json_object_get(gate, "checks")),
        .diag_level = g->gctx.diag_level >= 1 && g->gctx.diag_level <= 3 ? g->gctx.diag_level : 1,
    };
    gate_bw_config(&g->gate, g->pool);
    prov_storage_ref_load(&g->gate.storage, json_object_get(gate, "storage"),
                          (g->gate.checks >> PROV_CHECK_STORAGE_THROUGHPUT) & 1u);
    if (g->is_diag && g->gctx.diag_tests != NULL) { /* targeted: the named checks, always */
        if (prov_targeted_parse(g->gctx.diag_tests, &g->tg) != 0) {
            job_fail(t, "step_failed", "the job's tests do not read", 0);
            return;
        }
        g->gate.checks = 0;
        g->gate.storage.enabled = 1;
        g->previous = g->gctx.previous ? json_loads(g->gctx.previous, 0, NULL) : NULL;
        g->baselines = g->gctx.pool_baselines ? json_loads(g->gctx.pool_baselines, 0, NULL) : NULL;
    }
    job_connect(t);
}

static void start(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    g->is_diag = t->kind == &job_kind_diagnostics;
    g->checks = json_array();
    if (g->checks == NULL) {
        job_fail(t, "step_failed", "out of memory", 1);
        return;
    }
    util_rfc3339(util_now_us(), g->started_at, sizeof g->started_at);
    snprintf(t->load.reason, sizeof t->load.reason, "%s (job attempt %d)",
             g->is_diag ? "active diagnostics" : "acceptance gate", t->job.attempt);
    job_load(t, g->is_diag ? HE_DIAGNOSTICS_STARTED : HE_GATE_STARTED, reads,
             "the host, its pool or its stack", loaded);
}

static enum plan_host_event end_event(const struct job_task *t, const char *error_class, int *hint)
{
    *hint = -1;
    if (error_class == NULL)
        return HE_JOB_CANCELLED;
    return t->kind == &job_kind_diagnostics ? HE_DIAGNOSTICS_FINISHED : HE_GATE_INVESTIGATE;
}

static void release(struct job_task *t)
{
    struct gate_job *g = gj_of(t);
    free_outputs(g);
    json_decref(g->checks);
    json_decref(g->pool);
    json_decref(g->stack);
    json_decref(g->previous);
    json_decref(g->baselines);
    free(g->image_ref);
    db_gate_context_free(&g->gctx);
}

const struct job_kind job_kind_gate = JOB_KIND("gate", "gate", struct gate_job);
const struct job_kind job_kind_diagnostics =
    JOB_KIND("diagnostics", "diagnostics", struct gate_job);
