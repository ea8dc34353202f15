/* metrics.h — Prometheus counters and histograms for HTTP, plus pool and build info, and
 * the GPU health families the monitor's storage gives (db/gpu_metrics.h). */
#ifndef GPUFLEET_METRICS_H
#define GPUFLEET_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_ROUTES 96

/* Index of a method name in the fixed method list (OTHER for anything else). */
int api_metrics_method_index(const char *method);
/* route: a route table index (the label), or -1 for unmatched paths. */
void api_metrics_observe(int route, int method_idx, unsigned status, int64_t duration_us);
/* metrics_serve.c: the token (its SHA-256 in hex; "" for none) and the cache period;
 * shutdown drops the cached body. */
void api_metrics_configure(const char *token_sha256, int cache_s);
void api_metrics_shutdown(void);
/* Renders the exposition text (and counts it: gpufleet_metrics_renders_total). Caller
 * frees *out. */
int api_metrics_render(char **out, size_t *len);

struct sbuf;
/* Appends v (NULL: "") as a label value: cleaned UTF-8, with backslash, double quote and
 * newline escaped as the text exposition format requires. */
void api_metrics_label_value(struct sbuf *b, const char *v);

#endif
