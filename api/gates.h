/* gates.h — acceptance gates, drain/resume, active diagnostics, gate runs, readiness. */
#ifndef GPUFLEET_API_GATES_H
#define GPUFLEET_API_GATES_H

#include "api/http.h"

enum MHD_Result api_hosts_gate(struct api_req *r);
enum MHD_Result api_hosts_drain(struct api_req *r);
enum MHD_Result api_hosts_resume(struct api_req *r);
enum MHD_Result api_hosts_release(struct api_req *r);
enum MHD_Result api_hosts_diagnostics(struct api_req *r);
enum MHD_Result api_hosts_gate_runs(struct api_req *r);
enum MHD_Result api_hosts_readiness(struct api_req *r);
enum MHD_Result api_gate_runs_list(struct api_req *r);
enum MHD_Result api_gate_runs_get(struct api_req *r);

#endif
