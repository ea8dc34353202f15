/* job_drill.c — the restore drill job kind (docs/hosts-and-gates.md "Restore drills"): on
 * a drained host (it goes diagnosing, and back to drained), as a replacement host would:
 *
 *   restore     copy every artifact of the pool's durable_state from durable_path to a
 *               fresh directory on scratch_path (dd: the durable path's read rate applies)
 *   verify      sha256sum each restored copy; the control plane compares them with the
 *               pool's sums (a mismatch or a missing artifact fails, naming it)
 *   start       the host's pinned stack image starts with the GPUs and the restored copy
 *               mounted read-only (the gate's container_gpu command and judge)
 *   first_work  the pool's gate workload in that image, against the restored copy, until
 *               its first success (the gate's workload command and judge; at most
 *               DRILL_WORK_TRIES attempts, none started past max_recovery_seconds)
 *   cleanup     the scratch copy is removed (not counted in the recovery time)
 *
 * Each command is a job step, timed on the host's channel. recovery_seconds = restore
 * (copy and verify) + start + first work; the verdict is fail when a step fails or the
 * total exceeds drill.max_recovery_seconds. Fail closed: an output that does not read is
 * a failure naming what was not read, never a pass. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sbuf.h"
#include "common/utf8.h"
#include "common/util.h"
#include "db/drills.h"
#include "db/gates.h"
#include "provisioner/jobs/gate_checks.h"
#include "provisioner/jobs/job.h"
#include "provisioner/shell.h"

#define DRILL_MAX_ARTIFACTS 16
#define DRILL_WORK_TRIES    3
#define DRILL_DEFAULT_MAX_S 900

enum drill_step { DS_RESTORE, DS_VERIFY, DS_START, DS_WORK, DS_CLEANUP, DS__DONE };
static const char *const step_names[] = {"restore", "verify", "start", "first_work", "cleanup"};

struct drill_job {
    struct job_task t; /* first: the core's part */
    struct db_gate_context gctx;
    json_t *pool, *stack;
    char *image_ref;
    struct prov_gate gate;
    int n;                                 /* artifacts */
    const char *path[DRILL_MAX_ARTIFACTS]; /* relative (borrowed from pool) */
    const char *sum[DRILL_MAX_ARTIFACTS];
    char dir[600]; /* the scratch copy */
    double max_s;
    enum drill_step step;
    int tries, cmd_no;
    double secs[DS__DONE]; /* < 0: not reached */
    long long bytes;
    json_t *steps;
    int failed; /* a step failed: no further recovery step, cleanup only */
    char reason[600];
    char started_at[40];
};

static struct drill_job *dj_of(struct job_task *t)
{
    return (struct drill_job *)t;
}

static void fail_with(struct drill_job *d, const char *fmt, const char *a, const char *b)
{
    if (d->failed)
        return;
    d->failed = 1;
    char raw[600];
    snprintf(raw, sizeof raw, fmt, a ? a : "", b ? b : "");
    utf8_clean(raw, strlen(raw), d->reason, sizeof d->reason);
}

/* "durable/rel" or "dir/rel", validated as an absolute path; 0 when it does not pass. */
static int join(char *out, size_t n, const char *base, const char *rel)
{
    return base && rel && snprintf(out, n, "%s/%s", base, rel) < (int)n && prov_valid_abs_path(out);
}

/* The restore: per artifact, missing -> "missing I", else the copy and its size. */
static char *restore_cmd(const struct drill_job *d)
{
    struct sbuf b;
    sbuf_init(&b, 1024);
    sbuf_adds(&b, "rm -rf -- ");
    prov_sh_quote(&b, d->dir);
    sbuf_adds(&b, " && mkdir -p -- ");
    prov_sh_quote(&b, d->dir);
    sbuf_adds(&b, " || { echo 'cannot create the scratch directory'; exit 2; }");
    for (int i = 0; i < d->n; i++) {
        char src[1200], dst[1200], parent[1200];
        if (!join(src, sizeof src, d->gate.durable_path, d->path[i]) ||
            !join(dst, sizeof dst, d->dir, d->path[i])) {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
        snprintf(parent, sizeof parent, "%s", dst);
        *strrchr(parent, '/') = '\0';
        sbuf_printf(&b, "; test -f ");
        prov_sh_quote(&b, src);
        sbuf_printf(&b, " || { echo 'missing %d'; exit 3; }; mkdir -p -- ", i);
        prov_sh_quote(&b, parent);
        sbuf_adds(&b, " && dd if=");
        prov_sh_quote(&b, src);
        sbuf_adds(&b, " of=");
        prov_sh_quote(&b, dst);
        sbuf_printf(&b,
                    " bs=4M 2>/dev/null || { echo 'copy failed %d'; exit 4; }; echo \"copied %d"
                    " $(stat -c %%s -- ",
                    i, i);
        prov_sh_quote(&b, dst);
        sbuf_adds(&b, ")\"");
    }
    return sbuf_take(&b, NULL);
}

/* One line per artifact: its sha256 ("HEX  -"), or "unreadable". */
static char *verify_cmd(const struct drill_job *d)
{
    struct sbuf b;
    sbuf_init(&b, 1024);
    sbuf_adds(&b, "true");
    for (int i = 0; i < d->n; i++) {
        char dst[1200];
        if (!join(dst, sizeof dst, d->dir, d->path[i])) {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
        sbuf_adds(&b, "; sha256sum < ");
        prov_sh_quote(&b, dst);
        sbuf_adds(&b, " 2>/dev/null || echo unreadable");
    }
    return sbuf_take(&b, NULL);
}

static char *cleanup_cmd(const struct drill_job *d)
{
    const char *args[2] = {d->dir, d->dir};
    return prov_sh_template("rm -rf -- %s; test -e %s && exit 3; exit 0", 2, args);
}

/* ---- judging a step's output ---- */

static void judge_restore(struct drill_job *d, const struct prov_ssh_exec_result *r)
{
    const char *s = r->out_tail;
    int seen = 0;
    long long bytes = 0;
    while (s && *s) {
        int i;
        long long sz;
        if (sscanf(s, "copied %d %lld", &i, &sz) == 2 && i == seen && sz >= 0) {
            bytes += sz;
            seen++;
        } else if (sscanf(s, "missing %d", &i) == 1 && i >= 0 && i < d->n) {
            fail_with(d, "artifact %s is missing from the durable path%s", d->path[i], "");
        } else if (sscanf(s, "copy failed %d", &i) == 1 && i >= 0 && i < d->n) {
            fail_with(d, "artifact %s could not be copied to scratch%s", d->path[i], "");
        }
        const char *nl = strchr(s, '\n');
        s = nl ? nl + 1 : NULL;
    }
    d->bytes = bytes;
    if (!d->failed && (r->exit_status != 0 || seen != d->n || r->out_total > 8192))
        fail_with(d, "the restore did not report every artifact copied (exit %s)%s",
                  r->exit_status == 0 ? "0" : "non-zero", "");
}

static void judge_verify(struct drill_job *d, const struct prov_ssh_exec_result *r)
{
    const char *s = r->out_tail;
    int i = 0;
    if (r->out_total > 8192) {
        fail_with(d, "the checksums' output was not read whole%s%s", "", "");
        return;
    }
    for (; i < d->n && s && *s; i++) {
        if (strncmp(s, "unreadable", 10) == 0) {
            fail_with(d, "artifact %s could not be read back from scratch%s", d->path[i], "");
            return;
        }
        size_t hex = strspn(s, "0123456789abcdef");
        if (hex != 64 || (s[64] != ' ' && s[64] != '\n' && s[64] != '\0'))
            break;
        if (strncmp(s, d->sum[i], 64) != 0) {
            char got[65];
            memcpy(got, s, 64);
            got[64] = '\0';
            fail_with(d, "artifact %s does not match its sha256 (the restored copy's is %s)",
                      d->path[i], got);
            return;
        }
        const char *nl = strchr(s, '\n');
        s = nl ? nl + 1 : NULL;
    }
    if (i != d->n)
        fail_with(d, "the checksum of artifact %s was not read%s", d->path[i < d->n ? i : 0], "");
}

/* container_gpu or workload, by the gate's own judge. */
static int judge_gate(struct drill_job *d, enum prov_check c, const struct prov_ssh_exec_result *r,
                      char *msg, size_t n)
{
    struct prov_cmd_result res = {r->err == PROV_SSH_OK && r->exit_status >= 0, r->exit_status,
                                  r->out_tail, r->err == PROV_SSH_OK ? r->err_tail : r->message};
    struct prov_check_out o;
    memset(&o, 0, sizeof o);
    prov_check_eval(&d->gate, c, &res, 1, &o);
    utf8_clean(o.message, strlen(o.message), msg, n);
    json_decref(o.values);
    return o.status == PLAN_CHECK_PASS;
}

/* ---- the steps ---- */

/* copy and verify */
static double restore_s(const struct drill_job *d)
{
    if (d->secs[DS_RESTORE] < 0)
        return -1;
    return d->secs[DS_RESTORE] + (d->secs[DS_VERIFY] > 0 ? d->secs[DS_VERIFY] : 0);
}

static double total_s(const struct drill_job *d)
{
    double t = 0;
    for (int i = DS_RESTORE; i <= DS_WORK; i++)
        t += d->secs[i] > 0 ? d->secs[i] : 0;
    return t;
}

static void run_step(struct job_task *t);

static void step_recorded(struct job_task *t)
{
    run_step(t);
}

static void add_step(struct drill_job *d, const char *name, const char *status, double secs,
                     const char *message)
{
    char clean[700];
    utf8_clean(message, strlen(message), clean, sizeof clean);
    json_array_append_new(d->steps, json_pack("{s:s, s:s, s:f, s:s}", "name", name, "status",
                                              status, "seconds", secs, "message", clean));
}

static void on_exec(struct job_task *t, const struct prov_ssh_exec_result *r)
{
    struct drill_job *d = dj_of(t);
    int ran = r->err == PROV_SSH_OK;
    double secs = (double)r->duration_us / 1e6;
    char msg[600] = "";
    int ok = 0;
    enum drill_step st = d->step;
    if (!ran || job_timed_out(r)) {
        if (job_timed_out(r))
            job_timeout_message(t, r, msg, sizeof msg);
        else
            snprintf(msg, sizeof msg, "did not run: %s", prov_ssh_err_name(r->err));
        if (st != DS_CLEANUP)
            fail_with(d, "the %s step failed: %s", step_names[st], msg);
    } else {
        switch (st) {
        case DS_RESTORE: judge_restore(d, r); break;
        case DS_VERIFY: judge_verify(d, r); break;
        case DS_START:
            if (!judge_gate(d, PROV_CHECK_CONTAINER_GPU, r, msg, sizeof msg))
                fail_with(d, "the stack's container did not start with the restored copy: %s", msg,
                          "");
            break;
        case DS_WORK: ok = judge_gate(d, PROV_CHECK_WORKLOAD, r, msg, sizeof msg); break;
        default: break;
        }
        if (st == DS_CLEANUP && r->exit_status != 0)
            snprintf(msg, sizeof msg, "the scratch copy could not be removed (exit %d)",
                     r->exit_status);
    }
    if (st == DS_RESTORE || st == DS_VERIFY || st == DS_START)
        ok = !d->failed;
    if (st == DS_CLEANUP)
        ok = ran && r->exit_status == 0;
    if (st <= DS_WORK)
        d->secs[st] = (d->secs[st] > 0 ? d->secs[st] : 0) + secs;
    if (st == DS_WORK) {
        d->tries++;
        if (!ok && (d->tries >= DRILL_WORK_TRIES || total_s(d) >= d->max_s || !ran))
            fail_with(d, "the workload did not succeed within %s: %s",
                      d->tries >= DRILL_WORK_TRIES ? "3 attempts" : "max_recovery_seconds", msg);
    }
    if (!msg[0])
        snprintf(msg, sizeof msg, "%s", ok ? "ok" : d->reason);
    add_step(d, step_names[st], ok ? "pass" : "fail", secs, msg);
    /* what runs next */
    if (st == DS_WORK && !ok && !d->failed)
        ;                                  /* another attempt */
    else if (d->failed && st < DS_CLEANUP) /* the session still answers: clean up */
        d->step = ran || job_timed_out(r) ? DS_CLEANUP : DS__DONE;
    else
        d->step = st == DS_VERIFY ? DS_START : st + 1;
    struct db_job_step js = {++d->cmd_no,          "check",        step_names[st], t->cmd,
                             ran ? "ok" : "error", r->out_tail,    r->err_tail,    msg,
                             r->exit_status >= 0,  r->exit_status, secs * 1000.0};
    job_record(t, &js, r, 5, "a drill step's result", step_recorded);
}

static void run_step(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    if (d->step >= DS__DONE) {
        job_finish(t);
        return;
    }
    int own = 0;
    enum prov_cmd_class k = PROV_CMD_WORKLOAD;
    switch (d->step) {
    case DS_RESTORE:
        t->cmd = restore_cmd(d);
        own = (int)d->max_s + 60; /* the copy may take the whole allowance, then fails */
        break;
    case DS_VERIFY:
        t->cmd = verify_cmd(d);
        own = (int)d->max_s + 60;
        break;
    case DS_START: t->cmd = prov_check_cmd(&d->gate, PROV_CHECK_CONTAINER_GPU, 0); break;
    case DS_WORK:
        t->cmd = prov_check_cmd(&d->gate, PROV_CHECK_WORKLOAD, 0);
        own = prov_check_timeout(&d->gate, PROV_CHECK_WORKLOAD, 0);
        break;
    default:
        t->cmd = cleanup_cmd(d);
        own = 600;
        break;
    }
    if (t->cmd == NULL) {
        fail_with(d, "the %s command did not pass validation%s", step_names[d->step], "");
        d->step = d->step == DS_CLEANUP || d->step == DS_RESTORE ? DS__DONE : DS_CLEANUP;
        run_step(t);
        return;
    }
    job_exec(t, k, own);
}

static enum db_status drill_finish_fn(struct db_conn *c, void *arg)
{
    struct job_task *t = arg;
    struct drill_job *d = dj_of(t);
    enum db_status s = job_mark_done(c, t, NULL, NULL);
    if (s <= 0)
        return s;
    char *steps = json_dumps(d->steps, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (steps == NULL)
        return DB_HARD_ERROR;
    double total = d->secs[DS_RESTORE] >= 0 && d->secs[DS_START] >= 0 && d->secs[DS_WORK] >= 0
                       ? total_s(d)
                       : -1;
    struct db_drill_new in = {t->job.host_id,
                              d->gctx.pool_id,
                              t->job.id,
                              d->gctx.current_stack_id,
                              d->failed ? "fail" : "pass",
                              d->reason,
                              steps,
                              d->started_at,
                              restore_s(d),
                              d->secs[DS_START],
                              d->secs[DS_WORK],
                              d->failed ? total_s(d) : total,
                              d->max_s,
                              d->bytes};
    char id[37];
    s = db_drill_insert(c, &in, id);
    free(steps);
    if (s < 0)
        return s;
    char reason[700];
    snprintf(reason, sizeof reason, "restore drill %s: %s", d->failed ? "fail" : "pass", d->reason);
    s = job_host_event(c, t, HE_DIAGNOSTICS_FINISHED, -1, reason, NULL);
    if (s < 0)
        return s;
    return db_host_seen(c, t->job.host_id);
}

static void verdict_logged(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    log_json_steal(LOG_INFO, json_pack("{s:s, s:s, s:s, s:s, s:s}", "msg", "drill verdict",
                                       "job_id", t->job.id, "host_id", t->job.host_id, "verdict",
                                       d->failed ? "fail" : "pass", "reason", d->reason));
}

static void finish(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    if (!d->failed) {
        double total = total_s(d);
        if (d->secs[DS_WORK] < 0 || d->secs[DS_START] < 0)
            fail_with(d, "the drill did not reach its first unit of work%s%s", "", "");
        else if (total > d->max_s) {
            char a[32], b[32];
            snprintf(a, sizeof a, "%.1f", total);
            snprintf(b, sizeof b, "%.0f", d->max_s);
            fail_with(d, "recovery took %s s, over max_recovery_seconds %s", a, b);
        } else {
            snprintf(d->reason, sizeof d->reason,
                     "recovered in %.1f s (restore %.1f s, start %.1f s, first work %.1f s; "
                     "max_recovery_seconds %.0f)",
                     total, restore_s(d), d->secs[DS_START], d->secs[DS_WORK], d->max_s);
        }
    }
    job_end(t, drill_finish_fn, "the drill's verdict", verdict_logged);
}

static void on_connect(struct job_task *t, const struct prov_ssh_conn_status *st)
{
    job_contact(t, st, run_step);
}

static enum db_status reads(struct db_conn *c, struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    db_gate_context_free(&d->gctx);
    return db_gate_context(c, t->job.host_id, t->job.id, &d->gctx);
}

/* The pool's durable_state and drill, the host's stack; 0, or -1 after failing the job. */
static int load_spec(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    const json_t *arts = json_object_get(json_object_get(d->pool, "durable_state"), "artifacts");
    d->n = (int)json_array_size(arts);
    if (d->n < 1 || d->n > DRILL_MAX_ARTIFACTS) {
        job_fail(t, "step_failed", "the pool declares no durable_state artifacts", 0);
        return -1;
    }
    for (int i = 0; i < d->n; i++) {
        const json_t *a = json_array_get(arts, (size_t)i);
        d->path[i] = json_string_value(json_object_get(a, "path"));
        d->sum[i] = json_string_value(json_object_get(a, "sha256"));
        if (d->path[i] == NULL || d->sum[i] == NULL || strlen(d->sum[i]) != 64) {
            job_fail(t, "step_failed", "the pool's durable_state does not read", 0);
            return -1;
        }
    }
    const json_t *mx = json_object_get(json_object_get(d->pool, "drill"), "max_recovery_seconds");
    d->max_s = json_is_number(mx) ? json_number_value(mx) : DRILL_DEFAULT_MAX_S;
    if (snprintf(d->dir, sizeof d->dir, "%s/.gpufleet-drill-%s",
                 t->host.scratch_path ? t->host.scratch_path : "",
                 t->job.id) >= (int)sizeof d->dir ||
        !prov_valid_abs_path(d->dir) || t->host.durable_path == NULL) {
        job_fail(t, "step_failed", "the pool's durable or scratch path does not pass validation",
                 0);
        return -1;
    }
    return 0;
}

static void loaded(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    if (d->gctx.current_stack_id == NULL || d->gctx.stack_doc == NULL ||
        !d->gctx.has_current_stack) {
        job_fail(t, "step_failed", "the host has no current stack: provision it first", 0);
        return;
    }
    d->pool = json_loads(d->gctx.pool_spec ? d->gctx.pool_spec : "{}", 0, NULL);
    d->stack = json_loads(d->gctx.stack_doc, 0, NULL);
    char digest[80];
    d->image_ref = prov_image_ref(json_string_value(json_object_get(d->stack, "image")), digest,
                                  sizeof digest);
    if (d->pool == NULL || d->image_ref == NULL) {
        job_fail(t, "step_failed", "the pool or stack document does not pass validation", 0);
        return;
    }
    const json_t *wl = json_object_get(json_object_get(d->pool, "gate"), "workload");
    if (json_array_size(json_object_get(wl, "command")) == 0) {
        job_fail(t, "step_failed", "the pool's gate defines no workload to run", 0);
        return;
    }
    if (load_spec(t) != 0)
        return;
    d->gate = (struct prov_gate){
        .image_ref = d->image_ref,
        .expected_gpus = (int)json_integer_value(json_object_get(d->pool, "gpu_count")),
        .durable_path = t->host.durable_path,
        .scratch_path = t->host.scratch_path,
        .workload_command = json_object_get(wl, "command"),
        .workload_metric = json_string_value(json_object_get(wl, "metric")),
        .workload_min = json_number_value(json_object_get(wl, "min")),
        .workload_timeout_s = (int)json_integer_value(json_object_get(wl, "timeout_s")),
        .restore_dir = d->dir,
    };
    job_connect(t);
}

static void start(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    d->steps = json_array();
    for (int i = 0; i < DS__DONE; i++)
        d->secs[i] = -1;
    if (d->steps == NULL) {
        job_fail(t, "step_failed", "out of memory", 1);
        return;
    }
    util_rfc3339(util_now_us(), d->started_at, sizeof d->started_at);
    snprintf(t->load.reason, sizeof t->load.reason, "restore drill (job attempt %d)",
             t->job.attempt);
    job_load(t, HE_DIAGNOSTICS_STARTED, reads, "the host, its pool or its stack", loaded);
}

static enum plan_host_event end_event(const struct job_task *t, const char *error_class, int *hint)
{
    (void)t;
    *hint = -1;
    return error_class == NULL ? HE_JOB_CANCELLED : HE_DIAGNOSTICS_FINISHED;
}

static void release(struct job_task *t)
{
    struct drill_job *d = dj_of(t);
    json_decref(d->steps);
    json_decref(d->pool);
    json_decref(d->stack);
    free(d->image_ref);
    db_gate_context_free(&d->gctx);
}

const struct job_kind job_kind_drill = JOB_KIND("drill", "drill", struct drill_job);
