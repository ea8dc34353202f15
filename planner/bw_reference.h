/* Bandwidth references per GPU model, interconnect and GPU count (issue 26): the minimum
 * the gate's bandwidth check holds a host to when the pool sets none. Pure: no I/O.
 * The table is data/bandwidth_reference.csv (sources in its last column and in
 * docs/data-sources.md), generated into build/gen/bw_reference.c by
 * scripts/gen-bw-reference at build time. */
#ifndef GPUFLEET_PLAN_BW_REFERENCE_H
#define GPUFLEET_PLAN_BW_REFERENCE_H

struct plan_bw_reference {
    const char *model_key;    /* data/gpu_models.csv model_key */
    const char *interconnect; /* "pcie" | "nvlink" */
    int gpu_count;
    double reference_allreduce_busbw_gbps; /* published peak out-of-place busbw */
    double min_allreduce_busbw_gbps;       /* the documented fraction of it */
    double min_d2d_gbps;                   /* 0: no published figure */
    const char *source;
};

extern const struct plan_bw_reference plan_bw_references[];
extern const unsigned long plan_bw_references_len;

/* The entry for a pool: same model and GPU count, and the pool's interconnect (a pool
 * with interconnect "any" or NULL takes the model's entry). NULL when the catalog has
 * none: the check then has no minimum unless the pool sets one. */
const struct plan_bw_reference *plan_bw_reference_find(const char *model_key,
                                                       const char *interconnect, int gpu_count);

#endif
