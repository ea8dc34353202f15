/* work_reports.h — POST /v1/work-reports (batched, idempotent, atomic) and the list. */
#ifndef GPUFLEET_API_WORK_REPORTS_H
#define GPUFLEET_API_WORK_REPORTS_H

#include "api/http.h"

#define WR_MAX_RECORDS  1000
#define WR_MAX_WINDOW_S 86400

/* Whether reporter tokens without a scope (no pools/hosts claim, or an unscoped role-map
 * entry) may post reports (GPUFLEET_ALLOW_UNSCOPED_REPORTERS; default no: 403
 * reporter_scope_required). A scoped reporter's batch naming a host outside its pools and
 * hosts is refused whole: 403 host_out_of_scope. Operators and admins are not scoped. */
void api_work_reports_configure(int allow_unscoped_reporters);
enum MHD_Result api_work_reports_create(struct api_req *r);
enum MHD_Result api_work_reports_list(struct api_req *r);

#endif
