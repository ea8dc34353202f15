/* health.h — the health monitor's read API: a host's health, the GPUs, a GPU's events and
 * a host's samples (migrations/0014; writes are the monitor's, db/monitor.h). */
#ifndef GPUFLEET_API_HEALTH_H
#define GPUFLEET_API_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "api/http.h"
#include "db/monitor.h"

/* The most points one GPU's series may hold in a samples answer. */
#define API_SAMPLES_MAX_POINTS 720
/* Raw points are counted at the shortest monitor interval, one per 10 s. */
#define API_SAMPLES_RAW_SECONDS 10

/* A GPU UUID as nvidia-smi prints it: "GPU-" and 4 to 75 hex digits and dashes. */
int api_valid_gpu_uuid(const char *s);

/* The range and grain of a samples request. from, to and step are the query values (NULL
 * when absent; from and to already checked as RFC 3339): to defaults to now, from to one
 * hour before to; step raw, 5m or 1h, or auto / absent: the finest grain whose series fit
 * API_SAMPLES_MAX_POINTS. Returns 0; or -1 with *field the parameter to blame and a
 * sentence in detail (from not before to, a range or step with too many points). */
struct api_samples_plan {
    int64_t from_us, to_us;
    enum db_monitor_grain grain;
    long points; /* the most points per GPU series */
};
int api_samples_plan(const char *from, const char *to, const char *step, int64_t now_us,
                     struct api_samples_plan *out, const char **field, char *detail,
                     size_t detail_len);

enum MHD_Result api_hosts_health(struct api_req *r);
enum MHD_Result api_hosts_samples(struct api_req *r);
enum MHD_Result api_gpus_list(struct api_req *r);
enum MHD_Result api_gpus_events(struct api_req *r);

#endif
