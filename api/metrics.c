/* metrics.c — lock-free counters (C11 atomics) indexed by route label, method and status. */
#include "api/metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/routes.h"
#include "common/sbuf.h"
#include "db/db.h"
#include "service/events_hub.h"
#include "service/webhooks.h"

static const char *const methods[] = {"GET",    "POST",    "PUT",  "PATCH",
                                      "DELETE", "OPTIONS", "HEAD", "OTHER"};
#define NMETHODS 8
static const unsigned statuses[] = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 409,
                                    412, 413, 414, 415, 422, 428, 429, 500, 503, 0};
#define NSTATUS (sizeof statuses / sizeof statuses[0]) /* last slot: any other */
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])
#define NROUTES  (METRICS_MAX_ROUTES + 1) /* last: unmatched */

static atomic_uint_fast64_t requests[NROUTES][NMETHODS][NSTATUS];
static atomic_uint_fast64_t hist[NROUTES][NMETHODS][NBUCKETS + 1];
static atomic_uint_fast64_t hist_sum_us[NROUTES][NMETHODS];
static int64_t started_at;

int api_metrics_method_index(const char *method)
{
    for (int i = 0; i < NMETHODS - 1; i++)
        if (strcmp(method, methods[i]) == 0)
            return i;
    return NMETHODS - 1;
}

void api_metrics_observe(int route, int method_idx, unsigned status, int64_t duration_us)
{
    int r = (route < 0 || route >= METRICS_MAX_ROUTES) ? METRICS_MAX_ROUTES : route;
    size_t s = 0;
    while (statuses[s] != 0 && statuses[s] != status)
        s++;
    atomic_fetch_add_explicit(&requests[r][method_idx][s], 1, memory_order_relaxed);
    double secs = (double)duration_us / 1e6;
    size_t b = 0;
    while (b < NBUCKETS && secs > buckets[b])
        b++;
    atomic_fetch_add_explicit(&hist[r][method_idx][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hist_sum_us[r][method_idx],
                              (uint64_t)(duration_us > 0 ? duration_us : 0), memory_order_relaxed);
}

static const char *route_label(int r)
{
    return r == METRICS_MAX_ROUTES ? "unmatched" : api_routes[r].path;
}

static void process_metrics(struct sbuf *b)
{
    long rss_pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        long size;
        if (fscanf(f, "%ld %ld", &size, &rss_pages) != 2)
            rss_pages = 0;
        fclose(f);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    sbuf_printf(b,
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                "# TYPE process_resident_memory_bytes gauge\n"
                "process_resident_memory_bytes %ld\n",
                rss_pages * sysconf(_SC_PAGESIZE));
    sbuf_printf(b,
                "# HELP process_cpu_seconds_total Total user and system CPU time in seconds.\n"
                "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.3f\n",
                cpu);
    if (started_at != 0)
        sbuf_printf(b,
                    "# HELP process_start_time_seconds Start time of the process.\n"
                    "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %lld\n",
                    (long long)started_at);
}

int api_metrics_render(char **out, size_t *len)
{
    if (started_at == 0)
        started_at = (int64_t)time(NULL);
    struct sbuf b;
    sbuf_init(&b, 16384);
    sbuf_printf(&b,
                "# HELP gpufleet_build_info Build information.\n"
                "# TYPE gpufleet_build_info gauge\n"
                "gpufleet_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                GPUFLEET_VERSION, GPUFLEET_COMMIT);
    sbuf_printf(&b, "# HELP gpufleet_http_requests_total HTTP requests by route template, method "
                    "and status.\n# TYPE gpufleet_http_requests_total counter\n");
    for (int r = 0; r < NROUTES; r++) {
        if (r < METRICS_MAX_ROUTES && (size_t)r >= api_routes_count)
            continue;
        for (int m = 0; m < NMETHODS; m++)
            for (size_t s = 0; s < NSTATUS; s++) {
                uint64_t v = atomic_load_explicit(&requests[r][m][s], memory_order_relaxed);
                if (v == 0)
                    continue;
                if (statuses[s] != 0)
                    sbuf_printf(
                        &b,
                        "gpufleet_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"}"
                        " %llu\n",
                        route_label(r), methods[m], statuses[s], (unsigned long long)v);
                else
                    sbuf_printf(&b,
                                "gpufleet_http_requests_total{route=\"%s\",method=\"%s\",status="
                                "\"other\"} %llu\n",
                                route_label(r), methods[m], (unsigned long long)v);
            }
    }
    sbuf_printf(&b, "# HELP gpufleet_http_request_duration_seconds Time from the first byte of the "
                    "request to the end of the response.\n"
                    "# TYPE gpufleet_http_request_duration_seconds histogram\n");
    for (int r = 0; r < NROUTES; r++) {
        if (r < METRICS_MAX_ROUTES && (size_t)r >= api_routes_count)
            continue;
        for (int m = 0; m < NMETHODS; m++) {
            uint64_t total = 0;
            for (size_t k = 0; k <= NBUCKETS; k++)
                total += atomic_load_explicit(&hist[r][m][k], memory_order_relaxed);
            if (total == 0)
                continue;
            uint64_t cum = 0;
            for (size_t k = 0; k < NBUCKETS; k++) {
                cum += atomic_load_explicit(&hist[r][m][k], memory_order_relaxed);
                sbuf_printf(
                    &b,
                    "gpufleet_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                    "le=\"%g\"} %llu\n",
                    route_label(r), methods[m], buckets[k], (unsigned long long)cum);
            }
            sbuf_printf(&b,
                        "gpufleet_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                        "le=\"+Inf\"} %llu\n",
                        route_label(r), methods[m], (unsigned long long)total);
            sbuf_printf(
                &b, "gpufleet_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n",
                route_label(r), methods[m], (double)atomic_load(&hist_sum_us[r][m]) / 1e6);
            sbuf_printf(&b,
                        "gpufleet_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} "
                        "%llu\n",
                        route_label(r), methods[m], (unsigned long long)total);
        }
    }
    struct db_pool_stats ps;
    db_pool_stats(&ps);
    sbuf_printf(&b,
                "# HELP gpufleet_db_pool_connections Pool size (connections allowed).\n"
                "# TYPE gpufleet_db_pool_connections gauge\ngpufleet_db_pool_connections %d\n"
                "# HELP gpufleet_db_pool_connected Connections currently open and healthy.\n"
                "# TYPE gpufleet_db_pool_connected gauge\ngpufleet_db_pool_connected %d\n"
                "# HELP gpufleet_db_pool_in_use Connections borrowed right now.\n"
                "# TYPE gpufleet_db_pool_in_use gauge\ngpufleet_db_pool_in_use %d\n"
                "# HELP gpufleet_db_pool_acquires_total Connection borrows.\n"
                "# TYPE gpufleet_db_pool_acquires_total counter\n"
                "gpufleet_db_pool_acquires_total %llu\n"
                "# HELP gpufleet_db_pool_waits_total Borrows that had to wait for a free "
                "connection.\n# TYPE gpufleet_db_pool_waits_total counter\n"
                "gpufleet_db_pool_waits_total %llu\n"
                "# HELP gpufleet_db_pool_wait_seconds_total Time spent waiting for a connection.\n"
                "# TYPE gpufleet_db_pool_wait_seconds_total counter\n"
                "gpufleet_db_pool_wait_seconds_total %.6f\n"
                "# HELP gpufleet_db_pool_timeouts_total Borrows that gave up waiting.\n"
                "# TYPE gpufleet_db_pool_timeouts_total counter\n"
                "gpufleet_db_pool_timeouts_total %llu\n"
                "# HELP gpufleet_db_pool_connect_failures_total Failed connection attempts.\n"
                "# TYPE gpufleet_db_pool_connect_failures_total counter\n"
                "gpufleet_db_pool_connect_failures_total %llu\n",
                ps.size, ps.connected, ps.in_use, (unsigned long long)ps.acquires,
                (unsigned long long)ps.waits, (double)ps.wait_us_total / 1e6,
                (unsigned long long)ps.timeouts, (unsigned long long)ps.connect_failures);
    ev_hub_metrics(&b);
    svc_webhooks_metrics(&b);
    process_metrics(&b);
    *out = sbuf_take(&b, len);
    return *out ? 0 : -1;
}
