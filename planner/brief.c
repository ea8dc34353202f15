/* brief.c — see brief.h. */
#include "planner/brief.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

static const char *const serving_metrics[] = {"time_to_first_token_ms", "inter_token_latency_ms",
                                              "successful_requests_per_minute", "tail_latency_ms",
                                              NULL};
static const char *const batch_metrics[] = {"items_per_hour", "failure_retry_rate_pct",
                                            "queue_delay_s", "cost_per_accepted_result_usd", NULL};
static const char *const training_metrics[] = {"samples_per_second", "tokens_per_second",
                                               "step_time_s",        "checkpoint_duration_s",
                                               "recovery_time_s",    NULL};
static const char *const embedding_metrics[] = {"documents_per_second", "vectors_per_second",
                                                "ingest_time_s", "index_persistence_time_s", NULL};

const char *const *plan_metrics_for_kind(enum plan_kind k)
{
    switch (k) {
    case PLAN_INFERENCE_INTERACTIVE:
    case PLAN_DISTRIBUTED_SERVING: return serving_metrics;
    case PLAN_INFERENCE_BATCH: return batch_metrics;
    case PLAN_TRAINING:
    case PLAN_FINE_TUNING: return training_metrics;
    case PLAN_EMBEDDINGS: return embedding_metrics;
    }
    return serving_metrics;
}

static int fail(struct plan_error *err, const char *field, const char *detail)
{
    snprintf(err->field, sizeof err->field, "%s", field);
    snprintf(err->detail, sizeof err->detail, "%s", detail);
    return -1;
}

static int is_latency(const char *metric)
{
    size_t n = strlen(metric);
    return (n > 3 && strcmp(metric + n - 3, "_ms") == 0) || strcmp(metric, "queue_delay_s") == 0 ||
           strcmp(metric, "step_time_s") == 0;
}

int plan_brief_check(const json_t *brief, struct plan_error *err)
{
    enum plan_kind kind = (enum plan_kind)util_lookup(
        plan_kind_names, json_string_value(json_object_get(brief, "kind")));
    const json_t *model = json_object_get(brief, "model");
    double params = json_number_value(json_object_get(model, "parameter_count"));
    if (params != floor(params))
        return fail(err, "model.parameter_count", "model.parameter_count must be a whole number");

    const json_t *load = json_object_get(brief, "load");
    const json_t *peak = json_object_get(load, "peak_concurrency");
    if (peak != NULL &&
        json_integer_value(peak) < json_integer_value(json_object_get(load, "concurrency")))
        return fail(err, "load.peak_concurrency",
                    "load.peak_concurrency must be at least load.concurrency");

    const char *const *allowed = plan_metrics_for_kind(kind);
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(brief, "targets"), i, t)
    {
        char field[64], detail[256];
        const char *metric = json_string_value(json_object_get(t, "metric"));
        if (util_lookup(allowed, metric) < 0) {
            snprintf(field, sizeof field, "targets[%zu].metric", i);
            int n = snprintf(detail, sizeof detail,
                             "%s briefs measure success with one of:", plan_kind_names[kind]);
            for (const char *const *m = allowed; *m && n > 0 && (size_t)n < sizeof detail; m++)
                n += snprintf(detail + n, sizeof detail - (size_t)n, " %s", *m);
            return fail(err, field, detail);
        }
        if (json_object_get(t, "percentile") != NULL && !is_latency(metric)) {
            snprintf(field, sizeof field, "targets[%zu].percentile", i);
            return fail(err, field, "a percentile applies only to latency and time metrics");
        }
    }
    if (json_object_get(brief, "training") != NULL && !plan_kind_is_training(kind))
        return fail(err, "training",
                    "the training section applies only to training and fine_tuning briefs");
    return 0;
}

static long int_or_zero(const json_t *obj, const char *name, int *present)
{
    const json_t *v = json_object_get(obj, name);
    if (present)
        *present = v != NULL && json_is_integer(v);
    return json_is_integer(v) ? (long)json_integer_value(v) : 0;
}

void plan_brief_to_sizing(const json_t *brief, struct plan_brief *b)
{
    memset(b, 0, sizeof *b);
    const json_t *model = json_object_get(brief, "model");
    const json_t *arch = json_object_get(model, "architecture");
    const json_t *load = json_object_get(brief, "load");
    const json_t *training = json_object_get(brief, "training");
    b->kind = (enum plan_kind)util_lookup(plan_kind_names,
                                          json_string_value(json_object_get(brief, "kind")));
    b->parameter_count = json_number_value(json_object_get(model, "parameter_count"));
    b->precision = (enum gpu_precision)util_lookup(
        gpu_precision_names, json_string_value(json_object_get(model, "precision")));
    int kvp = util_lookup(gpu_precision_names,
                          json_string_value(json_object_get(model, "kv_cache_precision")));
    b->has_kv_precision = kvp >= 0;
    b->kv_precision = kvp >= 0 ? (enum gpu_precision)kvp : b->precision;
    b->layers = int_or_zero(arch, "layers", NULL);
    b->kv_heads = int_or_zero(arch, "kv_heads", NULL);
    b->head_dim = int_or_zero(arch, "head_dim", NULL);
    b->max_input_tokens = int_or_zero(load, "max_input_tokens", &b->has_input_tokens);
    b->expected_output_tokens = int_or_zero(load, "expected_output_tokens", &b->has_output_tokens);
    b->concurrency = int_or_zero(load, "concurrency", NULL);
    if (b->concurrency < 1)
        b->concurrency = 1;
    b->peak_concurrency = int_or_zero(load, "peak_concurrency", NULL);
    int opt = util_lookup(plan_optimizer_names,
                          json_string_value(json_object_get(training, "optimizer")));
    b->optimizer = opt >= 0 ? (enum plan_optimizer)opt : PLAN_ADAMW;
    const json_t *act = json_object_get(training, "activation_bytes");
    b->has_activation_bytes = json_is_number(act);
    b->activation_bytes = json_number_value(act);
}
