/* test_planner.c — sizing arithmetic and stack rules against hand-computed values.
 *
 * Hand computations (1 GiB = 1,073,741,824 B):
 *  - 7e9 params × 2 B (bf16) = 14,000,000,000 B = 13.038… GiB → 13.04.
 *  - Llama-3.1-8B bf16, 32 layers × 8 KV heads × head_dim 128:
 *    2 × 32 × 8 × 128 × 2 B = 131,072 B per token; × 8,192 tokens = 1,073,741,824 B = 1 GiB.
 *  - 7e9 params × 18 B (AdamW mixed precision) = 126,000,000,000 B; 8-bit Adam 12 B → 84e9;
 *    SGD momentum 14 B → 98e9.
 *  - Runtime overhead, default margin: 14e9 × 0.2 + 2 GiB = 2,800,000,000 + 2,147,483,648
 *    = 4,947,483,648 B; total for 7e9 bf16 inference without KV = 18,947,483,648 B.
 *  - H100 SXM: 81,559 MiB = 85,520,809,984 B; usable at 10 % reserve 76,968,728,985.6 B ≥ need.
 *  - T4: 15,360 MiB = 16,106,127,360 B; usable 14,495,514,624 B; 18,947,483,648 / that
 *    = 1.307 → 2 GPUs. */
#include <math.h>
#include <stdlib.h>

#include "planner/brief.h"
#include "planner/sizing.h"
#include "planner/stack.h"
#include "tests/unit/unit.h"

static struct plan_brief inference_7b(void)
{
    struct plan_brief b = {0};
    b.kind = PLAN_INFERENCE_INTERACTIVE;
    b.parameter_count = 7e9;
    b.precision = GPU_BF16;
    b.concurrency = 1;
    return b;
}

static void weights_7b_bf16(void)
{
    struct plan_brief b = inference_7b();
    struct plan_options o;
    struct plan_sizing s;
    plan_default_options(&o);
    plan_size(&b, &o, &s);
    CHECK(s.weights.bytes == 14e9);
    CHECK(plan_gib(s.weights.bytes) == 13.04);
    CHECK(s.kv_cache.status == PLAN_NOT_ESTIMATED);
    CHECK(s.kv_nmissing == 5); /* layers, kv_heads, head_dim, input and output tokens */
    CHECK_STR(s.kv_missing[0], "model.architecture.layers");
    CHECK(s.overhead.bytes == 4947483648.0);
    CHECK(s.total_bytes == 18947483648.0);
    CHECK(s.training_state.status == PLAN_NOT_APPLICABLE);
}

static void kv_llama_8b(void)
{
    struct plan_brief b = inference_7b();
    b.parameter_count = 8030261248.0;
    b.layers = 32;
    b.kv_heads = 8;
    b.head_dim = 128;
    b.has_input_tokens = b.has_output_tokens = 1;
    b.max_input_tokens = 7680;
    b.expected_output_tokens = 512;
    struct plan_options o;
    struct plan_sizing s;
    plan_default_options(&o);
    plan_size(&b, &o, &s);
    CHECK(s.kv_cache.status == PLAN_ESTIMATED);
    CHECK(s.kv_per_token_bytes == 131072.0);
    CHECK(s.kv_cache.bytes == 1073741824.0);
    CHECK(plan_gib(s.kv_cache.bytes) == 1.0);
    /* 16 concurrent sequences at peak 32 */
    b.concurrency = 16;
    b.peak_concurrency = 32;
    plan_size(&b, &o, &s);
    CHECK(s.kv_cache.bytes == 16.0 * 1073741824.0);
    CHECK(s.has_peak && s.peak_kv_bytes == 32.0 * 1073741824.0);
    CHECK(s.peak_total_bytes - s.total_bytes == 16.0 * 1073741824.0);
    /* int4 weights keep a 16-bit cache unless told otherwise; fp8 KV halves it */
    b.concurrency = 1;
    b.peak_concurrency = 0;
    b.precision = GPU_INT4;
    plan_size(&b, &o, &s);
    CHECK(s.kv_cache.bytes == 1073741824.0 && s.weights.bytes == 8030261248.0 * 0.5);
    b.has_kv_precision = 1;
    b.kv_precision = GPU_FP8;
    plan_size(&b, &o, &s);
    CHECK(s.kv_cache.bytes == 536870912.0);
}

static void training_state(void)
{
    struct plan_brief b = inference_7b();
    b.kind = PLAN_TRAINING;
    struct plan_options o;
    struct plan_sizing s;
    plan_default_options(&o);
    plan_size(&b, &o, &s);
    CHECK(s.training_state.bytes == 126e9);
    CHECK(!s.weights_counted);
    CHECK(s.activations.status == PLAN_NOT_ESTIMATED);
    CHECK(s.kv_cache.status == PLAN_NOT_APPLICABLE);
    CHECK(s.total_bytes == 126e9 + 4947483648.0);
    b.optimizer = PLAN_ADAMW_8BIT;
    plan_size(&b, &o, &s);
    CHECK(s.training_state.bytes == 84e9);
    b.optimizer = PLAN_SGD_MOMENTUM;
    b.has_activation_bytes = 1;
    b.activation_bytes = 5e9;
    plan_size(&b, &o, &s);
    CHECK(s.training_state.bytes == 98e9);
    CHECK(s.activations.status == PLAN_ESTIMATED && s.total_bytes == 98e9 + 5e9 + 4947483648.0);
}

static void gpu_fit(void)
{
    struct plan_brief b = inference_7b();
    struct plan_options o;
    struct plan_sizing s;
    plan_default_options(&o);
    plan_size(&b, &o, &s);
    struct gpu_model h100 = {"h100_sxm", "H100", 80, 81559, 0x3f};
    struct gpu_model t4 = {"t4", "T4", 16, 15360, (1u << GPU_FP32) | (1u << GPU_FP16)};
    struct gpu_model nosmi = {"x", "X", 24, 0, 0};
    struct plan_gpu_fit f;
    plan_fit(&s, &o, &h100, GPU_BF16, &f);
    CHECK(f.memory_bytes == 85520809984.0 && f.gpus_needed == 1 && f.fits_single);
    CHECK(fabs(f.usable_bytes - 76968728985.6) < 1);
    plan_fit(&s, &o, &t4, GPU_BF16, &f);
    CHECK(f.gpus_needed == 2 && !f.fits_single && f.needs_parallelism && !f.precision_supported);
    plan_fit(&s, &o, &nosmi, GPU_BF16, &f);
    CHECK(f.memory_bytes == 24e9); /* marketed GB read as 10^9 bytes */
    o.reserve_pct = 0;
    plan_fit(&s, &o, &t4, GPU_FP16, &f);
    CHECK(f.usable_bytes == f.memory_bytes && f.gpus_needed == 2 && f.precision_supported);
    /* 70e9 bf16: 140e9 + 28e9 + 2 GiB = 170,147,483,648 B → 3 × H100 at 10 % reserve */
    b.parameter_count = 70e9;
    o.reserve_pct = 10;
    plan_size(&b, &o, &s);
    CHECK(s.total_bytes == 170147483648.0);
    plan_fit(&s, &o, &h100, GPU_BF16, &f);
    CHECK(f.gpus_needed == 3);
}

static void sizing_json_shape(void)
{
    struct plan_brief b = inference_7b();
    struct plan_options o;
    struct plan_sizing s;
    plan_default_options(&o);
    plan_size(&b, &o, &s);
    struct gpu_model g = {"h100_sxm", "H100", 80, 81559, 0x3f};
    char *text = plan_sizing_render(&b, &o, &s, &g, 1, NULL, 0);
    json_error_t err;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    free(text);
    CHECK(j != NULL);
    CHECK(json_is_null(json_object_get(j, "brief_id")));
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(json_object_get(j, "gpu_options"), 0), "gpu_model")),
              "h100_sxm");
    CHECK(json_is_true(json_object_get(j, "estimate")));
    CHECK(json_integer_value(json_object_get(json_object_get(j, "total"), "bytes")) ==
          18947483648LL);
    json_t *kv = json_object_get(json_object_get(j, "terms"), "kv_cache");
    CHECK_STR(json_string_value(json_object_get(kv, "status")), "not_estimated");
    CHECK(json_is_null(json_object_get(kv, "bytes")));
    CHECK(json_array_size(json_object_get(kv, "missing")) == 5);
    CHECK(json_array_size(json_object_get(j, "assumptions")) >= 4);
    json_decref(j);
}

static void brief_rules(void)
{
    struct plan_error e;
    const char *base =
        "{\"name\":\"x\",\"kind\":\"%s\",\"model\":{\"name\":\"m\","
        "\"parameter_count\":%s,\"precision\":\"bf16\"},\"load\":{\"concurrency\":4%s},"
        "\"targets\":[{\"metric\":\"%s\",\"value\":1%s}]%s}";
    char buf[1024];
#define BRIEF(kind, params, load, metric, tgt, extra)                         \
    (snprintf(buf, sizeof buf, base, kind, params, load, metric, tgt, extra), \
     json_loads(buf, 0, NULL))
    json_t *j = BRIEF("inference_interactive", "7e9", "", "time_to_first_token_ms",
                      ",\"percentile\":\"p95\"", "");
    CHECK(j && plan_brief_check(j, &e) == 0);
    json_decref(j);
    j = BRIEF("inference_interactive", "7e9", "", "samples_per_second", "", "");
    CHECK(plan_brief_check(j, &e) != 0);
    CHECK_STR(e.field, "targets[0].metric");
    CHECK(strstr(e.detail, "time_to_first_token_ms") != NULL);
    json_decref(j);
    j = BRIEF("training", "7e9", "", "samples_per_second", "", "");
    CHECK(plan_brief_check(j, &e) == 0);
    json_decref(j);
    j = BRIEF("inference_batch", "7e9", "", "items_per_hour", "", ",\"training\":{}");
    CHECK(plan_brief_check(j, &e) != 0);
    CHECK_STR(e.field, "training");
    json_decref(j);
    j = BRIEF("embeddings", "7000000000.5", "", "vectors_per_second", "", "");
    CHECK(plan_brief_check(j, &e) != 0);
    CHECK_STR(e.field, "model.parameter_count");
    json_decref(j);
    j = BRIEF("embeddings", "7e9", ",\"peak_concurrency\":2", "vectors_per_second", "", "");
    CHECK(plan_brief_check(j, &e) != 0);
    CHECK_STR(e.field, "load.peak_concurrency");
    json_decref(j);
    j = BRIEF("inference_batch", "7e9", "", "items_per_hour", ",\"percentile\":\"p99\"", "");
    CHECK(plan_brief_check(j, &e) != 0);
    CHECK_STR(e.field, "targets[0].percentile");
    json_decref(j);
#undef BRIEF
}

static void versions(void)
{
    CHECK(plan_version_cmp("550.54.15", "525.60.13") > 0);
    CHECK(plan_version_cmp("525.60.13", "525.60.13") == 0);
    CHECK(plan_version_cmp("570.26", "570.124.06") < 0);
    CHECK(plan_version_cmp("580.65.06", "580") > 0);
    CHECK(plan_version_cmp("575.57.08", "580") < 0);
}

static void images(void)
{
    char name[384], digest[80], detail[320];
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char img[600];
    snprintf(img, sizeof img, "vllm/vllm-openai:v0.6.3@sha256:%s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_OK);
    CHECK_STR(name, "vllm/vllm-openai:v0.6.3");
    CHECK(strncmp(digest, "sha256:", 7) == 0 && strlen(digest) == 71);
    snprintf(img, sizeof img, "registry.example.com:5000/team/vllm@sha256:%s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_OK);
    CHECK(plan_image_check("vllm/vllm-openai:latest", name, sizeof name, digest, sizeof digest,
                           detail, sizeof detail) == PLAN_STACK_IMAGE_NOT_PINNED);
    CHECK(plan_image_check("vllm/vllm-openai:v0.6.3", name, sizeof name, digest, sizeof digest,
                           detail, sizeof detail) == PLAN_STACK_IMAGE_NOT_PINNED);
    snprintf(img, sizeof img, "vllm@sha256:%.63s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_IMAGE_NOT_PINNED);
    snprintf(img, sizeof img, "vllm@sha256:%.63sA", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_IMAGE_NOT_PINNED);
    snprintf(img, sizeof img, "vllm;rm -rf /@sha256:%s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_INVALID_FIELD);
    snprintf(img, sizeof img, "Vllm/Openai@sha256:%s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_INVALID_FIELD);
    /* no component may start with '-' (a docker argument read as an option) */
    static const char *const dashes[] = {"-vllm@sha256:%s",         "--help.io/x@sha256:%s",
                                         "-e.io:5000/x@sha256:%s",  "reg.-io/x@sha256:%s",
                                         "reg.io/-x/y@sha256:%s",   "reg.io:-1/x@sha256:%s",
                                         "reg.io/x:-tag@sha256:%s", "x@-sha256:%s"};
    for (size_t i = 0; i < sizeof dashes / sizeof dashes[0]; i++) {
        snprintf(img, sizeof img, dashes[i], hex);
        CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail,
                               sizeof detail) == PLAN_STACK_INVALID_FIELD);
        CHECK(strstr(detail, "'-'") != NULL);
    }
    snprintf(img, sizeof img, "vllm:$(reboot)@sha256:%s", hex);
    CHECK(plan_image_check(img, name, sizeof name, digest, sizeof digest, detail, sizeof detail) ==
          PLAN_STACK_INVALID_FIELD);
}

static enum plan_stack_err stack(const char *driver, const char *cuda, struct plan_stack_result *r)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"image\":\"vllm@sha256:"
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
             "\"driver_branch\":\"%.3s\",\"driver_version\":\"%s\",\"cuda_version\":\"%s\"}",
             driver, driver, cuda);
    json_t *j = json_loads(buf, 0, NULL);
    plan_stack_check(j, r);
    json_decref(j);
    return r->err;
}

static void cuda_driver(void)
{
    struct plan_stack_result r;
    CHECK(stack("550.54.15", "12.4", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 0);
    json_decref(r.warnings);
    CHECK(stack("535.104.05", "12.4", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 1);
    const char *msg = json_string_value(json_object_get(json_array_get(r.warnings, 0), "message"));
    CHECK(msg != NULL && strstr(msg, "PTX JIT") != NULL && strstr(msg, "550.54.14") != NULL);
    json_decref(r.warnings);
    CHECK(stack("520.61.05", "12.4", &r) == PLAN_STACK_CUDA_INCOMPATIBLE);
    CHECK(strstr(r.detail, "525.60.13") != NULL);
    json_decref(r.warnings);
    CHECK(stack("575.57.08", "13.0", &r) == PLAN_STACK_CUDA_INCOMPATIBLE);
    json_decref(r.warnings);
    CHECK(stack("580.65.06", "13.0", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 0);
    json_decref(r.warnings);
    CHECK(stack("550.54.15", "12.4.1", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 0);
    json_decref(r.warnings);
    CHECK(stack("550.54.14", "12.4.1", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 1);
    json_decref(r.warnings);
    CHECK(stack("550.54.15", "12.7", &r) == PLAN_STACK_UNKNOWN_CUDA);
    json_decref(r.warnings);
    CHECK(stack("470.82.01", "11.8", &r) == PLAN_STACK_OK && json_array_size(r.warnings) == 1);
    json_decref(r.warnings);
    CHECK(stack("440.33.01", "11.8", &r) == PLAN_STACK_CUDA_INCOMPATIBLE);
    CHECK(strstr(r.detail, "450.80.02") != NULL);
    json_decref(r.warnings);
}

UNIT_SUITE(planner_tests) = {
    {"sizing: 7e9 bf16 weights 13.04 GiB, overhead, total, KV not guessed", weights_7b_bf16},
    {"sizing: Llama-3.1-8B KV 131072 B/token, 1 GiB per 8k sequence, peak, int4/fp8", kv_llama_8b},
    {"sizing: training state AdamW 126e9, 8-bit 84e9, SGD 98e9, activations", training_state},
    {"sizing: per-GPU fit from driver MiB, reserve, parallelism, formats", gpu_fit},
    {"sizing: JSON answer shape", sizing_json_shape},
    {"brief: metric per kind, training section, integral params, peak, percentile", brief_rules},
    {"stack: dotted version comparison", versions},
    {"stack: image pinned by digest, names, injection", images},
    {"stack: CUDA vs driver: ok, minor-compat warning, incompatible, unknown", cuda_driver},
    UNIT_END,
};
