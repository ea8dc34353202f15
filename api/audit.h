/* audit.h — GET /v1/audit-events[/{id}] (admin). */
#ifndef GPUFLEET_API_AUDIT_H
#define GPUFLEET_API_AUDIT_H

#include "api/http.h"

enum MHD_Result api_audit_list(struct api_req *r);
enum MHD_Result api_audit_get(struct api_req *r);

#endif
