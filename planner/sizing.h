/* sizing.h — memory sizing estimates from a workload brief (docs/product.md §2). Pure
 * arithmetic: no I/O. Every figure is an estimate and a lower bound. */
#ifndef GPUFLEET_SIZING_H
#define GPUFLEET_SIZING_H

#include <jansson.h>
#include <stdint.h>

#include "common/gpu.h"

#define PLAN_GIB 1073741824.0

enum plan_kind {
    PLAN_INFERENCE_INTERACTIVE,
    PLAN_INFERENCE_BATCH,
    PLAN_TRAINING,
    PLAN_FINE_TUNING,
    PLAN_EMBEDDINGS,
    PLAN_DISTRIBUTED_SERVING,
};

enum plan_optimizer { PLAN_ADAMW, PLAN_ADAMW_8BIT, PLAN_SGD_MOMENTUM };
enum plan_status { PLAN_ESTIMATED, PLAN_NOT_ESTIMATED, PLAN_NOT_APPLICABLE };

/* What sizing needs from a brief. Zero means "not given" for the optional counts. */
struct plan_brief {
    enum plan_kind kind;
    double parameter_count;
    enum gpu_precision precision;
    int has_kv_precision;
    enum gpu_precision kv_precision;
    long layers, kv_heads, head_dim; /* 0 = not given */
    int has_input_tokens, has_output_tokens;
    long max_input_tokens, expected_output_tokens;
    long concurrency;      /* ≥ 1 */
    long peak_concurrency; /* 0 = not given */
    enum plan_optimizer optimizer;
    int has_activation_bytes;
    double activation_bytes;
};

struct plan_options {
    double reserve_pct;     /* share of each GPU's memory kept free, 0..90 */
    double overhead_factor; /* runtime overhead = weights × (factor − 1) + fixed */
    double overhead_fixed_gib;
};
void plan_default_options(struct plan_options *o);

struct plan_term {
    enum plan_status status;
    double bytes;
    const char *formula; /* static */
    const char *reason;  /* static, or NULL */
};

struct plan_sizing {
    double bytes_per_parameter;
    struct plan_term weights;
    int weights_counted;
    struct plan_term kv_cache;
    double kv_per_token_bytes, kv_bytes_per_element;
    long kv_tokens_per_sequence, kv_sequences;
    const char *kv_missing[5]; /* field paths needed to estimate the KV cache */
    int kv_nmissing;
    struct plan_term training_state;
    double training_bytes_per_parameter;
    struct plan_term activations;
    struct plan_term overhead;
    double total_bytes;
    int has_peak;
    double peak_kv_bytes, peak_total_bytes; /* peak_kv_bytes is 0 when KV is not estimated */
};

struct plan_gpu_fit {
    double memory_bytes, usable_bytes;
    long gpus_needed;
    int fits_single, needs_parallelism, precision_supported;
};

double plan_bytes_per_parameter(enum gpu_precision p);
int plan_kind_is_autoregressive(enum plan_kind k);
int plan_kind_is_training(enum plan_kind k);

void plan_size(const struct plan_brief *b, const struct plan_options *o, struct plan_sizing *out);
void plan_fit(const struct plan_sizing *s, const struct plan_options *o, const struct gpu_model *g,
              enum gpu_precision precision, struct plan_gpu_fit *out);

/* bytes → GiB rounded to 2 decimals (13.04). */
double plan_gib(double bytes);

/* Renders the sizing answer (schema Sizing in openapi.yaml) as JSON text. gpus may be
 * empty; brief_id NULL and brief_revision 0 for a brief that is not stored. Caller frees;
 * NULL when out of memory. */
char *plan_sizing_render(const struct plan_brief *b, const struct plan_options *o,
                         const struct plan_sizing *s, const struct gpu_model *gpus, size_t ngpus,
                         const char *brief_id, long brief_revision);

/* Name tables, shared with validation (the precisions': gpu_precision_names, common/gpu.h;
 * look a name up with util_lookup, common/util.h). */
extern const char *const plan_kind_names[];      /* NULL-terminated, index = enum */
extern const char *const plan_optimizer_names[]; /* NULL-terminated */

#endif
