/* metrics_serve.c — GET /metrics: the optional bearer token (GPUFLEET_METRICS_TOKEN_FILE)
 * and the rendered body kept for GPUFLEET_METRICS_CACHE_SECONDS. A render reads the GPU
 * health from PostgreSQL and may be ~20 MB at 10,000 GPUs, so it happens at most once per
 * period whatever the scrape rate, and scrapes that arrive while one runs wait for it and
 * share its body (single flight). A body is reference-counted: the cache holds one
 * reference, each response in flight another. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/metrics.h"
#include "api/ratelimit.h"
#include "api/service.h"
#include "common/util.h"

struct body {
    atomic_int refs;
    size_t len;
    int64_t at_us; /* when the render finished (monotonic) */
    char data[];
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t done;
    struct body *cur;      /* the newest body (NULL: none yet, or the last render failed) */
    int rendering;         /* a render is running (outside the lock) */
    uint64_t generation;   /* renders finished, successful or not */
    int64_t cache_us;      /* 0: every scrape renders (concurrent ones still share) */
    char token_sha256[65]; /* "" when /metrics asks for no token */
} mc = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, ""};

void api_metrics_configure(const char *token_sha256, int cache_s)
{
    pthread_mutex_lock(&mc.mu);
    snprintf(mc.token_sha256, sizeof mc.token_sha256, "%s", token_sha256 ? token_sha256 : "");
    mc.cache_us = (int64_t)cache_s * 1000000;
    pthread_mutex_unlock(&mc.mu);
}

static void body_unref(void *cls)
{
    struct body *b = cls;
    if (b != NULL && atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

void api_metrics_shutdown(void)
{
    pthread_mutex_lock(&mc.mu);
    struct body *b = mc.cur;
    mc.cur = NULL;
    pthread_mutex_unlock(&mc.mu);
    body_unref(b);
}

static struct body *render(void)
{
    char *text = NULL;
    size_t len = 0;
    if (api_metrics_render(&text, &len) != 0)
        return NULL;
    struct body *b = malloc(sizeof *b + len);
    if (b != NULL) {
        atomic_init(&b->refs, 1);
        b->len = len;
        memcpy(b->data, text, len);
        b->at_us = util_mono_us();
    }
    free(text);
    return b;
}

/* The body to send, with a reference for the caller; NULL when the render failed. */
static struct body *current_body(void)
{
    pthread_mutex_lock(&mc.mu);
    struct body *b = mc.cur;
    if (b != NULL && util_mono_us() - b->at_us < mc.cache_us)
        goto share;
    if (mc.rendering) { /* another scrape renders: wait for its body */
        uint64_t gen = mc.generation;
        while (mc.rendering && mc.generation == gen)
            pthread_cond_wait(&mc.done, &mc.mu);
        b = mc.cur;
        goto share;
    }
    mc.rendering = 1;
    pthread_mutex_unlock(&mc.mu);
    struct body *fresh = render();
    pthread_mutex_lock(&mc.mu);
    struct body *old = mc.cur;
    mc.cur = fresh; /* the cache's reference */
    mc.rendering = 0;
    mc.generation++;
    pthread_cond_broadcast(&mc.done);
    b = fresh;
    if (b != NULL)
        atomic_fetch_add(&b->refs, 1); /* the caller's */
    pthread_mutex_unlock(&mc.mu);
    body_unref(old);
    return b;
share:
    if (b != NULL)
        atomic_fetch_add(&b->refs, 1);
    pthread_mutex_unlock(&mc.mu);
    return b;
}

/* 1 when the request carries the configured token (digests compared in constant time). */
static int token_ok(const char *hdr, const char *want_sha256)
{
    if (hdr == NULL || strncasecmp(hdr, "Bearer ", 7) != 0)
        return 0;
    const char *tok = hdr + 7;
    while (*tok == ' ')
        tok++;
    char got[65];
    util_sha256_hex(tok, strlen(tok), got);
    unsigned char diff = 0;
    for (size_t i = 0; i < 64; i++)
        diff |= (unsigned char)(got[i] ^ want_sha256[i]);
    return diff == 0;
}

enum MHD_Result api_metrics(struct api_req *r)
{
    if (mc.token_sha256[0] != '\0') {
        const char *hdr = api_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!token_ok(hdr, mc.token_sha256)) {
            if (api_rl_auth_failure(r) != 0)
                return MHD_YES; /* 429 queued */
            if (hdr == NULL)
                return api_reply_problem(r, API_ERR_MISSING_TOKEN, NULL,
                                         "/metrics asks for the bearer token of "
                                         "GPUFLEET_METRICS_TOKEN_FILE");
            return api_reply_problem(r, API_ERR_INVALID_TOKEN, NULL,
                                     "this is not the token of GPUFLEET_METRICS_TOKEN_FILE");
        }
    }
    struct body *b = current_body();
    if (b == NULL)
        return api_reply_problem(r, API_ERR_INTERNAL_ERROR, NULL, "cannot render metrics");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(b->len, b->data, body_unref, b);
    if (resp == NULL) {
        body_unref(b);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    return api_queue(r, MHD_HTTP_OK, resp);
}
