/* bottleneck.h — the bottleneck analysis of a pool, a brief or a host over a window (issue
 * 26, item 4): reads the rollups (db/bottlenecks.h), sums them (planner/bottleneck.h),
 * reads the signals of the hosts the finding names and applies the rules. Knows no HTTP. */
#ifndef GPUFLEET_SVC_BOTTLENECK_H
#define GPUFLEET_SVC_BOTTLENECK_H

#include <stdint.h>

#include "db/bottlenecks.h"
#include "planner/bottleneck.h"

struct svc_bottleneck {
    enum db_bn_target kind;
    const char *id;       /* the target's id (borrowed) */
    const char *projects; /* the caller's projects (uuid[] literal), NULL: all */
    int64_t from_us, to_us;
    /* results */
    enum db_bn_grain grain;
    char from[40], to[40], mid[40]; /* the window as read (from rounded down to the grain) */
    struct db_bn_window win;        /* the buckets read */
    struct db_bn_input in;
    struct plan_bn_host *hosts;
    size_t nhosts;
    struct plan_bn_signals *sig; /* sig[i]: the signals of the host f.named[i] */
    size_t nsig;
    struct plan_bn_finding f;
};

/* Runs the analysis: DB_ONE_RESULT with b's results, DB_NO_RESULTS when the target is
 * absent or outside the projects, or a db error. Free b with svc_bottleneck_free. */
enum db_status svc_bottleneck_run(struct svc_bottleneck *b);
void svc_bottleneck_free(struct svc_bottleneck *b);
/* Adds a rollup row's sums into its host's half (the window's first or second). */
void svc_bn_add_row(struct plan_bn_host *h, const struct db_bn_row *w);
/* A db signal row as the planner's signals (the strings stay borrowed). */
void svc_bn_signal(const struct db_bn_signal *g, struct plan_bn_signals *s);

#endif
