/* recommend_bn.h — the inputs of the bottleneck recommendations (planner/recommend_bn.h):
 * the last 24 h of work report rollups per host, brief and unit (db/bottlenecks.h), each
 * pool's finding with the signals of the hosts it names, and each brief's work per pool
 * and unit. Read inside the recommendations' read transaction (service/recommend.c). */
#ifndef GPUFLEET_SVC_RECOMMEND_BN_H
#define GPUFLEET_SVC_RECOMMEND_BN_H

#include <jansson.h>
#include <stdint.h>

#include "db/bottlenecks.h"
#include "planner/bottleneck.h"
#include "planner/recommend.h"

struct svc_rec_bn_pool {
    const char *pool_id;
    struct plan_bn_host *hosts; /* into svc_rec_bn.hosts (grouped by pool) */
    size_t nh;
    struct plan_bn_signals *sig; /* into svc_rec_bn.sig */
    size_t nsig;
    struct plan_bn_finding f;
};

/* Start it zeroed; free it with svc_rec_bn_free. */
struct svc_rec_bn {
    struct db_bn_input in;
    struct plan_bn_host *hosts; /* by pool id, then host id */
    size_t nh;
    struct svc_rec_bn_pool *pools;
    size_t np;
    struct plan_bn_signals *sig;
    size_t nsig;
};

/* Reads the 6-hour quarters from the one holding at − 24 h up to at (halves split 12 h
 * after that quarter's start), sums and summarizes
 * per pool, and reads the named hosts' signals, on c (the caller's transaction). */
enum db_status svc_rec_bn_read(struct db_conn *c, int64_t at_us, struct svc_rec_bn *b);
/* Decides each pool's finding and appends the recommendations to items; hosts (sorted by
 * id) give each pool's gpu_count and price. Returns 0, or -1 when out of memory. */
int svc_rec_bn_apply(struct svc_rec_bn *b, const struct plan_rec_host *hosts, size_t nh,
                     json_t *items);
void svc_rec_bn_free(struct svc_rec_bn *b);

#endif
