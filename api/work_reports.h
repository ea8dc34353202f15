/* work_reports.h — POST /v1/work-reports (batched, idempotent, atomic) and the list. */
#ifndef GPUFLEET_API_WORK_REPORTS_H
#define GPUFLEET_API_WORK_REPORTS_H

#include "api/http.h"

#define WR_MAX_RECORDS  1000
#define WR_MAX_WINDOW_S 86400

enum MHD_Result api_work_reports_create(struct api_req *r);
enum MHD_Result api_work_reports_list(struct api_req *r);

#endif
