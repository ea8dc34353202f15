/* baselines.h — throughput baselines recorded with their conditions (docs/rollouts.md §1,
 * migrations/0020_baselines.sql). An accepted gate run whose workload check passed
 * records one (a trigger on gate_runs, in the run's transaction); a work report record
 * that names a baseline window records one (db_baseline_reports_insert, called by
 * api/work_reports.c in the report's transaction). GET /v1/baselines lists them; the
 * comparison of a new gate run's baseline with the previous stack's
 * (service/baseline.h, the matching itself in planner/baseline.h) reads them here. */
#ifndef GPUFLEET_DB_BASELINES_H
#define GPUFLEET_DB_BASELINES_H

#include <stddef.h>

#include "common/baseline.h"
#include "db/db.h"

/* Baselines with their conditions and values (common/baseline.h). The strings borrow
 * from the result, which the struct owns (res: opaque outside db/). Start it zeroed; each
 * read frees what it held first, and on failure leaves it empty; db_baselines_free frees
 * it and leaves it zeroed. */
struct db_baselines {
    size_t n;
    struct baseline *rows;
    void *res;
};
/* The baseline recorded by gate run gate_run_id (none when the run was not accepted or
 * its pool's gate has no workload, or its pool is outside scope). scope, here and below:
 * the projects whose pools' baselines may be read (a uuid[] literal, NULL: every
 * project). */
enum db_status db_baseline_of_run(struct db_conn *c, const char *gate_run_id, const char *scope,
                                  struct db_baselines *out);
/* The baselines recorded on stack stack_id within scope, except except_id, newest first,
 * at most limit. */
enum db_status db_baseline_candidates(struct db_conn *c, const char *stack_id,
                                      const char *except_id, const char *scope, int limit,
                                      struct db_baselines *out);
void db_baselines_free(struct db_baselines *b);

/* The baselines of a work report batch (api/work_reports.c), in the batch's transaction.
 * records: a JSON array of {idx, host_id, window_start, window_end, unit, input,
 * concurrency, cache} (idx: the record's index in the batch; window times RFC 3339; input,
 * concurrency, cache null when undeclared), one per record that names a baseline. */
/* *first: the idx of the first record whose host has no current stack (-1 when none);
 * *count how many. */
enum db_status db_baseline_reports_unstacked(struct db_conn *c, const char *records, int *first,
                                             int *count);
/* After the reports are stored: one baseline (source work_report) per record, from its
 * stored report (metric <unit>_per_second, value completed / window seconds), the host's
 * current stack and its GPUs (facts); a report that has one already keeps it. *inserted
 * receives how many were recorded. */
enum db_status db_baseline_reports_insert(struct db_conn *c, const char *records, long *inserted);

struct db_baseline_filter {
    const char *pool_id, *stack_id, *gpu_model; /* NULL: any */
    const char *before_seq;                     /* keyset: older than this seq, or NULL */
    long limit;                                 /* rows to fetch */
    const char *scope, *project_id; /* the read scope, the ?project= filter (NULL: none) */
};
/* Baselines, newest first: (doc, key) rows. */
enum db_status db_baseline_list(struct db_conn *c, const struct db_baseline_filter *f,
                                struct db_page *page);
/* One baseline document (*doc owned by the caller, free()), DB_NO_RESULTS when unknown or
 * of a pool outside scope. */
enum db_status db_baseline_get(struct db_conn *c, const char *id, const char *scope, char **doc);

#endif
