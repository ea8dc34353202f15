/* metrics.c — lock-free counters (C11 atomics) indexed by route label, method and status. */
#include "api/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/ratelimit.h"
#include "api/routes.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/utf8.h"
#include "db/db.h"
#include "db/gpu_metrics.h"
#include "service/events_hub.h"
#include "service/rollups.h"
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
static atomic_uint_fast64_t renders;

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

/* ---- GPU health (the monitor's latest readings and events, db/gpu_metrics.h) ---- */

/* Names in labels are at most 128 characters (512 bytes): the buffer holds them whole. */
void api_metrics_label_value(struct sbuf *b, const char *v)
{
    char clean[1024];
    utf8_clean(v, v ? strlen(v) : 0, clean, sizeof clean);
    for (const char *p = clean; *p;) {
        size_t n = strcspn(p, "\\\"\n");
        sbuf_add(b, p, n);
        p += n;
        if (*p == '\0')
            break;
        sbuf_add(b, *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", 2);
        p++;
    }
}

static void label(struct sbuf *b, const char *name, const char *v, int first)
{
    sbuf_printf(b, "%s%s=\"", first ? "" : ",", name);
    api_metrics_label_value(b, v);
    sbuf_add(b, "\"", 1);
}

static void family(struct sbuf *b, const char *name, const char *type, const char *help)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One reading as a gauge family: value * scale, for GPUs whose reading is current. */
struct reading_family {
    enum db_gpu_reading reading;
    const char *name, *help;
    double scale;
};

static const struct reading_family reading_families[] = {
    {DB_GPU_UTIL_GPU, "gpufleet_gpu_utilization_ratio",
     "Fraction of the last sample period during which a kernel ran on the GPU "
     "(nvidia-smi utilization.gpu / 100).",
     0.01},
    {DB_GPU_UTIL_MEM, "gpufleet_gpu_memory_utilization_ratio",
     "Fraction of the last sample period during which device memory was read or written "
     "(nvidia-smi utilization.memory / 100).",
     0.01},
    {DB_GPU_MEM_USED_MIB, "gpufleet_gpu_memory_used_bytes",
     "Device memory in use (nvidia-smi memory.used).", 1048576.0},
    {DB_GPU_MEM_TOTAL_MIB, "gpufleet_gpu_memory_total_bytes",
     "Device memory in all (nvidia-smi memory.total).", 1048576.0},
    {DB_GPU_TEMP_C, "gpufleet_gpu_temperature_celsius",
     "GPU core temperature (nvidia-smi temperature.gpu).", 1.0},
    {DB_GPU_POWER_W, "gpufleet_gpu_power_draw_watts", "Power draw (nvidia-smi power.draw).", 1.0},
    {DB_GPU_ECC_UNCORR, "gpufleet_gpu_ecc_uncorrected_volatile_errors",
     "Uncorrected ECC errors since the driver last loaded (nvidia-smi "
     "ecc.errors.uncorrected.volatile.total; a driver reload resets it).",
     1.0},
    {DB_GPU_RETIRED_PEND, "gpufleet_gpu_retired_pages_pending",
     "1 when a page retirement waits for a GPU reset (nvidia-smi retired_pages.pending).", 1.0},
    {DB_GPU_REMAP_PEND, "gpufleet_gpu_remapped_rows_pending",
     "1 when a row remapping waits for a GPU reset (nvidia-smi remapped_rows.pending).", 1.0},
    {DB_GPU_REMAP_FAILURE, "gpufleet_gpu_remapped_rows_failure",
     "1 when row remapping failed: the GPU needs service (nvidia-smi remapped_rows.failure).", 1.0},
};
#define NREADING_FAMILIES (sizeof reading_families / sizeof reading_families[0])

/* One line of a per-GPU family: name{host,pool,gpu_uuid of GPU i} value (a hot loop at
 * 10,000 GPUs: no format string but the value's). */
static void gpu_line(struct sbuf *b, const char *name, const struct sbuf *lab, const size_t *off,
                     size_t i, const char *value)
{
    sbuf_adds(b, name);
    sbuf_add(b, "{", 1);
    sbuf_add(b, lab->p + off[i], off[i + 1] - off[i]);
    sbuf_add(b, "} ", 2);
    sbuf_adds(b, value);
    sbuf_add(b, "\n", 1);
}

static void gpu_readings(struct sbuf *b, const struct db_gpu_metrics *m, const struct sbuf *lab,
                         const size_t *off)
{
    for (size_t f = 0; f < NREADING_FAMILIES; f++) {
        const struct reading_family *rf = &reading_families[f];
        family(b, rf->name, "gauge", rf->help);
        for (size_t i = 0; i < m->ngpus; i++) {
            double v = m->gpus[i].reading[rf->reading];
            if (!isfinite(v)) /* not read, not current, or not a number: no line */
                continue;
            char value[40];
            snprintf(value, sizeof value, "%.15g", v * rf->scale);
            gpu_line(b, rf->name, lab, off, i, value);
        }
    }
}

static void gpu_state(struct sbuf *b, const struct db_gpu_metrics *m, const struct sbuf *lab,
                      const size_t *off)
{
    family(b, "gpufleet_gpu_info", "gauge",
           "Each GPU of a watched host, with its index, product name and PCI address "
           "(always 1).");
    for (size_t i = 0; i < m->ngpus; i++) {
        const struct db_gpu_metric *g = &m->gpus[i];
        char index[24] = "";
        if (g->index >= 0)
            snprintf(index, sizeof index, "%ld", g->index);
        sbuf_adds(b, "gpufleet_gpu_info{");
        sbuf_add(b, lab->p + off[i], off[i + 1] - off[i]);
        label(b, "gpu_index", index, 0);
        label(b, "model_name", g->model, 0);
        label(b, "pci_bus_id", g->pci_bus_id, 0);
        sbuf_adds(b, "} 1\n");
    }
    family(b, "gpufleet_gpu_missing", "gauge",
           "1 when the newest sample of the GPU's host did not list it (fallen off the bus, "
           "removed), else 0.");
    for (size_t i = 0; i < m->ngpus; i++)
        gpu_line(b, "gpufleet_gpu_missing", lab, off, i, m->gpus[i].missing ? "1" : "0");
    family(b, "gpufleet_gpu_last_seen_timestamp_seconds", "gauge",
           "Unix time of the newest sample that listed the GPU.");
    for (size_t i = 0; i < m->ngpus; i++) {
        char value[40];
        if (!isfinite(m->gpus[i].last_seen))
            continue;
        snprintf(value, sizeof value, "%.3f", m->gpus[i].last_seen);
        gpu_line(b, "gpufleet_gpu_last_seen_timestamp_seconds", lab, off, i, value);
    }
}

static void gpu_events(struct sbuf *b, const struct db_gpu_metrics *m)
{
    family(b, "gpufleet_gpu_events_total", "counter",
           "GPU health events recorded by the monitor (Xid, SXid, fell_off_bus, ecc, remap, "
           "fabric, thermal, gpu_missing, container_runtime, unreachable), by host, pool, GPU "
           "(empty: the host as a whole), kind, code (the Xid or SXid number) and category: "
           "every occurrence, open or closed.");
    for (size_t i = 0; i < m->nevents; i++) {
        const struct db_gpu_event_count *e = &m->events[i];
        if (e->total < 0)
            continue;
        char code[24] = "";
        if (e->code >= 0)
            snprintf(code, sizeof code, "%ld", e->code);
        sbuf_adds(b, "gpufleet_gpu_events_total{");
        label(b, "host", e->host, 1);
        label(b, "pool", e->pool, 0);
        label(b, "gpu_uuid", e->gpu_uuid, 0);
        label(b, "kind", e->kind, 0);
        label(b, "code", code, 0);
        label(b, "category", e->category, 0);
        sbuf_printf(b, "} %lld\n", e->total);
    }
}

static void monitor_hosts(struct sbuf *b, const struct db_gpu_metrics *m)
{
    family(b, "gpufleet_host_last_sample_timestamp_seconds", "gauge",
           "Unix time of the newest stored monitor sample of each watched host (no line: "
           "never sampled).");
    for (size_t i = 0; i < m->nhosts; i++) {
        if (!isfinite(m->hosts[i].last_sample_at))
            continue;
        sbuf_adds(b, "gpufleet_host_last_sample_timestamp_seconds{");
        label(b, "host", m->hosts[i].host, 1);
        label(b, "pool", m->hosts[i].pool, 0);
        sbuf_printf(b, "} %.3f\n", m->hosts[i].last_sample_at);
    }
    family(b, "gpufleet_monitor_hosts", "gauge",
           "Hosts the health monitor watches, by host state and monitor state (the host's "
           "health summary: ok, degraded, critical, unreachable, or unknown before its first "
           "sample).");
    for (size_t i = 0; i < m->nstates; i++) {
        if (m->states[i].hosts < 0)
            continue;
        sbuf_adds(b, "gpufleet_monitor_hosts{");
        label(b, "host_state", m->states[i].state, 1);
        label(b, "monitor_state", m->states[i].monitor_state, 0);
        sbuf_printf(b, "} %ld\n", m->states[i].hosts);
    }
}

/* The GPU health families, read in one go before anything is rendered (so that the
 * output buffer is sized once: about 20 MB at 10,000 GPUs). When the read fails, none of
 * them (they are unknown, not zero) and gpufleet_gpu_metrics_up 0. */
struct gpu_health {
    struct db_gpu_metrics m;
    struct sbuf lab; /* host, pool and gpu_uuid of GPU i, escaped: off[i] .. off[i + 1] */
    size_t *off;
    int ok;
};

static void gpu_health_read(struct gpu_health *h)
{
    enum db_status s = db_gpu_metrics_read(&h->m);
    if (s < 0)
        log_msg(LOG_WARN,
                "metrics: GPU health read failed (database status %d): left out of "
                "this scrape, gpufleet_gpu_metrics_up 0",
                (int)s);
    sbuf_init(&h->lab, 64 + h->m.ngpus * 128);
    h->off = calloc(h->m.ngpus + 1, sizeof *h->off);
    h->ok = s >= 0 && h->off != NULL;
    if (!h->ok)
        return;
    for (size_t i = 0; i < h->m.ngpus; i++) {
        h->off[i] = h->lab.len;
        label(&h->lab, "host", h->m.gpus[i].host, 1);
        label(&h->lab, "pool", h->m.gpus[i].pool, 0);
        label(&h->lab, "gpu_uuid", h->m.gpus[i].uuid, 0);
    }
    h->off[h->m.ngpus] = h->lab.len;
    h->ok = !h->lab.failed;
}

/* Bytes the families will take, roughly (a per-GPU line: its labels, a name, a value). */
static size_t gpu_health_size(const struct gpu_health *h)
{
    if (!h->ok)
        return 0;
    size_t lines = NREADING_FAMILIES + 3;
    return 8192 + lines * (h->lab.len + h->m.ngpus * 64) + h->m.ngpus * 128 + h->m.nevents * 320 +
           h->m.nhosts * 192;
}

/* Renders the families (out failing fails the whole scrape) and frees what h holds. */
static void gpu_health_render(struct sbuf *out, struct gpu_health *h)
{
    if (h->ok) {
        gpu_readings(out, &h->m, &h->lab, h->off);
        gpu_state(out, &h->m, &h->lab, h->off);
        gpu_events(out, &h->m);
        monitor_hosts(out, &h->m);
    }
    family(out, "gpufleet_gpu_metrics_up", "gauge",
           "1 when the GPU health families (gpufleet_gpu_*, gpufleet_host_last_sample_*, "
           "gpufleet_monitor_hosts) were read from the database for this scrape; 0 when the "
           "read failed, and they are absent.");
    sbuf_printf(out, "gpufleet_gpu_metrics_up %d\n", h->ok ? 1 : 0);
    free(h->off);
    free(h->lab.p);
    db_gpu_metrics_free(&h->m);
}

/* gpufleet_http_requests_total: by route template, method and status. */
static void http_requests(struct sbuf *b)
{
    sbuf_printf(b, "# HELP gpufleet_http_requests_total HTTP requests by route template, method "
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
                        b,
                        "gpufleet_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"}"
                        " %llu\n",
                        route_label(r), methods[m], statuses[s], (unsigned long long)v);
                else
                    sbuf_printf(b,
                                "gpufleet_http_requests_total{route=\"%s\",method=\"%s\",status="
                                "\"other\"} %llu\n",
                                route_label(r), methods[m], (unsigned long long)v);
            }
    }
}

/* gpufleet_http_request_duration_seconds: the histogram by route and method. */
static void http_durations(struct sbuf *b)
{
    sbuf_printf(b, "# HELP gpufleet_http_request_duration_seconds Time from the first byte of the "
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
                    b,
                    "gpufleet_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                    "le=\"%g\"} %llu\n",
                    route_label(r), methods[m], buckets[k], (unsigned long long)cum);
            }
            sbuf_printf(b,
                        "gpufleet_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                        "le=\"+Inf\"} %llu\n",
                        route_label(r), methods[m], (unsigned long long)total);
            sbuf_printf(
                b, "gpufleet_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n",
                route_label(r), methods[m], (double)atomic_load(&hist_sum_us[r][m]) / 1e6);
            sbuf_printf(b,
                        "gpufleet_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} "
                        "%llu\n",
                        route_label(r), methods[m], (unsigned long long)total);
        }
    }
}

/* gpufleet_db_pool_*: the connection pool. */
static void pool_metrics(struct sbuf *b)
{
    struct db_pool_stats ps;
    db_pool_stats(&ps);
    sbuf_printf(b,
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
}

int api_metrics_render(char **out, size_t *len)
{
    if (started_at == 0)
        started_at = (int64_t)time(NULL);
    struct gpu_health gpu;
    gpu_health_read(&gpu);
    struct sbuf b;
    sbuf_init(&b, 16384 + gpu_health_size(&gpu));
    sbuf_printf(&b,
                "# HELP gpufleet_build_info Build information.\n"
                "# TYPE gpufleet_build_info gauge\n"
                "gpufleet_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                GPUFLEET_VERSION, GPUFLEET_COMMIT);
    http_requests(&b);
    http_durations(&b);
    pool_metrics(&b);
    ev_hub_metrics(&b);
    svc_webhooks_metrics(&b);
    svc_rollups_metrics(&b);
    process_metrics(&b);
    api_rl_metrics(&b);
    sbuf_printf(&b,
                "# HELP gpufleet_metrics_renders_total Renders of this text (a scrape within "
                "GPUFLEET_METRICS_CACHE_SECONDS of the last render is served that render).\n"
                "# TYPE gpufleet_metrics_renders_total counter\n"
                "gpufleet_metrics_renders_total %llu\n",
                (unsigned long long)atomic_fetch_add(&renders, 1) + 1);
    gpu_health_render(&b, &gpu);
    *out = sbuf_take(&b, len);
    return *out ? 0 : -1;
}
