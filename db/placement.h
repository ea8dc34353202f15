/* placement.h — what GET /v1/briefs/{id}/placement reads besides the cost report's input
 * (db/costs.h): the pools of the brief's project with their GPUs and prices, per pool the
 * brief's reports in the window (distinct UTC days, first start, last end), and the
 * throughput baselines of the project's pools for one metric (docs/placement.md). */
#ifndef GPUFLEET_DB_PLACEMENT_H
#define GPUFLEET_DB_PLACEMENT_H

#include <stddef.h>

#include "common/usage.h"
#include "db/db.h"

#define DB_PLACE_MAX_POOLS     1000
#define DB_PLACE_MAX_BASELINES 2000

struct db_place_pool {
    const char *id, *name, *gpu_model; /* borrowed from the result */
    long gpu_count;
    struct usage_prices prices;
    long days;                    /* distinct UTC days of the brief's reports here */
    double first_start, last_end; /* epoch seconds of those reports (0 when none) */
};
struct db_place_baseline {
    const char *gpu_model, *model_revision; /* model_revision NULL when none */
    long gpu_count, concurrency;            /* 0 when none */
    double value;
};
/* Start it zeroed; db_place_read frees what it held first; db_place_free leaves it zeroed. */
struct db_place_input {
    size_t npools, nbaselines;
    struct db_place_pool *pools;
    struct db_place_baseline *baselines;
    char *hosts; /* uuid[] literal of the hosts of those pools that hold the brief's reports */
    void *res[3];
};
/* The pools of project_id (seq order, at most DB_PLACE_MAX_POOLS) and the brief's reports
 * with window_start in [from, to) per pool; hosts: the project's hosts of those pools with
 * a day rollup row of the brief in the window's days (a superset of the hosts whose
 * reports of the brief lie in [from, to): the cost read needs no other, db_cost_read_brief). */
enum db_status db_place_read(struct db_conn *c, const char *project_id, const char *brief_id,
                             const char *from, const char *to, struct db_place_input *in);
/* The baselines of the project's pools whose metric is metric, newest first (at most
 * DB_PLACE_MAX_BASELINES). */
enum db_status db_place_baselines(struct db_conn *c, const char *project_id, const char *metric,
                                  struct db_place_input *in);
void db_place_free(struct db_place_input *in);

#endif
