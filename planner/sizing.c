/* sizing.c — see sizing.h. Formulas are those of PRODUCT.md §2:
 *   weights      = parameters × bytes per parameter (fp32 4, bf16/fp16 2, fp8/int8 1, int4 0.5)
 *   KV cache     = 2 × layers × kv_heads × head_dim × bytes per element
 *                  × (input + output tokens) × concurrent sequences
 *   training     = parameters × 18 (AdamW mixed precision), 12 (8-bit Adam), 14 (SGD momentum)
 *   overhead     = weights × (factor − 1) + fixed  (GPUStack: weights × 1.2 + 2 GiB)
 *   activations  = only when the brief gives them; never guessed. */
#include "planner/sizing.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const plan_kind_names[] = {"inference_interactive", "inference_batch", "training",
                                       "fine_tuning", "embeddings", "distributed_serving", NULL};
const char *const plan_precision_names[] = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", NULL};
const char *const plan_optimizer_names[] = {"adamw", "adamw_8bit", "sgd_momentum", NULL};

int plan_lookup(const char *const *names, const char *s)
{
    for (int i = 0; s != NULL && names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

void plan_default_options(struct plan_options *o)
{
    o->reserve_pct = 10;
    o->overhead_factor = 1.2;
    o->overhead_fixed_gib = 2;
}

double plan_bytes_per_parameter(enum plan_precision p)
{
    switch (p) {
    case PLAN_FP32: return 4;
    case PLAN_BF16:
    case PLAN_FP16: return 2;
    case PLAN_FP8:
    case PLAN_INT8: return 1;
    case PLAN_INT4: return 0.5;
    }
    return 4;
}

int plan_kind_is_autoregressive(enum plan_kind k)
{
    return k == PLAN_INFERENCE_INTERACTIVE || k == PLAN_INFERENCE_BATCH ||
           k == PLAN_DISTRIBUTED_SERVING;
}

int plan_kind_is_training(enum plan_kind k) { return k == PLAN_TRAINING || k == PLAN_FINE_TUNING; }

static double optimizer_bytes(enum plan_optimizer o)
{
    switch (o) {
    case PLAN_ADAMW: return 18;       /* HF "model memory anatomy": 6 weights + 4 grads + 8 Adam */
    case PLAN_ADAMW_8BIT: return 12;  /* 6 + 4 + 2 */
    case PLAN_SGD_MOMENTUM: return 14; /* 6 + 4 + 4 */
    }
    return 18;
}

double plan_gib(double bytes) { return round(bytes / PLAN_GIB * 100.0) / 100.0; }

/* KV element size: the brief's kv_cache_precision, else the weights' precision, except that
 * int4 weights keep a 16-bit cache (no runtime stores KV in int4). */
static double kv_element_bytes(const struct plan_brief *b)
{
    if (b->has_kv_precision)
        return plan_bytes_per_parameter(b->kv_precision);
    return b->precision == PLAN_INT4 ? 2 : plan_bytes_per_parameter(b->precision);
}

static void size_kv(const struct plan_brief *b, struct plan_sizing *s)
{
    struct plan_term *t = &s->kv_cache;
    t->formula = "2 × layers × kv_heads × head_dim × bytes_per_element × (input + output "
                 "tokens) × concurrent sequences";
    if (!plan_kind_is_autoregressive(b->kind)) {
        t->status = PLAN_NOT_APPLICABLE;
        t->reason = plan_kind_is_training(b->kind)
                        ? "training keeps no KV cache; see training_state and activations"
                        : "embedding models encode in one pass and keep no KV cache";
        return;
    }
    if (b->layers == 0)
        s->kv_missing[s->kv_nmissing++] = "model.architecture.layers";
    if (b->kv_heads == 0)
        s->kv_missing[s->kv_nmissing++] = "model.architecture.kv_heads";
    if (b->head_dim == 0)
        s->kv_missing[s->kv_nmissing++] = "model.architecture.head_dim";
    if (!b->has_input_tokens)
        s->kv_missing[s->kv_nmissing++] = "load.max_input_tokens";
    if (!b->has_output_tokens)
        s->kv_missing[s->kv_nmissing++] = "load.expected_output_tokens";
    if (s->kv_nmissing > 0) {
        t->status = PLAN_NOT_ESTIMATED;
        t->reason = "the brief lacks the fields listed in missing; the KV cache is never "
                    "guessed";
        return;
    }
    s->kv_bytes_per_element = kv_element_bytes(b);
    s->kv_per_token_bytes =
        2.0 * (double)b->layers * (double)b->kv_heads * (double)b->head_dim * s->kv_bytes_per_element;
    s->kv_tokens_per_sequence = b->max_input_tokens + b->expected_output_tokens;
    s->kv_sequences = b->concurrency;
    t->status = PLAN_ESTIMATED;
    t->bytes = s->kv_per_token_bytes * (double)s->kv_tokens_per_sequence * (double)b->concurrency;
    s->peak_kv_bytes =
        s->kv_per_token_bytes * (double)s->kv_tokens_per_sequence * (double)b->peak_concurrency;
}

void plan_size(const struct plan_brief *b, const struct plan_options *o, struct plan_sizing *s)
{
    assert(b->concurrency >= 1);
    memset(s, 0, sizeof *s);
    s->bytes_per_parameter = plan_bytes_per_parameter(b->precision);
    s->weights.status = PLAN_ESTIMATED;
    s->weights.bytes = b->parameter_count * s->bytes_per_parameter;
    s->weights.formula = "parameter_count × bytes_per_parameter";
    s->weights_counted = 1;

    size_kv(b, s);

    s->training_state.formula = "parameter_count × bytes_per_parameter for the optimizer "
                                "(AdamW mixed precision 18, 8-bit Adam 12, SGD momentum 14)";
    s->activations.formula = NULL;
    if (plan_kind_is_training(b->kind)) {
        s->training_bytes_per_parameter = optimizer_bytes(b->optimizer);
        s->training_state.status = PLAN_ESTIMATED;
        s->training_state.bytes = b->parameter_count * s->training_bytes_per_parameter;
        /* The optimizer figure already holds the fp32 master weights and the 16-bit copy. */
        s->weights_counted = 0;
        s->weights.reason = "included in training_state";
        if (b->has_activation_bytes) {
            s->activations.status = PLAN_ESTIMATED;
            s->activations.bytes = b->activation_bytes;
            s->activations.formula = "as given in the brief (training.activation_bytes)";
        } else {
            s->activations.status = PLAN_NOT_ESTIMATED;
            s->activations.reason = "activations depend on sequence length, micro-batch size "
                                    "and checkpointing; give training.activation_bytes to "
                                    "include them";
        }
    } else {
        s->training_state.status = PLAN_NOT_APPLICABLE;
        s->training_state.reason = "not a training or fine-tuning brief";
        s->activations.status = PLAN_NOT_APPLICABLE;
        s->activations.reason = "inference activations are part of the runtime overhead";
    }

    s->overhead.status = PLAN_ESTIMATED;
    s->overhead.formula = "weights × (overhead_factor − 1) + overhead_fixed_gib";
    s->overhead.bytes = s->weights.bytes * (o->overhead_factor - 1.0) + o->overhead_fixed_gib * PLAN_GIB;

    double base = s->overhead.bytes + s->activations.bytes + s->training_state.bytes;
    if (s->weights_counted)
        base += s->weights.bytes;
    s->total_bytes = base + s->kv_cache.bytes;
    /* The peak differs from the expected load only through the KV cache. */
    s->has_peak = b->peak_concurrency > b->concurrency;
    if (s->has_peak)
        s->peak_total_bytes = base + s->peak_kv_bytes;
}

void plan_fit(const struct plan_sizing *s, const struct plan_options *o, const struct plan_gpu *g,
              enum plan_precision precision, struct plan_gpu_fit *out)
{
    /* The driver's figure when known; marketed "GB" is read as 10^9 bytes otherwise. */
    out->memory_bytes = g->smi_memory_mib > 0 ? (double)g->smi_memory_mib * 1048576.0
                                              : g->memory_gib * 1e9;
    out->usable_bytes = out->memory_bytes * (1.0 - o->reserve_pct / 100.0);
    double need = s->total_bytes;
    out->gpus_needed = out->usable_bytes > 0 ? (long)ceil(need / out->usable_bytes) : 0;
    if (out->gpus_needed < 1)
        out->gpus_needed = 1;
    out->fits_single = out->gpus_needed == 1;
    out->needs_parallelism = out->gpus_needed > 1;
    out->precision_supported = (g->formats >> precision) & 1u;
}

static const char *const status_names[] = {"estimated", "not_estimated", "not_applicable"};

/* Whole bytes as a JSON integer (sizes stay far below 2^53). */
static json_t *bytes_json(double b) { return json_integer((json_int_t)llround(b)); }

static json_t *term_json(const struct plan_term *t)
{
    int known = t->status == PLAN_ESTIMATED;
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "status", status_names[t->status], "bytes",
                     known ? bytes_json(t->bytes) : json_null(), "gib",
                     known ? json_real(plan_gib(t->bytes)) : json_null(), "formula",
                     t->formula ? json_string(t->formula) : json_null(), "reason",
                     t->reason ? json_string(t->reason) : json_null());
}

static json_t *assumptions_json(const struct plan_brief *b, const struct plan_options *o,
                                const struct plan_sizing *s)
{
    json_t *a = json_array();
    char buf[320];
    json_array_append_new(a, json_string("This is an estimate and a lower bound, not a "
                                         "measurement; validate it with the acceptance gate's "
                                         "workload check."));
    snprintf(buf, sizeof buf, "Weights use %g bytes per parameter for %s.",
             s->bytes_per_parameter, plan_precision_names[b->precision]);
    json_array_append_new(a, json_string(buf));
    if (s->kv_cache.status == PLAN_ESTIMATED) {
        snprintf(buf, sizeof buf,
                 "KV cache uses %g bytes per element, the KV heads (not the attention heads), "
                 "and every sequence at its full length of %ld tokens at a concurrency of %ld.",
                 s->kv_bytes_per_element, s->kv_tokens_per_sequence, s->kv_sequences);
        json_array_append_new(a, json_string(buf));
        if (!b->has_kv_precision && b->precision == PLAN_INT4)
            json_array_append_new(a, json_string("int4 weights are assumed to keep a 16-bit "
                                                 "KV cache; set model.kv_cache_precision "
                                                 "otherwise."));
    }
    snprintf(buf, sizeof buf,
             "Runtime overhead (buffers, workspace, fragmentation) is weights × %g + %g GiB "
             "(GPUStack's margin for LLMs is × 1.2 + 2 GiB).",
             o->overhead_factor - 1.0, o->overhead_fixed_gib);
    json_array_append_new(a, json_string(buf));
    if (s->training_state.status == PLAN_ESTIMATED) {
        snprintf(buf, sizeof buf,
                 "Training state is %g bytes per parameter for %s (HF Transformers, model "
                 "memory anatomy); it includes the weights.",
                 s->training_bytes_per_parameter, plan_optimizer_names[b->optimizer]);
        json_array_append_new(a, json_string(buf));
    }
    if (s->activations.status == PLAN_NOT_ESTIMATED)
        json_array_append_new(a, json_string("Activations were not estimated: the brief does "
                                             "not give them, and they are never guessed."));
    snprintf(buf, sizeof buf,
             "Per-GPU memory is the driver's memory.total when the catalog knows it, else the "
             "marketed GB read as 10^9 bytes; %g%% of it is kept in reserve.",
             o->reserve_pct);
    json_array_append_new(a, json_string(buf));
    json_array_append_new(a, json_string("1 GiB = 1,073,741,824 bytes."));
    return a;
}

json_t *plan_sizing_json(const struct plan_brief *b, const struct plan_options *o,
                         const struct plan_sizing *s, const struct plan_gpu *gpus, size_t ngpus)
{
    json_t *weights = term_json(&s->weights);
    json_object_set_new(weights, "counted_in_total", json_boolean(s->weights_counted));
    json_object_set_new(weights, "bytes_per_parameter", json_real(s->bytes_per_parameter));

    json_t *kv = term_json(&s->kv_cache);
    int kv_ok = s->kv_cache.status == PLAN_ESTIMATED;
    json_object_set_new(kv, "per_token_bytes", kv_ok ? bytes_json(s->kv_per_token_bytes) : json_null());
    json_object_set_new(kv, "tokens_per_sequence", kv_ok ? json_integer(s->kv_tokens_per_sequence) : json_null());
    json_object_set_new(kv, "sequences", kv_ok ? json_integer(s->kv_sequences) : json_null());
    json_object_set_new(kv, "bytes_per_element", kv_ok ? json_real(s->kv_bytes_per_element) : json_null());
    json_t *missing = json_array();
    for (int i = 0; i < s->kv_nmissing; i++)
        json_array_append_new(missing, json_string(s->kv_missing[i]));
    json_object_set_new(kv, "missing", missing);

    json_t *train = term_json(&s->training_state);
    if (s->training_state.status == PLAN_ESTIMATED) {
        json_object_set_new(train, "optimizer", json_string(plan_optimizer_names[b->optimizer]));
        json_object_set_new(train, "bytes_per_parameter", json_real(s->training_bytes_per_parameter));
    }
    json_t *overhead = term_json(&s->overhead);
    json_object_set_new(overhead, "factor", json_real(o->overhead_factor));
    json_object_set_new(overhead, "fixed_gib", json_real(o->overhead_fixed_gib));

    json_t *peak = json_null();
    if (s->has_peak)
        peak = json_pack("{s:I, s:o, s:o, s:f}", "concurrency", (json_int_t)b->peak_concurrency,
                         "kv_cache_bytes",
                         kv_ok ? bytes_json(s->peak_kv_bytes) : json_null(), "total_bytes",
                         bytes_json(s->peak_total_bytes), "total_gib",
                         plan_gib(s->peak_total_bytes));

    json_t *options = json_pack("{s:f, s:f, s:f}", "reserve_pct", o->reserve_pct,
                                "overhead_factor", o->overhead_factor, "overhead_fixed_gib",
                                o->overhead_fixed_gib);
    json_t *fits = json_array();
    for (size_t i = 0; i < ngpus; i++) {
        struct plan_gpu_fit f;
        plan_fit(s, o, &gpus[i], b->precision, &f);
        char warn[256];
        const char *w = NULL;
        if (f.needs_parallelism) {
            snprintf(warn, sizeof warn,
                     "needs %ld GPUs: tensor or pipeline parallelism makes the interconnect "
                     "part of the requirement (the topology gate must pass)",
                     f.gpus_needed);
            w = warn;
        } else if (!f.precision_supported) {
            snprintf(warn, sizeof warn, "%s is not among this model's supported formats",
                     plan_precision_names[b->precision]);
            w = warn;
        }
        json_array_append_new(
            fits, json_pack("{s:s, s:s, s:f, s:f, s:I, s:b, s:b, s:b, s:b, s:o}", "gpu_model",
                            gpus[i].key, "display_name", gpus[i].display_name,
                            "memory_gib_per_gpu", round(f.memory_bytes / PLAN_GIB * 100) / 100,
                            "usable_gib_per_gpu", round(f.usable_bytes / PLAN_GIB * 100) / 100,
                            "gpus_needed", (json_int_t)f.gpus_needed, "fits_single_gpu",
                            f.fits_single, "needs_parallelism", f.needs_parallelism,
                            "topology_matters", f.needs_parallelism, "precision_supported",
                            f.precision_supported, "warning",
                            w ? json_string(w) : json_null()));
    }
    return json_pack("{s:b, s:b, s:s, s:s, s:{s:o, s:o, s:o, s:o, s:o}, s:{s:o, s:f}, s:o, s:o, "
                     "s:o, s:o}",
                     "estimate", 1, "lower_bound", 1, "kind", plan_kind_names[b->kind],
                     "precision", plan_precision_names[b->precision], "terms", "weights",
                     weights, "kv_cache", kv, "training_state", train, "activations",
                     term_json(&s->activations), "runtime_overhead", overhead, "total", "bytes",
                     bytes_json(s->total_bytes), "gib", plan_gib(s->total_bytes), "peak", peak,
                     "options", options, "assumptions", assumptions_json(b, o, s),
                     "gpu_options", fits);
}
