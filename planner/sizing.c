/* sizing.c — see sizing.h. Formulas are those of docs/product.md §2:
 *   weights      = parameters × bytes per parameter (fp32 4, bf16/fp16 2, fp8/int8 1, int4 0.5)
 *   KV cache     = 2 × layers × kv_heads × head_dim × bytes per element
 *                  × (input + output tokens) × concurrent sequences
 *   training     = parameters × 18 (AdamW mixed precision), 12 (8-bit Adam), 14 (SGD momentum)
 *   overhead     = weights × (factor − 1) + fixed  (GPUStack: weights × 1.2 + 2 GiB)
 *   activations  = only when the brief gives them; never guessed. */
#include "planner/sizing.h"

#include "common/jw.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const plan_kind_names[] = {"inference_interactive",
                                       "inference_batch",
                                       "training",
                                       "fine_tuning",
                                       "embeddings",
                                       "distributed_serving",
                                       NULL};
const char *const plan_optimizer_names[] = {"adamw", "adamw_8bit", "sgd_momentum", NULL};

void plan_default_options(struct plan_options *o)
{
    o->reserve_pct = 10;
    o->overhead_factor = 1.2;
    o->overhead_fixed_gib = 2;
}

double plan_bytes_per_parameter(enum gpu_precision p)
{
    switch (p) {
    case GPU_FP32: return 4;
    case GPU_BF16:
    case GPU_FP16: return 2;
    case GPU_FP8:
    case GPU_INT8: return 1;
    case GPU_INT4: return 0.5;
    }
    return 4;
}

int plan_kind_is_autoregressive(enum plan_kind k)
{
    return k == PLAN_INFERENCE_INTERACTIVE || k == PLAN_INFERENCE_BATCH ||
           k == PLAN_DISTRIBUTED_SERVING;
}

int plan_kind_is_training(enum plan_kind k)
{
    return k == PLAN_TRAINING || k == PLAN_FINE_TUNING;
}

static double optimizer_bytes(enum plan_optimizer o)
{
    switch (o) {
    case PLAN_ADAMW: return 18;        /* HF "model memory anatomy": 6 weights + 4 grads + 8 Adam */
    case PLAN_ADAMW_8BIT: return 12;   /* 6 + 4 + 2 */
    case PLAN_SGD_MOMENTUM: return 14; /* 6 + 4 + 4 */
    }
    return 18;
}

double plan_gib(double bytes)
{
    return round(bytes / PLAN_GIB * 100.0) / 100.0;
}

/* KV element size: the brief's kv_cache_precision, else the weights' precision, except that
 * int4 weights keep a 16-bit cache (no runtime stores KV in int4). */
static double kv_element_bytes(const struct plan_brief *b)
{
    if (b->has_kv_precision)
        return plan_bytes_per_parameter(b->kv_precision);
    return b->precision == GPU_INT4 ? 2 : plan_bytes_per_parameter(b->precision);
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
    s->kv_per_token_bytes = 2.0 * (double)b->layers * (double)b->kv_heads * (double)b->head_dim *
                            s->kv_bytes_per_element;
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
    s->overhead.bytes =
        s->weights.bytes * (o->overhead_factor - 1.0) + o->overhead_fixed_gib * PLAN_GIB;

    double base = s->overhead.bytes + s->activations.bytes + s->training_state.bytes;
    if (s->weights_counted)
        base += s->weights.bytes;
    s->total_bytes = base + s->kv_cache.bytes;
    /* The peak differs from the expected load only through the KV cache. */
    s->has_peak = b->peak_concurrency > b->concurrency;
    if (s->has_peak)
        s->peak_total_bytes = base + s->peak_kv_bytes;
}

void plan_fit(const struct plan_sizing *s, const struct plan_options *o, const struct gpu_model *g,
              enum gpu_precision precision, struct plan_gpu_fit *out)
{
    /* The driver's figure when known; marketed "GB" is read as 10^9 bytes otherwise. */
    out->memory_bytes =
        g->smi_memory_mib > 0 ? (double)g->smi_memory_mib * 1048576.0 : g->memory_gib * 1e9;
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

/* Whole bytes (sizes stay far below 2^53). */
static long long whole(double b)
{
    return llround(b);
}

/* The five members every term has. */
static void term_core(struct jw *w, const struct plan_term *t)
{
    int known = t->status == PLAN_ESTIMATED;
    jw_str(w, "status", status_names[t->status]);
    if (known) {
        jw_int(w, "bytes", whole(t->bytes));
        jw_num(w, "gib", plan_gib(t->bytes));
    } else {
        jw_null(w, "bytes");
        jw_null(w, "gib");
    }
    jw_str(w, "formula", t->formula);
    jw_str(w, "reason", t->reason);
}

static void assumptions(struct jw *w, const struct plan_brief *b, const struct plan_options *o,
                        const struct plan_sizing *s)
{
    char buf[320];
    jw_arr(w, "assumptions");
    jw_str(w, NULL,
           "This is an estimate and a lower bound, not a measurement; validate it with "
           "the acceptance gate's workload check.");
    snprintf(buf, sizeof buf, "Weights use %g bytes per parameter for %s.", s->bytes_per_parameter,
             gpu_precision_names[b->precision]);
    jw_str(w, NULL, buf);
    if (s->kv_cache.status == PLAN_ESTIMATED) {
        snprintf(buf, sizeof buf,
                 "KV cache uses %g bytes per element, the KV heads (not the attention heads), "
                 "and every sequence at its full length of %ld tokens at a concurrency of %ld.",
                 s->kv_bytes_per_element, s->kv_tokens_per_sequence, s->kv_sequences);
        jw_str(w, NULL, buf);
        if (!b->has_kv_precision && b->precision == GPU_INT4)
            jw_str(w, NULL,
                   "int4 weights are assumed to keep a 16-bit KV cache; set "
                   "model.kv_cache_precision otherwise.");
    }
    snprintf(buf, sizeof buf,
             "Runtime overhead (buffers, workspace, fragmentation) is weights × %g + %g GiB "
             "(GPUStack's margin for LLMs is × 1.2 + 2 GiB).",
             o->overhead_factor - 1.0, o->overhead_fixed_gib);
    jw_str(w, NULL, buf);
    if (s->training_state.status == PLAN_ESTIMATED) {
        snprintf(buf, sizeof buf,
                 "Training state is %g bytes per parameter for %s (HF Transformers, model "
                 "memory anatomy); it includes the weights.",
                 s->training_bytes_per_parameter, plan_optimizer_names[b->optimizer]);
        jw_str(w, NULL, buf);
    }
    if (s->activations.status == PLAN_NOT_ESTIMATED)
        jw_str(w, NULL,
               "Activations were not estimated: the brief does not give them, and they "
               "are never guessed.");
    snprintf(buf, sizeof buf,
             "Per-GPU memory is the driver's memory.total when the catalog knows it, else the "
             "marketed GB read as 10^9 bytes; %g%% of it is kept in reserve.",
             o->reserve_pct);
    jw_str(w, NULL, buf);
    if (s->has_peak) {
        snprintf(buf, sizeof buf,
                 "gpu_options are sized for load.concurrency (%ld); at peak_concurrency (%ld) "
                 "the total is %.2f GiB, and an engine with a fixed KV cache budget queues the "
                 "excess requests instead.",
                 b->concurrency, b->peak_concurrency, plan_gib(s->peak_total_bytes));
        jw_str(w, NULL, buf);
    }
    jw_str(w, NULL, "1 GiB = 1,073,741,824 bytes.");
    jw_arr_end(w);
}

static void gpu_options(struct jw *w, const struct plan_brief *b, const struct plan_options *o,
                        const struct plan_sizing *s, const struct gpu_model *gpus, size_t ngpus)
{
    jw_arr(w, "gpu_options");
    for (size_t i = 0; i < ngpus; i++) {
        struct plan_gpu_fit f;
        plan_fit(s, o, &gpus[i], b->precision, &f);
        char warn[256];
        const char *msg = NULL;
        if (f.needs_parallelism) {
            snprintf(warn, sizeof warn,
                     "needs %ld GPUs: tensor or pipeline parallelism makes the interconnect "
                     "part of the requirement (the topology gate must pass)",
                     f.gpus_needed);
            msg = warn;
        } else if (!f.precision_supported) {
            snprintf(warn, sizeof warn, "%s is not among this model's supported formats",
                     gpu_precision_names[b->precision]);
            msg = warn;
        }
        jw_obj(w, NULL);
        jw_str(w, "gpu_model", gpus[i].key);
        jw_str(w, "display_name", gpus[i].display_name);
        jw_num(w, "memory_gib_per_gpu", round(f.memory_bytes / PLAN_GIB * 100) / 100);
        jw_num(w, "usable_gib_per_gpu", round(f.usable_bytes / PLAN_GIB * 100) / 100);
        jw_int(w, "gpus_needed", f.gpus_needed);
        jw_bool(w, "fits_single_gpu", f.fits_single);
        jw_bool(w, "needs_parallelism", f.needs_parallelism);
        jw_bool(w, "topology_matters", f.needs_parallelism);
        jw_bool(w, "precision_supported", f.precision_supported);
        jw_str(w, "warning", msg);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

char *plan_sizing_render(const struct plan_brief *b, const struct plan_options *o,
                         const struct plan_sizing *s, const struct gpu_model *gpus, size_t ngpus,
                         const char *brief_id, long brief_revision)
{
    struct jw w;
    jw_init(&w, 4096 + ngpus * 320);
    jw_obj(&w, NULL);
    jw_bool(&w, "estimate", 1);
    jw_bool(&w, "lower_bound", 1);
    jw_str(&w, "brief_id", brief_id);
    if (brief_revision > 0)
        jw_int(&w, "brief_revision", brief_revision);
    else
        jw_null(&w, "brief_revision");
    jw_str(&w, "kind", plan_kind_names[b->kind]);
    jw_str(&w, "precision", gpu_precision_names[b->precision]);

    jw_obj(&w, "terms");
    jw_obj(&w, "weights");
    term_core(&w, &s->weights);
    jw_bool(&w, "counted_in_total", s->weights_counted);
    jw_num(&w, "bytes_per_parameter", s->bytes_per_parameter);
    jw_obj_end(&w);

    int kv_ok = s->kv_cache.status == PLAN_ESTIMATED;
    jw_obj(&w, "kv_cache");
    term_core(&w, &s->kv_cache);
    if (kv_ok) {
        jw_int(&w, "per_token_bytes", whole(s->kv_per_token_bytes));
        jw_int(&w, "tokens_per_sequence", s->kv_tokens_per_sequence);
        jw_int(&w, "sequences", s->kv_sequences);
        jw_num(&w, "bytes_per_element", s->kv_bytes_per_element);
    } else {
        jw_null(&w, "per_token_bytes");
        jw_null(&w, "tokens_per_sequence");
        jw_null(&w, "sequences");
        jw_null(&w, "bytes_per_element");
    }
    jw_arr(&w, "missing");
    for (int i = 0; i < s->kv_nmissing; i++)
        jw_str(&w, NULL, s->kv_missing[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);

    jw_obj(&w, "training_state");
    term_core(&w, &s->training_state);
    if (s->training_state.status == PLAN_ESTIMATED) {
        jw_str(&w, "optimizer", plan_optimizer_names[b->optimizer]);
        jw_num(&w, "bytes_per_parameter", s->training_bytes_per_parameter);
    }
    jw_obj_end(&w);

    jw_obj(&w, "activations");
    term_core(&w, &s->activations);
    jw_obj_end(&w);

    jw_obj(&w, "runtime_overhead");
    term_core(&w, &s->overhead);
    jw_num(&w, "factor", o->overhead_factor);
    jw_num(&w, "fixed_gib", o->overhead_fixed_gib);
    jw_obj_end(&w);
    jw_obj_end(&w); /* terms */

    jw_obj(&w, "total");
    jw_int(&w, "bytes", whole(s->total_bytes));
    jw_num(&w, "gib", plan_gib(s->total_bytes));
    jw_obj_end(&w);

    if (s->has_peak) {
        jw_obj(&w, "peak");
        jw_int(&w, "concurrency", b->peak_concurrency);
        if (kv_ok)
            jw_int(&w, "kv_cache_bytes", whole(s->peak_kv_bytes));
        else
            jw_null(&w, "kv_cache_bytes");
        jw_int(&w, "total_bytes", whole(s->peak_total_bytes));
        jw_num(&w, "total_gib", plan_gib(s->peak_total_bytes));
        jw_obj_end(&w);
    } else {
        jw_null(&w, "peak");
    }

    jw_obj(&w, "options");
    jw_num(&w, "reserve_pct", o->reserve_pct);
    jw_num(&w, "overhead_factor", o->overhead_factor);
    jw_num(&w, "overhead_fixed_gib", o->overhead_fixed_gib);
    jw_obj_end(&w);

    assumptions(&w, b, o, s);
    gpu_options(&w, b, o, s, gpus, ngpus);
    jw_obj_end(&w);
    return jw_take(&w);
}
